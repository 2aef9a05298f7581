"""One of a thing is said in the singular, in every command's output."""

from __future__ import annotations

from openprogram.config.paths import recordings_dir
from openprogram.recording.format import new_header
from tests.support.cli_runner import error_line, run
from tests.support.recording_rows import Row, request, write_recording, write_rows


def test_prune_asks_about_one_recording() -> None:
    write_recording("old", calls=1, created_at="2020-01-01T00:00:00Z")
    write_recording("new", calls=1, created_at="2026-01-01T00:00:00Z")

    result = run("prune", "--keep", "1")  # not a terminal: the question becomes the error

    assert result.exit_code == 2
    assert f"Delete 1 recording from {recordings_dir()}: not a terminal" in error_line(result)


def test_show_counts_one_event_of_a_call_cut_short() -> None:
    start: Row = {"type": "start", "api": "fake", "provider": "fake", "model": "m1"}
    rows: list[Row] = [
        new_header("cut"),
        request(0),
        {"type": "event", "call_index": 0, "event_index": 0, "event": start},
    ]
    write_rows(recordings_dir() / "cut.jsonl", rows)

    result = run("show", "cut")

    assert result.exit_code == 0, result.output
    assert "TRUNCATED after 1 event" in result.stdout
    assert "1 events" not in result.stdout


def test_status_says_one_call() -> None:
    write_recording("one", calls=1)
    assert run("replay", "one").exit_code == 0

    assert "(valid, 1 call, format 2)" in run("status").stdout
