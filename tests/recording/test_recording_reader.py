"""The strict recording reader: what it accepts, what it refuses, and where it says so.

Recordings are built here as JSONL text from small row builders, so every test states the
exact lines the reader sees; the replay tests record through the real recorder instead.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.errors import RecordingFileError
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    RecordingTruncatedError,
    ReplayMismatch,
    ReplayProvider,
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
    UserMessage,
    complete_simple,
)
from openprogram.providers.recording import (
    RECORDING_FORMAT_VERSION,
    RecordedError,
    Recording,
    encode_row,
    new_header,
    read_recording,
)
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
    write_rows,
)
from tests.support.tool_sessions import recording_into


def two_call_lines() -> list[Line]:
    return [header(), *call_rows(0, text_events("hi")), *call_rows(1, tool_events())]


def read_error(path: Path, *, validate_events: bool = True) -> RecordingFileError:
    with pytest.raises(RecordingFileError) as info:
        read_recording(path, validate_events=validate_events)
    return info.value


def assert_refused(
    path: Path,
    *,
    line: int | None,
    call_index: int | None,
    says: str | list[str],
    validate_events: bool = True,
) -> RecordingFileError:
    """The reader refuses ``path`` at ``line`` (and ``call_index``), naming the problem."""
    error = read_error(path, validate_events=validate_events)
    message = str(error)
    assert error.path == str(path)
    assert error.line == line, message
    assert error.call_index == call_index, message
    assert message.startswith(str(path)), message
    if line is not None:
        assert f"line {line}:" in message
    for phrase in [says] if isinstance(says, str) else says:
        assert phrase in error.problem, message
    assert "\n" not in message
    return error


# --- a valid recording ---------------------------------------------------------------------


def test_valid_two_call_recording_parses(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "session.jsonl", two_call_lines())

    recording = read_recording(path)

    assert isinstance(recording, Recording)
    assert recording.path == path
    assert recording.header == header()
    assert recording.format_version == RECORDING_FORMAT_VERSION == 1
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
def test_a_format_version_that_is_not_one_is_refused_naming_both(
    tmp_path: Path, version: Any
) -> None:
    row = header() if version is None else header(format_version=version)
    if version is None:
        del row["format_version"]
    path = write_rows(tmp_path / "r.jsonl", [row, *call_rows(0, text_events("hi"))])
    error = assert_refused(path, line=1, call_index=None, says="format_version")
    assert f"format_version {version!r}" in error.problem
    assert f"reads format_version {RECORDING_FORMAT_VERSION}" in error.problem


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
    lines = two_call_lines()
    lines[4] = '{"type": "event", "call_index": 0, "event_index": 2, '
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=5, call_index=None, says="not valid JSON")


def test_invalid_utf8_is_bad_json(tmp_path: Path) -> None:
    lines = two_call_lines()
    lines[3] = b'{"type": "event", "\xff\xfe": 1}'
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="not valid JSON")


@pytest.mark.parametrize("text", ["[1, 2]", '"a string"', "42", "null", "true"])
def test_row_that_is_not_an_object_is_refused(tmp_path: Path, text: str) -> None:
    lines = two_call_lines()
    lines.insert(3, text)
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="must be a JSON object")


def test_header_that_is_an_array_is_refused(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", ['[{"type": "header", "format_version": 1}]'])
    assert_refused(path, line=1, call_index=None, says="must be a JSON object")


@pytest.mark.parametrize("kind", ["requests", "Event", "", None, 7])
def test_unknown_row_type_is_refused(tmp_path: Path, kind: Any) -> None:
    lines = two_call_lines()
    lines.insert(2, {"type": kind, "call_index": 0})
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=None, says=f"unknown row type {kind!r}")


def test_row_without_type_is_refused(tmp_path: Path) -> None:
    lines = two_call_lines()
    lines.insert(2, {"call_index": 0, "event_index": 0, "event": {"type": "start"}})
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=3, call_index=None, says="unknown row type None")


def test_row_type_that_is_a_list_is_refused(tmp_path: Path) -> None:
    lines = two_call_lines()
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


# --- line ends, blank lines, file modes ----------------------------------------------------


def test_crlf_line_ends_parse(tmp_path: Path) -> None:
    crlf = write_rows(tmp_path / "crlf.jsonl", two_call_lines(), newline=b"\r\n")
    lf = write_rows(tmp_path / "lf.jsonl", two_call_lines())
    assert b"\r\n" in crlf.read_bytes()
    from_crlf, from_lf = read_recording(crlf), read_recording(lf)
    assert from_crlf.header == from_lf.header
    assert [(c.request, c.event_rows, c.outcome, c.line) for c in from_crlf.calls] == [
        (c.request, c.event_rows, c.outcome, c.line) for c in from_lf.calls
    ]


def test_crlf_line_numbers_in_errors(tmp_path: Path) -> None:
    lines = two_call_lines()
    lines[5] = "{oops"
    path = write_rows(tmp_path / "r.jsonl", lines, newline=b"\r\n")
    assert_refused(path, line=6, call_index=None, says="not valid JSON")


def test_blank_lines_are_tolerated_and_counted(tmp_path: Path) -> None:
    lines = two_call_lines()
    for position in (8, 4, 1):
        lines.insert(position, "")
    lines.insert(0, "   ")
    lines.append("\t")
    path = write_rows(tmp_path / "r.jsonl", lines)
    recording = read_recording(path)
    assert [c.line for c in recording.calls] == [4, 13]
    assert recording.calls[0].event_rows == text_events("hi")
    assert recording.truncated_calls == []


def test_blank_lines_do_not_shift_error_line_numbers(tmp_path: Path) -> None:
    lines = two_call_lines()
    lines.insert(2, "")
    lines.insert(2, "")
    lines[6] = {"type": "mystery"}
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=7, call_index=None, says="unknown row type 'mystery'")


@pytest.mark.parametrize("mode", [0o644, 0o400, 0o600, 0o444])
def test_any_readable_mode_reads(tmp_path: Path, mode: int) -> None:
    path = write_rows(tmp_path / "r.jsonl", two_call_lines())
    path.chmod(mode)
    try:
        assert stat.S_IMODE(path.stat().st_mode) == mode
        assert len(read_recording(path).calls) == 2
    finally:
        path.chmod(0o600)


def test_missing_file_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "nowhere" / "missing.jsonl"
    error = assert_refused(path, line=None, call_index=None, says="no such recording")
    assert "check the name or path" in str(error)


def test_str_path_is_accepted_and_reported_as_given(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), request(-1)])
    with pytest.raises(RecordingFileError) as info:
        read_recording(str(path))
    assert info.value.path == str(path)
    assert read_recording(str(write_rows(tmp_path / "ok.jsonl", [header()]))).calls == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a file of any mode")
def test_unreadable_file_is_refused_clearly(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "r.jsonl", two_call_lines())
    path.chmod(0)
    try:
        error = assert_refused(path, line=None, call_index=None, says="cannot read it")
        assert "ermission" in error.problem  # the OS reason, e.g. "Permission denied"
        assert "check its permissions" in str(error)
    finally:
        path.chmod(0o600)


def test_directory_is_refused_as_not_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "a-directory.jsonl"
    path.mkdir()
    error = assert_refused(path, line=None, call_index=None, says="not a regular file")
    assert "directory" in error.problem.lower()


# --- concurrency and truncation ------------------------------------------------------------


def test_interleaved_calls_parse_into_the_right_calls(tmp_path: Path) -> None:
    first, second = text_events("one"), text_events("two")
    lines: list[Line] = [header(), request(0, text="one"), request(1, text="two")]
    for index in range(5):
        lines += [event(1, index, second[index]), event(0, index, first[index])]
    lines += [call_end(1, 5), call_end(0, 5, "abandoned")]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines))
    zero, one = recording.calls
    assert zero.event_rows == first
    assert one.event_rows == second
    assert zero.request["context"]["messages"][0]["content"] == "one"
    assert one.request["context"]["messages"][0]["content"] == "two"
    assert (zero.outcome, one.outcome) == ("abandoned", "complete")
    assert (zero.line, one.line) == (2, 3)
    assert recording.truncated_calls == []


def test_final_call_cut_short_is_truncated(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), request(1)]
    lines += [
        event(1, 0, {"type": "start"}),
        event(1, 1, {"type": "text_start", "content_index": 0}),
    ]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines))
    assert recording.truncated_calls == [1]
    complete, cut = recording.calls
    assert complete.outcome == "complete"
    assert not complete.truncated
    assert cut.truncated
    assert cut.outcome is None
    assert cut.error is None
    assert [type(e) for e in cut.events] == [StartEvent, TextStartEvent]
    assert len(cut.event_rows) == 2


def test_request_with_no_events_is_truncated(tmp_path: Path) -> None:
    lines: list[Line] = [header(), *call_rows(0, text_events("hi")), request(1)]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines))
    assert recording.truncated_calls == [1]
    assert recording.calls[1].event_rows == []


def test_concurrent_calls_in_flight_at_a_crash_are_all_truncated(tmp_path: Path) -> None:
    """Two writers each had a call open when the process died: neither has a call_end."""
    lines: list[Line] = [header(), request(0), request(1), request(2)]
    lines += [event(0, 0, {"type": "start"}), event(2, 0, {"type": "start"})]
    lines += [event(1, 0, {"type": "start"}), call_end(1, 1, "complete")]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines))
    assert recording.truncated_calls == [0, 2]
    assert [c.outcome for c in recording.calls] == [None, "complete", None]


@pytest.mark.parametrize("cut_at", [1, 10, 30, -1])
def test_final_line_cut_mid_json_without_newline_is_ignored(tmp_path: Path, cut_at: int) -> None:
    events = text_events("hi")
    lines: list[Line] = [header(), *call_rows(0, events), request(1)]
    lines += [event(1, 0, events[0]), event(1, 1, events[1])]
    tail = orjson.dumps(call_end(1, 2))[:cut_at]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines, tail=tail))
    assert recording.truncated_calls == [1]
    assert recording.calls[0].outcome == "complete"
    assert recording.calls[1].event_rows == events[:2]


def test_final_event_line_cut_mid_json_drops_that_event(tmp_path: Path) -> None:
    events = text_events("hi")
    lines: list[Line] = [header(), request(0), event(0, 0, events[0])]
    tail = orjson.dumps(event(0, 1, events[1]))[:-5]
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines, tail=tail))
    assert recording.truncated_calls == [0]
    assert recording.calls[0].event_rows == events[:1]


def test_final_line_cut_in_a_crlf_file_is_ignored(tmp_path: Path) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": "start"})]
    tail = orjson.dumps(call_end(0, 1))[:12]
    path = write_rows(tmp_path / "r.jsonl", lines, newline=b"\r\n", tail=tail)
    assert read_recording(path).truncated_calls == [0]


def test_complete_final_line_without_newline_is_read(tmp_path: Path) -> None:
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": "start"})]
    tail = orjson.dumps(call_end(0, 1))
    recording = read_recording(write_rows(tmp_path / "r.jsonl", lines, tail=tail))
    assert recording.truncated_calls == []
    assert recording.calls[0].outcome == "complete"


def test_broken_line_with_newline_followed_by_more_lines_is_an_error(tmp_path: Path) -> None:
    events = text_events("hi")
    broken = orjson.dumps(call_end(1, 2))[:10].decode()
    lines: list[Line] = [header(), *call_rows(0, events), request(1)]
    lines += [event(1, 0, events[0]), broken, event(1, 1, events[1])]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=11, call_index=None, says="not valid JSON")


def test_broken_last_line_that_has_its_newline_is_an_error(tmp_path: Path) -> None:
    """A line written whole ends with its newline, so a broken one is damage, not a crash."""
    broken = orjson.dumps(call_end(0, 1))[:10].decode()
    lines: list[Line] = [header(), request(0), event(0, 0, {"type": "start"}), broken]
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=4, call_index=None, says="not valid JSON")


def test_header_cut_short_is_an_empty_recording(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(orjson.dumps(header())[:15])
    assert_refused(path, line=1, call_index=None, says="no header row")


def test_cut_final_line_does_not_hide_earlier_errors(tmp_path: Path) -> None:
    lines: list[Line] = [header(), request(0), event(0, 1, {"type": "start"})]
    tail = orjson.dumps(call_end(0, 1))[:12]
    path = write_rows(tmp_path / "r.jsonl", lines, tail=tail)
    assert_refused(path, line=3, call_index=0, says="out of order")


# --- replay of a truncated recording -------------------------------------------------------


async def drain(events: AsyncIterator[AssistantMessageEvent], into: list[Any]) -> None:
    """Collect events until the stream ends or raises (what was yielded stays in ``into``)."""
    async for item in events:
        into.append(item)


async def test_replay_serves_complete_calls_then_raises_at_the_truncated_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "session.jsonl"
    first = Context(messages=[UserMessage(content="hi")])
    second = Context(messages=[UserMessage(content="again")])
    with recording_into(path):
        assert (await complete_simple(ECHO_MODEL, first)).text == "echo:hi"
        assert (await complete_simple(ECHO_MODEL, second)).text == "echo:again"
    lines = path.read_bytes().splitlines(keepends=True)
    assert orjson.loads(lines[-1]) == call_end(1, 5)
    path.write_bytes(b"".join(lines[:-1]))  # the recording process died before the call_end

    recording = read_recording(path)
    assert recording.truncated_calls == [1]
    replay = ReplayProvider(path)

    replayed = [e async for e in replay.stream_simple(ECHO_MODEL, first)]
    assert replayed == recording.calls[0].events
    last = replayed[-1]
    assert isinstance(last, DoneEvent)
    assert last.message.text == "echo:hi"

    received: list[Any] = []
    with pytest.raises(RecordingTruncatedError) as info:
        await drain(replay.stream_simple(ECHO_MODEL, second), received)
    assert received == recording.calls[1].events
    assert len(received) == 5
    error = info.value
    assert isinstance(error, ReplayMismatch)
    assert error.call_index == 1
    assert error.event_index == 5
    assert error.path == str(path)
    assert "cut short" in str(error)
    assert "call 1" in str(error)
    assert replay.calls_consumed == 2
    assert replay.mismatches == [error]


async def test_replay_of_a_file_cut_mid_line_still_constructs(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    context = Context(messages=[UserMessage(content="hi")])
    with recording_into(path):
        await complete_simple(ECHO_MODEL, context)
    data = path.read_bytes()
    path.write_bytes(data[: data.rstrip(b"\n").rfind(b"\n") + 1 + 20])  # cut in the call_end
    replay = ReplayProvider(path)
    received: list[Any] = []
    with pytest.raises(RecordingTruncatedError) as info:
        await drain(replay.stream_simple(ECHO_MODEL, context), received)
    assert len(received) == info.value.event_index == 5


def test_replay_provider_refuses_a_broken_file_when_constructed(tmp_path: Path) -> None:
    lines = two_call_lines()
    lines[3] = "{not json"
    path = write_rows(tmp_path / "r.jsonl", lines)
    with pytest.raises(RecordingFileError) as info:
        ReplayProvider(path)
    assert info.value.line == 4


# --- validate_events=False -----------------------------------------------------------------


def test_validate_events_false_reads_rows_without_models(tmp_path: Path) -> None:
    recording = read_recording(
        write_rows(tmp_path / "r.jsonl", two_call_lines()), validate_events=False
    )
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
        ([header(format_version=2)], 1, None, "format_version 2"),
    ],
)
def test_validate_events_false_still_checks_structure(
    tmp_path: Path, lines: list[Line], line: int, call_index: int | None, says: str
) -> None:
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=line, call_index=call_index, says=says, validate_events=False)


# --- properties ----------------------------------------------------------------------------

SHORT_TEXT = st.text(max_size=6)
OUTCOMES = ("complete", "error", "cancelled", "abandoned")

text_event_payloads: st.SearchStrategy[Row] = st.one_of(
    st.builds(lambda: {"type": "start"}),
    st.builds(lambda i: {"type": "text_start", "content_index": i}, st.integers(0, 3)),
    st.builds(
        lambda i, d: {"type": "text_delta", "content_index": i, "delta": d},
        st.integers(0, 3),
        SHORT_TEXT,
    ),
    st.builds(
        lambda i, c: {"type": "text_end", "content_index": i, "content": c},
        st.integers(0, 3),
        SHORT_TEXT,
    ),
    st.builds(done, SHORT_TEXT),
)


@dataclass
class GeneratedCall:
    call_index: int
    request: Row
    payloads: list[Row]
    outcome: str | None
    error: Row | None
    line: int = 0

    def rows(self) -> list[Row]:
        rows = [self.request]
        rows += [event(self.call_index, i, p) for i, p in enumerate(self.payloads)]
        if self.outcome is not None:
            rows.append(call_end(self.call_index, len(self.payloads), self.outcome, self.error))
        return rows


@dataclass
class GeneratedRecording:
    header: Row
    calls: list[GeneratedCall]
    data: bytes
    truncated_calls: list[int] = field(default_factory=list)


@st.composite
def generated_recordings(draw: st.DrawFn) -> GeneratedRecording:
    """A valid recording: interleaved calls, maybe a cut-short last call and a cut last line."""
    calls = []
    for index in range(draw(st.integers(0, 5))):
        outcome = draw(st.sampled_from(OUTCOMES))
        error = (
            {"type": draw(st.sampled_from(["RuntimeError", "x.Err"])), "message": draw(SHORT_TEXT)}
            if outcome == "error"
            else None
        )
        calls.append(
            GeneratedCall(
                index,
                request(index, text=draw(SHORT_TEXT)),
                draw(st.lists(text_event_payloads, max_size=5)),
                outcome,
                error,
            )
        )
    # How the last call ends: whole, without its call_end, or also with a line cut mid-write.
    cut = draw(st.sampled_from(["none", "call_end", "mid_line"])) if calls else "none"
    truncate = cut != "none"
    if truncate:
        calls[-1].outcome, calls[-1].error = None, None

    # Interleave the calls' rows as concurrent writers would: each call's rows in order,
    # request rows in call_index order (indexes are handed out in the order requests land).
    per_call = [(call, call.rows()) for call in calls]
    positions = [0] * len(calls)
    next_request = 0
    ordered: list[tuple[GeneratedCall, Row]] = []
    while True:
        ready = [
            i
            for i, (_, rows) in enumerate(per_call)
            if positions[i] < len(rows) and (positions[i] > 0 or i == next_request)
        ]
        if not ready:
            break
        chosen = draw(st.sampled_from(ready))
        if positions[chosen] == 0:
            next_request += 1
        call, rows = per_call[chosen]
        ordered.append((call, rows[positions[chosen]]))
        positions[chosen] += 1

    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    blank_before = draw(st.sets(st.integers(0, len(ordered)), max_size=3))
    first = header(recording_id=draw(SHORT_TEXT))
    out = [orjson.dumps(first) + newline]
    number = 1
    for position, (call, row) in enumerate(ordered, start=1):
        if position - 1 in blank_before:
            out.append(newline)
            number += 1
        number += 1
        if row["type"] == "request":
            call.line = number
        out.append(orjson.dumps(row) + newline)
    if cut == "mid_line":
        last = calls[-1]
        partial = orjson.dumps(event(last.call_index, len(last.payloads), {"type": "start"}))
        out.append(partial[: draw(st.integers(1, len(partial) - 1))])
    truncated = [calls[-1].call_index] if truncate else []
    return GeneratedRecording(first, calls, b"".join(out), truncated)


def summary(recording: Recording) -> list[tuple[Any, ...]]:
    return [
        (
            call.call_index,
            call.line,
            call.request,
            call.event_rows,
            call.outcome,
            None
            if call.error is None
            else {"type": call.error.type, "message": call.error.message},
        )
        for call in recording.calls
    ]


def expected_summary(generated: GeneratedRecording) -> list[tuple[Any, ...]]:
    return [
        (
            call.call_index,
            call.line,
            {key: call.request[key] for key in ("model", "context", "options")},
            call.payloads,
            call.outcome,
            call.error,
        )
        for call in generated.calls
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=generated_recordings(), validate=st.booleans())
def test_generated_recordings_read_back_as_generated(
    generated: GeneratedRecording, validate: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "generated.jsonl"
        path.write_bytes(generated.data)
        recording = read_recording(path, validate_events=validate)
    assert recording.header == generated.header
    assert summary(recording) == expected_summary(generated)
    assert recording.truncated_calls == generated.truncated_calls
    for call in recording.calls:
        if validate:
            assert [e.type for e in call.events] == [p["type"] for p in call.event_rows]
        else:
            assert call.events == []


def read_or_refuse(path: Path, *, validate_events: bool) -> RecordingFileError | None:
    """None if ``path`` reads; its RecordingFileError if refused; anything else propagates."""
    try:
        read_recording(path, validate_events=validate_events)
    except RecordingFileError as error:
        return error
    return None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=generated_recordings(), data=st.data())
def test_damaged_recordings_are_read_or_refused_never_crash(
    generated: GeneratedRecording, data: st.DataObject
) -> None:
    original = generated.data
    if data.draw(st.booleans(), label="drop a line"):
        lines = original.split(b"\n")
        del lines[data.draw(st.integers(0, len(lines) - 1), label="line")]
        damaged = b"\n".join(lines)
    else:
        position = data.draw(st.integers(0, len(original) - 1), label="position")
        byte = data.draw(st.integers(0, 255), label="byte")
        damaged = original[:position] + bytes([byte]) + original[position + 1 :]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.jsonl"
        path.write_bytes(damaged)
        refusals = [read_or_refuse(path, validate_events=v) for v in (True, False)]
    for refusal in refusals:
        if refusal is not None:
            assert refusal.path == str(path)
            assert refusal.line is None or 1 <= refusal.line <= damaged.count(b"\n") + 1
