"""``openprogram recordings diff A B``: the differences between two recordings, calls aligned
by content."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import (
    EXIT_FAILURE,
    plural,
    print_json,
    reporting_errors,
    say,
    stdout,
    visible,
)
from openprogram.cli.recordings.show import HTML, write_page
from openprogram.errors import RecordingFileError, RecordingNameError

if TYPE_CHECKING:
    from openprogram.store.comparison import RecordingComparison

SHOWN = 3
"""Differences printed in full; ``--json`` lists them all."""


def diff(
    first: str = typer.Argument(..., metavar="A", help="A recording name in the store, or a path."),
    second: str = typer.Argument(
        ..., metavar="B", help="A recording name in the store, or a path."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print every difference as JSON."),
    html: Path | None = HTML,
) -> None:
    """Show how two recordings differ, their call counts and transcript hashes.

    Calls are paired by their requests, whatever their order: the calls only in A or only
    in B come first, each compared with the nearest unpaired call of the other, then the
    paired calls whose replies differ, then the tape entries (each tape compared as a set of
    entries, clock and random results left out). Exits 0 when they are the same (their hashes are
    equal), 1 when they differ, 2 when one cannot be read."""
    from openprogram.config.paths import recordings_dir
    from openprogram.provider_boundary.codec import read_recording
    from openprogram.store.comparison import compare_recordings
    from openprogram.store.names import resolve_recording

    with reporting_errors(usage_errors=(RecordingNameError, RecordingFileError)):
        store = recordings_dir()
        paths = [resolve_recording(argument, store).path for argument in (first, second)]
        recordings = [read_recording(path, validate_events=html is not None) for path in paths]
        comparison = compare_recordings(*recordings)
        if html is not None:
            from openprogram.store.html_pages import diff_page
            from openprogram.store.show import view_of

            views = [view_of(read, path) for read, path in zip(recordings, paths, strict=True)]
            write_page(
                html, diff_page(views[0], views[1], (recordings[0], recordings[1]), comparison)
            )
    if html is not None and not as_json:
        say(f"the page is {html}")
    if as_json:
        print_json({"a": str(paths[0]), "b": str(paths[1]), **comparison.to_json()})
    else:
        _render(comparison)
    if not comparison.same:
        raise typer.Exit(EXIT_FAILURE)


def _render(comparison: RecordingComparison) -> None:
    from rich.text import Text

    from openprogram.recording import report

    console = stdout()
    if comparison.same:
        console.print(Text("✔ the recordings are the same"))
    else:
        console.print(Text(f"✘ the recordings differ: {_summary(comparison)}"))
        for found in comparison.differences[:SHOWN]:
            console.print(Text(visible(report.format_report(found.difference))))
        hidden = len(comparison.differences) - SHOWN
        if hidden > 0:
            console.print(Text(f"… and {plural(hidden, 'more difference')} (--json lists all)"))
    console.print(Text(f"calls: A {comparison.calls_a}, B {comparison.calls_b}"))
    if comparison.tape_entries_a or comparison.tape_entries_b:
        a, b = comparison.tape_entries_a, comparison.tape_entries_b
        console.print(Text(f"tape entries: A {a}, B {b}"))
    console.print(Text(f"hash:  A {comparison.hash_a}"))
    console.print(Text(f"       B {comparison.hash_b}"))


def _summary(comparison: RecordingComparison) -> str:
    """``1 call only in A, 1 only in B, 2 paired calls whose replies differ``."""
    parts: list[str] = []
    if comparison.only_in_a:
        parts.append(f"{plural(len(comparison.only_in_a), 'call')} only in A")
    if comparison.only_in_b:
        count = len(comparison.only_in_b)
        parts.append(f"{count if parts else plural(count, 'call')} only in B")
    replies = comparison.paired_replies_differing
    if replies:
        whose = "whose reply differs" if replies == 1 else "whose replies differ"
        parts.append(f"{plural(replies, 'paired call')} {whose}")
    entries = comparison.tape_entries_differing
    if entries:
        parts.append(f"{entries} tape {'entry differs' if entries == 1 else 'entries differ'}")
    return ", ".join(parts)


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
