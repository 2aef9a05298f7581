"""``openprogram recordings record [NAME]``: create a recording and switch to record."""

from __future__ import annotations

import typer

from openprogram.cli.output import print_json, reporting_errors, say
from openprogram.cli.recordings.switching import describe_change, usage_errors, warn_about_overrides


def record(
    name: str | None = typer.Argument(
        None, help="Name for the new recording (default: rec-YYYYMMDD-HHMMSS)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the change as JSON."),
) -> None:
    """Create a new recording in the store and set mode=record (from the next start)."""
    from openprogram.store.switch import start_recording

    with reporting_errors(usage_errors=usage_errors()):
        change = start_recording(name)
    if as_json:
        print_json(describe_change(change))
        return
    assert change.recording is not None
    say(f"Created recording {change.name!r} at {change.recording}")
    say("Mode is now record: the next process that starts records its provider calls into it.")
    warn_about_overrides(change)


def register(app: typer.Typer) -> None:
    app.command("record")(record)
