"""``openprogram demo``: record, replay and verify a session offline, touching nothing of yours.

It runs in a temporary folder that is removed afterwards (``--keep DIR`` keeps the files in
``DIR`` instead), on the built-in ``echo`` model: no key, no network, and neither the
configuration nor the recordings store is changed."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import typer

from openprogram.cli.output import EXIT_FAILURE, EXIT_USAGE, abort, plural, reporting_errors, say


def demo(
    keep: str | None = typer.Option(
        None,
        "--keep",
        metavar="DIR",
        help="Keep the demo's files (the recording, the file the tool reads) in DIR.",
    ),
) -> None:
    """Record → replay → verify a session offline, and watch replay catch a drift.

    Uses the built-in echo model in a temporary folder: no key, no network, and your configuration
    and recordings store are left as they are. Exits 1 if any step does not behave as shown."""
    from openprogram.cli.run import LiveDisplay
    from openprogram.harness.demo import Demo

    folder = _demo_folder(keep)
    display = LiveDisplay()
    demo = Demo(folder, on_event=display.show)

    def step(title: str) -> None:
        display.finish()
        say((title, "bold"))

    try:
        with reporting_errors(session=True):
            step("1. Record a tool-using session on the offline echo model:")
            recorded = demo.record()
            step("2. Replay it from the recording (no model is called):")
            replayed = demo.replay()
            step("3. Change the file the tool reads and replay again: replay names the drift.")
            drift = demo.drift()
            display.finish()
            say(drift or "✘ replay did not notice the change")
            step("4. Put the file back and verify: re-run the session under replay, check it all.")
            verified = demo.verify()
    finally:
        display.finish()
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    if verified.ok:
        calls = plural(verified.calls, "call")
        say(f"✔ {calls} replayed and matched; transcript hash {verified.transcript_hash}")
    else:
        say(f"✘ {verified.divergence}")
    where = f"are kept in {folder}" if keep is not None else "were removed"
    say(f"The demo's files {where}; your configuration and recordings were not touched.")
    if replayed.final.text != recorded.final.text or drift is None or not verified.ok:
        raise typer.Exit(EXIT_FAILURE)


def _demo_folder(keep: str | None) -> Path:
    if keep is None:
        return Path(tempfile.mkdtemp(prefix="openprogram-demo-"))
    folder = Path(keep).absolute()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        empty = not any(folder.iterdir())
    except OSError as error:
        abort(f"--keep {keep}: cannot use it as a folder ({error.strerror or error})", EXIT_USAGE)
    if not empty:
        abort(f"--keep {keep}: the folder is not empty; choose an empty or new folder", EXIT_USAGE)
    return folder


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
