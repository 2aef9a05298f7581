"""``openprogram recordings replay NAME|PATH``: check a recording and switch to replay."""

from __future__ import annotations

import typer

from openprogram.cli.output import plural, print_json, reporting_errors, say
from openprogram.cli.recordings.switching import describe_change, usage_errors, warn_about_overrides


def replay(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    as_json: bool = typer.Option(False, "--json", help="Print the change as JSON."),
) -> None:
    """Validate the recording, then set mode=replay (from the next start)."""
    from openprogram.store.switch import start_replay

    with reporting_errors(usage_errors=usage_errors()):
        change = start_replay(recording)
    if as_json:
        print_json(describe_change(change))
        return
    say(f"Replaying {change.recording} ({plural(change.calls, 'call')})")
    say(
        "Mode is now replay: the next process that starts gets its provider calls from it, offline."
    )
    warn_about_overrides(change)


def register(app: typer.Typer) -> None:
    app.command("replay")(replay)
