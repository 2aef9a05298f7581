"""``openprogram recordings delete NAME``: delete one inactive recording from the store."""

from __future__ import annotations

import typer

from openprogram.cli.output import confirm_or_abort, reporting_errors, say
from openprogram.errors import RecordingNameError, RecordingNotFoundError


def delete(
    recording: str = typer.Argument(..., help="The recording's name (see `recordings list`)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask to confirm."),
) -> None:
    """Delete a recording. Refuses the active one, symlinks, and anything outside the store."""
    from openprogram.config.paths import recordings_dir
    from openprogram.config.settings import protected_recordings
    from openprogram.store.store import check_deletable, delete_recording

    store = recordings_dir()
    usage = (RecordingNameError, RecordingNotFoundError)
    with reporting_errors(usage_errors=usage):
        active = protected_recordings()  # what a broken configuration names is kept too
        path = check_deletable(store, recording, active=active)  # refuse before asking
    confirm_or_abort(f"Delete {path}?", yes=yes)
    with reporting_errors(usage_errors=usage):
        deleted = delete_recording(store, recording, active=active)
    say(f"Deleted {deleted}")


def register(app: typer.Typer) -> None:
    app.command("delete")(delete)
