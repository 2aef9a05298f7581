"""``openprogram recordings list``: the recordings in the store, newest first."""

from __future__ import annotations

import typer

from openprogram.cli.output import print_json, reporting_errors, say, stdout


def list_recordings(
    as_json: bool = typer.Option(False, "--json", help="Print the recordings as JSON."),
) -> None:
    """List recordings: name, created, calls, size, models, state; `*` marks the active one."""
    from openprogram.config.paths import recordings_dir
    from openprogram.recordings.hashing import short_hash
    from openprogram.recordings.names import is_same_file
    from openprogram.recordings.status import active_recording
    from openprogram.recordings.summary_cache import summarize_store

    with reporting_errors():
        store = recordings_dir()
        summaries = summarize_store(store)
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
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("", "name", "created", "calls", "size", "models", "state", "hash"):
        table.add_column(
            column,
            justify="right" if column in ("calls", "size") else "left",
            no_wrap=column != "state",  # only a long problem wraps
        )
    for summary in summaries:
        if not summary.valid:
            state = f"INVALID: {summary.problem}"
        else:
            state = "truncated" if summary.truncated else "valid"
        cells = (
            "*" if is_same_file(summary.path, active) else "",
            summary.name,
            (summary.created_at or "?").replace("T", " ").removesuffix("Z"),
            str(summary.calls),
            _size(summary.size),
            ", ".join(summary.models),
            state,
            short_hash(summary.transcript_hash) if summary.transcript_hash else "",
        )
        table.add_row(*(Text(cell) for cell in cells))  # literal text: names hold brackets
    stdout().print(table)


def _size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def register(app: typer.Typer) -> None:
    app.command("list")(list_recordings)
