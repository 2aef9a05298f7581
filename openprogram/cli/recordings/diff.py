"""``openprogram recordings diff A B``: the first difference between two recordings."""

from __future__ import annotations

import typer

from openprogram.cli.output import EXIT_FAILURE, print_json, reporting_errors, stdout, visible


def diff(
    first: str = typer.Argument(..., metavar="A", help="A recording name in the store, or a path."),
    second: str = typer.Argument(
        ..., metavar="B", help="A recording name in the store, or a path."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
) -> None:
    """Show where two recordings first differ, their call counts and transcript hashes.

    Exits 0 when they are the same, 1 when they differ, 2 when one cannot be read.
    """
    from openprogram.config.paths import recordings_dir
    from openprogram.errors import RecordingFileError
    from openprogram.providers.recording import read_recording
    from openprogram.recordings.comparison import compare_recordings
    from openprogram.recordings.names import RecordingNameError, resolve_recording

    with reporting_errors(usage_errors=(RecordingNameError, RecordingFileError)):
        store = recordings_dir()
        paths = [resolve_recording(argument, store).path for argument in (first, second)]
        recordings = [read_recording(path, validate_events=False) for path in paths]
        comparison = compare_recordings(*recordings)
    if as_json:
        print_json({"a": str(paths[0]), "b": str(paths[1]), **comparison.to_json()})
    else:
        _render(comparison)
    if not comparison.same:
        raise typer.Exit(EXIT_FAILURE)


def _render(comparison: object) -> None:
    from rich.text import Text

    from openprogram.recording.difference import format_report_path, format_report_value
    from openprogram.recordings.comparison import RecordingComparison
    from openprogram.recordings.difference_view import difference_view

    assert isinstance(comparison, RecordingComparison)
    console = stdout()
    found = comparison.difference
    if found is None:
        console.print(Text("✔ the recordings are the same"))
    else:
        shown = difference_view(found)
        field = "" if shown.field is None else f", field {format_report_path(shown.field)}"
        console.print(Text(visible(f"✘ first difference at {shown.where}{field}:")))
        console.print(Text(visible(f"  A: {format_report_value(shown.a)}")))
        console.print(Text(visible(f"  B: {format_report_value(shown.b)}")))
    console.print(Text(f"calls: A {comparison.calls_a}, B {comparison.calls_b}"))
    console.print(Text(f"hash:  A {comparison.hash_a}"))
    console.print(Text(f"       B {comparison.hash_b}"))


def register(app: typer.Typer) -> None:
    app.command("diff")(diff)
