"""``openprogram recordings scan [PATH...]``: the secrets recordings still hold, one line
each; ``--fix`` replaces them in place."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    abort,
    complain,
    plural,
    print_json,
    say,
)
from openprogram.errors import RecordingNameError, UserRedactionError

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction


PATHS = typer.Argument(
    None,
    metavar="PATH",
    help="Recordings, folders of recordings, or names in the store "
    "(default: tests/recordings when it exists, else the store).",
    show_default=False,
)


REDACTOR = typer.Option(
    None,
    "--redactor",
    metavar="MODULE:ATTR",
    help="Your redaction function (str -> str), as your tests register it.",
)


def scan(
    paths: list[str] | None = PATHS,
    fix: bool = typer.Option(
        False, "--fix", help="Replace every finding in place (atomically); the recording replays."
    ),
    redactor: str | None = REDACTOR,
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
) -> None:
    """Find secrets left in recordings: credentials of every shape openprogram removes
    (GitHub, AWS, Slack and Google tokens, JWTs, private keys, password=... assignments,
    API keys), the values of this shell's credential variables, and your own
    record_replay.redact_patterns — also where a model streamed one cut across deltas.

    Prints `FILE:LINE: call N, field PATH: KIND` for each. Exits 0 when nothing is found,
    1 when something is (also after --fix replaced it, so a pre-commit hook stops the
    commit until the fixed files are added), 2 when a recording, the configuration or
    --redactor cannot be used."""
    from openprogram.config.paths import recordings_dir
    from openprogram.store.scan import scan_recordings, scan_targets

    user = configured_user_redaction(redactor)
    try:
        targets = scan_targets(list(paths or []), cwd=Path.cwd(), store=recordings_dir())
    except RecordingNameError as error:
        abort(error, EXIT_USAGE)
    report = scan_recordings(targets, user=user, fix=fix)
    for unreadable in report.unreadable:
        complain(str(unreadable))
    if as_json:
        print_json(report.to_json())
    else:
        for finding in report.findings:
            say(str(finding))
        scanned = len(targets) - len(report.unreadable)
        _summary(scanned, len(report.findings), fixed=report.fixed)
    if report.unreadable:
        raise typer.Exit(EXIT_USAGE)
    if report.findings:
        raise typer.Exit(EXIT_FAILURE)


def configured_user_redaction(spec: str | None) -> UserRedaction | None:
    """The configuration's patterns and ``--redactor``; exit 2 when either is unusable."""
    from openprogram.config.settings import load_config
    from openprogram.recording.redaction import remember_secret_variable
    from openprogram.recording.user_redaction import load_redactor, user_redaction_in_effect

    loaded = load_config()
    if loaded.error is not None:
        abort(loaded.error, EXIT_USAGE)
    assert loaded.settings is not None
    # The keys of the configured providers are known secrets, whatever their variables'
    # names (``api_key_env = "GPU_BOX_KEY"``), as they are when recording.
    for provider in loaded.settings.providers.values():
        if provider.api_key_env:
            remember_secret_variable(provider.api_key_env)
    try:
        function = None if spec is None else load_redactor(spec)
        return user_redaction_in_effect(
            patterns=loaded.settings.record_replay.redact_patterns,
            redact=function,
            redact_name=spec,
        )
    except UserRedactionError as error:
        abort(error, EXIT_USAGE)


def _summary(scanned: int, found: int, *, fixed: int) -> None:
    recordings = plural(scanned, "recording")
    if not found:
        say(f"✔ no secrets in {recordings}")
    elif fixed:
        say(f"✔ replaced {plural(fixed, 'secret')} in {recordings}: add the fixed files")
    else:
        say(f"✘ {plural(found, 'secret')} in {recordings}: `--fix` replaces them")


def register(app: typer.Typer) -> None:
    app.command("scan")(scan)
