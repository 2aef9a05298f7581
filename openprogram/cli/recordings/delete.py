"""``openprogram recordings delete NAME|PATH``: delete one inactive recording in the store."""

from __future__ import annotations

import typer

from openprogram.cli.output import reporting_errors, stdout
from openprogram.cli.recordings.confirming import confirm_or_abort


def delete(
    recording: str = typer.Argument(..., help="The recording's name (see `recordings list`)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask to confirm."),
) -> None:
    """Delete a recording. Refuses the active one, symlinks, and anything outside the store."""
    from openprogram.config.paths import recordings_dir
    from openprogram.recordings.names import (
        RecordingNameError,
        is_path_argument,
        resolve_recording,
    )
    from openprogram.recordings.status import active_recording
    from openprogram.recordings.store import RecordingNotFoundError, delete_recording

    store = recordings_dir()
    with reporting_errors(usage_errors=(RecordingNameError, RecordingNotFoundError)):
        if is_path_argument(recording):
            delete_recording(store, recording, active=None)  # refuses a path, with the reason
        path = resolve_recording(recording, store).path
        if not path.exists():
            raise RecordingNotFoundError(path, recording)
    confirm_or_abort(f"Delete {path}?", yes=yes)
    with reporting_errors(usage_errors=(RecordingNameError, RecordingNotFoundError)):
        deleted = delete_recording(store, recording, active=active_recording())
    stdout().print(f"Deleted {deleted}")


def register(app: typer.Typer) -> None:
    app.command("delete")(delete)
