"""The strict recording reader on damaged and odd files: line ends, blank lines, file modes,
concurrent writers and a last line cut short."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import (
    read_recording,
)
from openprogram.providers import (
    StartEvent,
    TextStartEvent,
)
from tests.support.reader_refusals import assert_refused
from tests.support.recording_rows import (
    Line,
    call_end,
    call_rows,
    event,
    header,
    request,
    text_events,
    two_calls,
    write_rows,
)

# --- line ends, blank lines, file modes ----------------------------------------------------


def test_crlf_line_ends_parse(tmp_path: Path) -> None:
    crlf = write_rows(tmp_path / "crlf.jsonl", two_calls(), newline=b"\r\n")
    lf = write_rows(tmp_path / "lf.jsonl", two_calls())
    assert b"\r\n" in crlf.read_bytes()
    from_crlf, from_lf = read_recording(crlf), read_recording(lf)
    assert from_crlf.header == from_lf.header
    assert [(c.request, c.event_rows, c.outcome, c.line) for c in from_crlf.calls] == [
        (c.request, c.event_rows, c.outcome, c.line) for c in from_lf.calls
    ]


def test_crlf_line_numbers_in_errors(tmp_path: Path) -> None:
    lines = two_calls()
    lines[5] = "{oops"
    path = write_rows(tmp_path / "r.jsonl", lines, newline=b"\r\n")
    assert_refused(path, line=6, call_index=None, says="not valid JSON")


def test_blank_lines_are_tolerated_and_counted(tmp_path: Path) -> None:
    lines = two_calls()
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
    lines = two_calls()
    lines.insert(2, "")
    lines.insert(2, "")
    lines[6] = {"type": "mystery"}
    path = write_rows(tmp_path / "r.jsonl", lines)
    assert_refused(path, line=7, call_index=None, says="unknown row type 'mystery'")


@pytest.mark.parametrize("mode", [0o644, 0o400, 0o600, 0o444])
def test_any_readable_mode_reads(tmp_path: Path, mode: int) -> None:
    path = write_rows(tmp_path / "r.jsonl", two_calls())
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
    path = write_rows(tmp_path / "r.jsonl", two_calls())
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
