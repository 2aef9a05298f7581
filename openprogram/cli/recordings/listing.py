"""``openprogram recordings list``: the recordings in the store, newest first."""

from __future__ import annotations

import typer

from openprogram.cli.output import print_json, print_lines, reporting_errors, say, stdout


def list_recordings(
    as_json: bool = typer.Option(False, "--json", help="Print the recordings as JSON."),
) -> None:
    """List recordings: name, created, calls, size, models, state, hash; `*` marks the active
    one. A table when it fits the width, else two lines per recording."""
    from openprogram.config.paths import recordings_dir
    from openprogram.config.settings import active_recording
    from openprogram.store.names import is_same_file, recording_files

    with reporting_errors():
        store = recordings_dir()
        summaries = []
        files = recording_files(store)
        if files:  # an empty store is listed without loading the reader
            from openprogram.store.summary_cache import summarize_store

            summaries = summarize_store(store, files)
        active = active_recording()
    if as_json:
        print_json(
            [
                {**summary.to_json(), "active": is_same_file(summary.path, active)}
                for summary in summaries
            ]
        )
        return
    if not summaries:
        say(f"No recordings in {store}. Start one with `openprogram recordings record`.")
        return
    from openprogram.cli.recordings.list_layout import ListedRecording, lay_out

    listed = [
        ListedRecording.of(summary, active=is_same_file(summary.path, active))
        for summary in summaries
    ]
    print_lines(lay_out(listed, stdout().width))  # literal text: names hold brackets


def register(app: typer.Typer) -> None:
    app.command("list")(list_recordings)
