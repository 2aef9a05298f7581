"""``openprogram recordings verify NAME|PATH``: re-run a recorded session under replay."""

from __future__ import annotations

import typer

from openprogram.cli.output import EXIT_FAILURE, plural, print_json, reporting_errors, say


def verify(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    tools: str | None = typer.Option(
        None,
        "--tools",
        metavar="MODULE:ATTR",
        help="The session's own tools: an AgentTool, a list of them, or a function returning one.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Re-run the recorded session through the current agent loop, offline.

    Prints ✔ and the transcript hash when every call matches and is consumed; otherwise
    the first divergence and exit 1. Exit 2 when the recording or --tools cannot be used.
    """
    from openprogram.config.paths import recordings_dir
    from openprogram.errors import RecordingFileError
    from openprogram.harness.verification import VerifySetupError, verify_recording
    from openprogram.recordings.names import RecordingNameError, resolve_recording

    with reporting_errors(usage_errors=(RecordingNameError, RecordingFileError, VerifySetupError)):
        path = resolve_recording(recording, recordings_dir()).path
        result = verify_recording(path, tools=tools)
    if as_json:
        print_json(result.to_json())
    elif result.ok:
        say(f"✔ {path}: {plural(result.calls, 'call')} replayed and matched")
        say(f"transcript hash: {result.transcript_hash}")
    else:
        say(f"✘ {path}: the session diverged from the recording")
        say(result.divergence or "")
    if not result.ok:
        raise typer.Exit(EXIT_FAILURE)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
