"""The strict recording reader: what it accepts (a valid recording, its header and version,
each kind of event) and what it refuses, and where it says so.

Recordings are built as JSONL text from the row builders of ``tests.support.recording_rows``,
so every test states the exact lines the reader sees; the replay tests record through the
real recorder instead. The other ``test_reader_*`` files test indexes and call ends, damage,
replay of a truncated recording, and properties over generated recordings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from openprogram.recording.format import (
    RECORDING_FORMAT_VERSION,
    RecordedError,
    Recording,
    encode_row,
    new_header,
)
from tests.support.reader_refusals import assert_refused
from tests.support.recording_rows import (
    Line,
    Row,
    assistant_message,
    call_end,
    call_rows,
    done,
    event,
    header,
    request,
    text_events,
    tool_events,
    two_calls,
    write_rows,
)

# --- a valid recording ---------------------------------------------------------------------


def test_valid_two_call_recording_parses(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "session.jsonl", two_calls())

    recording = read_recording(path)

    assert isinstance(recording, Recording)
    assert recording.path == path
    assert recording.header == header()
    assert recording.format_version == RECORDING_FORMAT_VERSION == 2
    assert recording.truncated_calls == []
    assert recording.event_count == 5 + 8
    first, second = recording.calls
    assert (first.call_index, second.call_index) == (0, 1)
    assert (first.line, second.line) == (2, 2 + 1 + 5 + 1)
    for call, index in ((first, 0), (second, 1)):
        written = request(index)
        assert call.request == {key: written[key] for key in ("model", "context", "options")}
        assert call.outcome == "complete"
        assert call.error is None
        assert not call.truncated
    assert first.event_rows == text_events("hi")
    assert second.event_rows == tool_events()
    assert [type(e) for e in first.events] == [
        StartEvent,
        TextStartEvent,
        TextDeltaEvent,
        TextEndEvent,
        DoneEvent,
    ]
    assert [type(e) for e in second.events] == [
        StartEvent,
        ThinkingStartEvent,
        ThinkingDeltaEvent,
        ThinkingEndEvent,
        ToolCallStartEvent,
        ToolCallDeltaEvent,
        ToolCallEndEvent,
        DoneEvent,
    ]
    last = first.events[-1]
    assert isinstance(last, DoneEvent)
    assert last.message.text == "hi"


def test_header_alone_is_a_recording_with_no_calls(tmp_path: Path) -> None:
    recording = read_recording(write_rows(tmp_path / "r.jsonl", [header()]))
    assert recording.calls == []
    assert recording.truncated_calls == []
    assert recording.event_count == 0


def test_header_written_by_new_header_and_encode_row_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rows = [new_header("r1"), *call_rows(0, text_events("hi"))]
    path.write_bytes(b"".join(encode_row(row) for row in rows))
    recording = read_recording(path)
    assert recording.header["recording_id"] == "r1"
    assert recording.header["format_version"] == RECORDING_FORMAT_VERSION
    assert len(recording.calls) == 1


def test_unknown_header_metadata_is_kept_and_tolerated(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(session_command="pytest -k x", extra=[1])])
    assert read_recording(path).header["session_command"] == "pytest -k x"


@pytest.mark.parametrize("outcome", ["complete", "error", "cancelled", "abandoned"])
def test_each_outcome_parses(tmp_path: Path, outcome: str) -> None:
    error = {"type": "RuntimeError", "message": "boom"} if outcome == "error" else None
    payloads = text_events("hi")[:3]
    lines: list[Line] = [header(), *call_rows(0, payloads, outcome=outcome, error=error)]
    call = read_recording(write_rows(tmp_path / "r.jsonl", lines)).calls[0]
    assert call.outcome == outcome
    assert call.error == (RecordedError("RuntimeError", "boom") if error else None)
    assert not call.truncated


def test_error_event_parses_as_error_event(tmp_path: Path) -> None:
    failed = assistant_message([], "error") | {"error_message": "overloaded"}
    payloads: list[Row] = [{"type": "start"}, {"type": "error", "reason": "error", "error": failed}]
    lines: list[Line] = [header(), *call_rows(0, payloads)]
    events = read_recording(write_rows(tmp_path / "r.jsonl", lines)).calls[0].events
    assert isinstance(events[1], ErrorEvent)
    assert events[1].error.error_message == "overloaded"


def test_unknown_fields_in_an_event_are_ignored(tmp_path: Path) -> None:
    payload = {"type": "text_delta", "content_index": 0, "delta": "hi", "added_later": 1}
    lines: list[Line] = [header(), *call_rows(0, [payload])]
    call = read_recording(write_rows(tmp_path / "r.jsonl", lines)).calls[0]
    assert call.event_rows == [payload]  # stored as written
    assert isinstance(call.events[0], TextDeltaEvent)


# --- the header and its version ------------------------------------------------------------


@pytest.mark.parametrize("version", [0, -1, "1", None, [1]])
def test_a_format_version_that_is_not_a_version_is_refused_naming_both(
    tmp_path: Path, version: Any
) -> None:
    row = header() if version is None else header(format_version=version)
    if version is None:
        del row["format_version"]
    path = write_rows(tmp_path / "r.jsonl", [row, *call_rows(0, text_events("hi"))])
    error = assert_refused(path, line=1, call_index=None, says="format_version")
    assert f"format_version {version!r}" in error.problem
    assert f"reads format_version 1 to {RECORDING_FORMAT_VERSION}" in error.problem


@pytest.mark.parametrize("version", [True, 1.0])
def test_format_version_that_only_equals_one_is_refused(tmp_path: Path, version: Any) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(format_version=version)])
    assert_refused(path, line=1, call_index=None, says="format_version")


def test_missing_header_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", call_rows(0, text_events("hi")))
    error = assert_refused(
        path, line=1, call_index=None, says=["first row must be the header", "'request'"]
    )
    assert "not an openprogram recording" in str(error)


def test_missing_header_after_blank_lines_names_the_first_row(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", ["", "  ", event(0, 0, {"type": "start"})])
    assert_refused(path, line=3, call_index=None, says="first row must be the header")


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n  \r\n"])
def test_empty_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(content)
    error = assert_refused(path, line=1, call_index=None, says=["empty file", "no header"])
    assert "not an openprogram recording" in str(error)


def test_second_header_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), header()]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=9, call_index=None, says="second header")


# --- rows that are not rows ----------------------------------------------------------------


def test_bad_json_on_a_middle_line_names_that_line(tmp_path: Path) -> None:
    lines = two_calls()
    lines[4] = '{"type": "event", "call_index": 0, "event_index": 2, '
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=5, call_index=None, says="not valid JSON")


def test_invalid_utf8_is_bad_json(tmp_path: Path) -> None:
    lines = two_calls()
    lines[3] = b'{"type": "event", "\xff\xfe": 1}'
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="not valid JSON")


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "42", "null", "true"])
def test_row_that_is_not_an_object_is_refused(tmp_path: Path, text: str) -> None:
    lines = two_calls()
    lines.insert(3, text)
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="must be a JSON object")


def test_header_that_is_an_array_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", ['[{"type": "header", "format_version": 1}]'])
    assert_refused(path, line=1, call_index=None, says="must be a JSON object")


@pytest.mark.parametrize("kind", ["requests", "Event", "", None, 7])
def test_unknown_row_type_is_refused(tmp_path: Path, kind: Any) -> None:
    lines = two_calls()
    lines.insert(2, {"type": kind, "call_index": 0})
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=None, says=f"unknown row type {kind!r}")


def test_row_without_type_is_refused(tmp_path: Path) -> None:
    lines = two_calls()
    lines.insert(2, {"call_index": 0, "event_index": 0, "event": {"type": "start"}})
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=None, says="unknown row type None")


def test_row_type_that_is_a_list_is_refused(tmp_path: Path) -> None:
    lines = two_calls()
    lines.insert(2, {"type": ["event"]})
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=None, says="unknown row type")


# --- events --------------------------------------------------------------------------------


@pytest.mark.parametrize("event_type", ["text", "tool_call", "", None, 3])
def test_unknown_event_type_is_refused(tmp_path: Path, event_type: Any) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": event_type})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=0, says=f"unknown event type {event_type!r}")


@pytest.mark.parametrize("event_type", [["start"], {"t": 1}])
def test_unhashable_event_type_is_refused(tmp_path: Path, event_type: Any) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": event_type})]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=0, says="unknown event type")


@pytest.mark.parametrize(
    ("payload", "names"),
    [
        ({"type": "text_delta", "content_index": 0}, ["text_delta", "delta", "required"]),
        ({"type": "text_delta", "delta": "hi"}, ["text_delta", "content_index", "required"]),
        ({"type": "text_end", "content_index": 0}, ["text_end", "content"]),
        ({"type": "toolcall_start", "content_index": 0, "id": "c"}, ["toolcall_start", "name"]),
        ({"type": "done", "reason": "stop"}, ["done", "message"]),
        ({"type": "done", "reason": "finished", "message": done()["message"]}, ["reason"]),
        (
            {"type": "done", "reason": "stop", "message": {"role": "assistant"}},
            ["done", "message.api"],
        ),
        ({"type": "text_start", "content_index": "zero"}, ["text_start", "content_index"]),
    ],
)
def test_event_with_bad_fields_names_the_field(
    tmp_path: Path, payload: Row, names: list[str]
) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": "start"}), event(0, 1, payload)]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=0, says=names)


@pytest.mark.parametrize("payload", [None, "start", ["start"], 1])
def test_event_field_that_is_not_an_object_is_refused(tmp_path: Path, payload: Any) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, payload)]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=0, says="event field must be an object")


def test_event_row_without_event_field_is_refused(tmp_path: Path) -> None:
    lines: list[Line] = [header(), request(0), {"type": "event", "call_index": 0, "event_index": 0}]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=0, says="event field must be an object")


# --- validate_events=False -----------------------------------------------------------------


def test_validate_events_false_reads_rows_without_models(tmp_path: Path) -> None:
    recording = read_recording(write_rows(tmp_path / "r.jsonl", two_calls()), validate_events=False)
    assert [len(c.event_rows) for c in recording.calls] == [5, 8]
    assert all(c.events == [] for c in recording.calls)
    assert recording.calls[0].event_rows == text_events("hi")
    assert recording.event_count == 13


def test_validate_events_false_skips_field_checks(tmp_path: Path) -> None:
    bad = {"type": "text_delta", "content_index": 0}
    lines: list[Line] = [header(), *call_rows(0, [{"type": "start"}, bad])]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert read_recording(path, validate_events=False).calls[0].event_rows[1] == bad
    assert_refused(path, line=4, call_index=0, says="delta")


@pytest.mark.parametrize(
    ("lines", "line", "call_index", "says"),
    [
        ([header(), request(0), event(0, 0, {"type": "nope"})], 3, 0, "unknown event type"),
        ([header(), request(0), event(0, 1, {"type": "start"})], 3, 0, "out of order"),
        ([header(), request(0), event(0, 0, "start")], 3, 0, "must be an object"),
        ([header(), request(0), event(1, 0, {"type": "start"})], 3, 1, "no request row"),
        ([header(), request(0), event(0, True, {"type": "start"})], 3, None, "whole number"),
        ([header(), request(0), call_end(0, 1)], 3, 0, "event_count 1 but 0"),
        ([header(), request(1)], 2, 1, "skips ahead"),
        ([header(), {"type": "x"}], 2, None, "unknown row type"),
        ([header(format_version=3)], 1, None, "format_version 3"),
    ],
)
def test_validate_events_false_still_checks_structure(
    tmp_path: Path, lines: list[Line], line: int, call_index: int | None, says: str
) -> None:
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=line, call_index=call_index, says=says, validate_events=False)
