"""The strict recording reader on call and event indexes and call ends: every index out of
order, missing, repeated or of the wrong type is refused at its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.reader_refusals import assert_refused
from tests.support.recording_rows import (
    Line,
    call_end,
    call_rows,
    event,
    header,
    request,
    text_events,
    write_rows,
)

# --- call and event indexes ----------------------------------------------------------------


def test_duplicate_request_call_index_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), request(0)]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=0, says="duplicate request row for call 0")


def test_skipped_call_index_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), request(2)]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=2, says=["call_index 2 skips ahead", "expected 1"])


def test_first_call_index_must_be_zero(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), request(1)])
    assert_refused(path, line=2, call_index=1, says="expected 0")


@pytest.mark.parametrize("value", [-1, True, False, 0.0, 1.5, "0", None, [0]])
def test_request_call_index_must_be_a_whole_number(tmp_path: Path, value: Any) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), request(value)])
    assert_refused(
        path,
        line=2,
        call_index=None,
        says=f"call_index must be a whole number >= 0, found {value!r}",
    )


def test_request_without_call_index_is_refused(tmp_path: Path) -> None:
    row = request(0)
    del row["call_index"]
    path = write_rows(tmp_path / "r.jsonl", [header(), row])
    assert_refused(path, line=2, call_index=None, says="call_index must be a whole number")


@pytest.mark.parametrize("value", [-1, True, "1", None])
def test_event_call_index_must_be_a_whole_number(tmp_path: Path, value: Any) -> None:
    lines: list[Line] = [header(), request(0), request(1), event(value, 0, {"type": "start"})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="call_index must be a whole number")


@pytest.mark.parametrize("value", [-1, True, 1.0, "0", None])
def test_event_index_must_be_a_whole_number(tmp_path: Path, value: Any) -> None:
    lines: list[Line] = [header(), request(0), event(0, value, {"type": "start"})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(
        path,
        line=3,
        call_index=None,
        says=f"event_index must be a whole number >= 0, found {value!r}",
    )


@pytest.mark.parametrize("section", ["model", "context", "options"])
@pytest.mark.parametrize("value", ["missing", None, [], "x"])
def test_request_sections_must_be_objects(tmp_path: Path, section: str, value: Any) -> None:
    row = request(0)
    if value == "missing":
        del row[section]
    else:
        row[section] = value
    path = write_rows(tmp_path / "r.jsonl", [header(), row])
    assert_refused(path, line=2, call_index=0, says=f"request field {section!r} must be an object")


def test_duplicate_event_index_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [
        header(),
        request(0),
        event(0, 0, {"type": "start"}),
        event(0, 1, {"type": "text_start", "content_index": 0}),
        event(0, 1, {"type": "text_start", "content_index": 0}),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=5, call_index=0, says=["event_index 1 out of order", "expected 2"])


def test_non_contiguous_event_index_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [
        header(),
        request(0),
        event(0, 0, {"type": "start"}),
        event(0, 2, {"type": "text_start", "content_index": 0}),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=0, says=["event_index 2 out of order", "expected 1"])


def test_first_event_index_must_be_zero(tmp_path: Path) -> None:
    lines: list[Line] = [header(), request(0), event(0, 1, {"type": "start"})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=0, says="expected 0")


def test_event_indexes_count_per_call(tmp_path: Path) -> None:
    """Call 1 starts again at event 0; continuing call 0's count is an error."""
    lines: list[Line] = [
        header(),
        *call_rows(0, text_events("hi")),
        request(1),
        event(1, 5, {"type": "start"}),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=10, call_index=1, says=["event_index 5", "expected 0"])


def test_orphan_event_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), event(1, 0, {"type": "start"})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=1, says="event row for a call with no request row")


def test_orphan_event_before_any_request_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), event(0, 0, {"type": "start"})])
    assert_refused(path, line=2, call_index=0, says="event row for a call with no request row")


def test_orphan_call_end_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), call_end(0, 0)])
    assert_refused(path, line=2, call_index=0, says="call_end row for a call with no request row")


def test_event_after_call_end_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), event(0, 5, {"type": "start"})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=0, says="event row after the call's call_end")


def test_call_end_twice_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), call_end(0, 5)]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=0, says="call_end row after the call's call_end")


# --- call_end ------------------------------------------------------------------------------


@pytest.mark.parametrize("count", [4, 6, 0])
def test_call_end_event_count_mismatch_is_refused(tmp_path: Path, count: int) -> None:
    lines: list[Line] = [
        header(),
        *call_rows(0, text_events("hi"), outcome=None),
        call_end(0, count),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(
        path, line=8, call_index=0, says=f"event_count {count} but 5 event rows were recorded"
    )


@pytest.mark.parametrize("count", [True, -1, "5", None, 5.0])
def test_call_end_event_count_must_be_a_whole_number(tmp_path: Path, count: Any) -> None:
    lines: list[Line] = [
        header(),
        *call_rows(0, text_events("hi"), outcome=None),
        call_end(0, count),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=8, call_index=None, says="event_count must be a whole number")


@pytest.mark.parametrize("outcome", ["completed", "ok", "", None, 1, "Complete"])
def test_unknown_outcome_is_refused(tmp_path: Path, outcome: Any) -> None:
    lines: list[Line] = [
        header(),
        *call_rows(0, text_events("hi"), outcome=None),
        call_end(0, 5, outcome),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    error = assert_refused(path, line=8, call_index=0, says=f"outcome {outcome!r} is not one of")
    for known in ("abandoned", "cancelled", "complete", "error"):
        assert known in error.problem


@pytest.mark.parametrize("outcome", [["complete"], {"complete": True}])
def test_unhashable_outcome_is_refused(tmp_path: Path, outcome: Any) -> None:
    lines: list[Line] = [
        header(),
        *call_rows(0, text_events("hi"), outcome=None),
        call_end(0, 5, outcome),
    ]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=8, call_index=0, says="is not one of")


@pytest.mark.parametrize(
    "error",
    [None, "boom", {"type": "RuntimeError"}, {"message": "boom"}, {"type": 1, "message": "m"}],
)
def test_error_outcome_needs_an_error_object(tmp_path: Path, error: Any) -> None:
    end = call_end(0, 1, "error")
    if error is not None:
        end["error"] = error
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": "start"}), end]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=0, says="an error outcome needs error")
