"""Rewriting a whole recording: the rows written anew, atomically, the file's mode kept."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from openprogram.errors import RecordingFileError
from openprogram.recording.format import new_header
from openprogram.recording.reader import read_recording
from openprogram.recording.rewriting import rewrite_recording
from openprogram.store.hashing import transcript_hash
from tests.support.http_call_rows import provider_call, sse_call, write_calls
from tests.support.recording_rows import call_rows, write_rows
from tests.support.tool_sessions import record_tool_session


def test_a_recorded_session_rewritten_as_read_is_the_same_bytes(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    asyncio.run(record_tool_session(path))
    before = path.read_bytes()
    recording = read_recording(path)
    rewrite_recording(path, recording.header, recording.calls, expected=os.stat(path))
    assert path.read_bytes() == before


def test_calls_of_both_boundaries_are_renumbered_in_the_order_given(tmp_path: Path) -> None:
    path = write_calls(
        tmp_path / "mixed.jsonl", provider_call(0, "one"), sse_call(1), provider_call(2, "two")
    )
    recording = read_recording(path)
    first, http, last = recording.calls
    rewrite_recording(path, recording.header, [last, http])
    rewritten = read_recording(path)
    assert [call.boundary for call in rewritten.calls] == ["provider", "http"]
    assert [call.call_index for call in rewritten.calls] == [0, 1]
    assert rewritten.calls[0].request == last.request
    assert rewritten.calls[1].event_rows == http.event_rows
    assert transcript_hash(rewritten) != transcript_hash(recording)
    del first


def test_a_truncated_call_stays_truncated(tmp_path: Path) -> None:
    rows = provider_call(0)
    path = write_calls(tmp_path / "cut.jsonl", rows[:-1])  # no call_end
    recording = read_recording(path)
    assert recording.truncated_calls == [0]
    rewrite_recording(path, recording.header, recording.calls)
    assert read_recording(path).truncated_calls == [0]


def test_the_file_keeps_its_mode_and_a_new_one_is_private(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "shared.jsonl", provider_call(0))
    os.chmod(path, 0o644)
    recording = read_recording(path)
    rewrite_recording(path, recording.header, recording.calls)
    assert os.stat(path).st_mode & 0o777 == 0o644
    new = tmp_path / "new.jsonl"
    rewrite_recording(new, recording.header, recording.calls)
    assert os.stat(new).st_mode & 0o777 == 0o600


def test_a_file_that_changed_since_it_was_read_is_left_alone(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "busy" / "busy.jsonl", provider_call(0))
    seen = os.stat(path)
    recording = read_recording(path)
    with path.open("ab") as stream:  # another writer appended a call meanwhile
        stream.write(
            path.read_bytes().split(b"\n", 1)[1].replace(b'"call_index":0', b'"call_index":1')
        )
    after = path.read_bytes()
    with pytest.raises(RecordingFileError, match="changed while it was being rewritten"):
        rewrite_recording(path, recording.header, recording.calls, expected=seen)
    assert path.read_bytes() == after
    assert [p.name for p in path.parent.iterdir() if p.suffix == ".tmp"] == []  # none left


def test_an_unwritable_folder_is_one_error_and_the_original_is_kept(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "kept.jsonl", provider_call(0))
    before = path.read_bytes()
    recording = read_recording(path)
    missing = tmp_path / "no-such-folder" / "x.jsonl"
    with pytest.raises(RecordingFileError, match="cannot rewrite the recording"):
        rewrite_recording(missing, recording.header, recording.calls)
    assert path.read_bytes() == before


def test_tape_entries_given_are_kept_with_their_order_and_fields(tmp_path: Path) -> None:
    from tests.support.recording_rows import call_rows, header, write_rows

    clock = {"args": {}, "result": 1.5, "nondeterministic": True, "within": "tool:x"}
    call = call_rows(0, text="hi")
    call[0]["within"] = "tool:x"  # a call made while a tool was recorded
    rows = [
        header(),
        {"type": "tape", "tape": "clock", **clock},
        *call,
        {"type": "tape", "tape": "w", "args": {"c": "P"}, "result": {"t": 1}, "typed": True},
        {"type": "tape", "tape": "w", "args": {}, "error": {"type": "KeyError", "message": "c"}},
    ]
    path = write_rows(tmp_path / "tapes.jsonl", rows)
    recording = read_recording(path)
    rewrite_recording(path, recording.header, recording.calls, tapes=recording.tapes)
    rewritten = read_recording(path)
    assert [(e.tape, e.index, e.args, e.result, e.error) for e in rewritten.tapes] == [
        (e.tape, e.index, e.args, e.result, e.error) for e in recording.tapes
    ]
    assert [(e.typed, e.nondeterministic, e.within) for e in rewritten.tapes] == [
        (False, True, "tool:x"),
        (True, False, None),
        (False, False, None),
    ]
    assert transcript_hash(rewritten) == transcript_hash(recording)
    assert rewritten.calls[0].within == "tool:x"


def test_the_sessions_a_file_holds_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    rows = [new_header("sessions"), *call_rows(0), *call_rows(1), *call_rows(2)]
    rows[-1] = {**rows[-1], "new_session": True}  # a second session began at call 2
    write_rows(path, rows)
    recording = read_recording(path)
    assert recording.appended_sessions == [2]
    unmarked = write_rows(tmp_path / "one.jsonl", [*rows[:-1], {**rows[-1], "new_session": False}])
    assert transcript_hash(recording) == transcript_hash(read_recording(unmarked))  # not hashed

    rewrite_recording(path, recording.header, recording.calls[1:])  # call 0 dropped

    assert read_recording(path).appended_sessions == [1]
