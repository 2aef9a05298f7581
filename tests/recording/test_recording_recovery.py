"""A recording survives a writer that died mid-row, a write that failed, and a file replaced
under a writer that stays open."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.errors import RecordingFileError, RecordingTruncatedError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    RecordingProvider,
    ReplayProvider,
    UserMessage,
)
from openprogram.recording.format import encode_row, new_header
from openprogram.recording.open_recording import OpenRecording
from openprogram.recording.writer import RecordingWriter, writer_for
from tests.support.recording_rows import call_end

RECORD_CALLS = textwrap.dedent(
    """
    import asyncio, sys
    from openprogram.providers import (
        ECHO_MODEL, Context, EchoProvider, RecordingProvider, UserMessage,
    )

    async def main(path, prefix, count):
        recorder = RecordingProvider(EchoProvider(), path)
        for n in range(count):
            context = Context(messages=[UserMessage(content=f"{prefix} {n}")])
            async for _ in recorder.stream_simple(ECHO_MODEL, context):
                pass

    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
    """
)

# Records one call, then dies by SIGKILL half-way through writing the second call's third row.
RECORD_THEN_DIE_MID_ROW = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    from openprogram.providers import (
        ECHO_MODEL, Context, EchoProvider, RecordingProvider, UserMessage,
    )

    real_write = os.write
    rows_left = None

    def dying_write(fd, data):
        global rows_left
        if rows_left is not None and data.startswith(b'{"type":"event","call_index":1'):
            rows_left -= 1
            if rows_left == 0:
                real_write(fd, data[: len(data) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
        return real_write(fd, data)

    async def main(path):
        global rows_left
        os.write = dying_write
        recorder = RecordingProvider(EchoProvider(), path)
        for n in range(2):
            if n == 1:
                rows_left = 3
            context = Context(messages=[UserMessage(content=f"first {n}")])
            async for _ in recorder.stream_simple(ECHO_MODEL, context):
                pass

    asyncio.run(main(sys.argv[1]))
    """
)

EMPTY_REQUEST: dict[str, Any] = {"model": {}, "context": {}, "options": {}}


def record_in_a_new_process(path: Path, prefix: str, count: int) -> None:
    subprocess.run(
        [sys.executable, "-c", RECORD_CALLS, str(path), prefix, str(count)],
        check=True,
        timeout=60,
    )


def context(text: str) -> Context:
    return Context(messages=[UserMessage(content=text)])


async def record(path: Path, *texts: str) -> None:
    recorder = RecordingProvider(EchoProvider(), path)
    for text in texts:
        async for _ in recorder.stream_simple(ECHO_MODEL, context(text)):
            pass


def request_row(call_index: int) -> dict[str, Any]:
    return {"type": "request", "call_index": call_index, **EMPTY_REQUEST}


# --- a writer that died mid-row --------------------------------------------------------------


def test_a_cut_recording_then_one_more_session_reads(tmp_path: Path) -> None:
    """Record, cut the last row short (as SIGKILL mid-write leaves it), record again in a
    new process: every complete call reads, the cut one is truncated, none is merged."""
    path = tmp_path / "cut.jsonl"
    record_in_a_new_process(path, "first", 2)
    data = path.read_bytes()
    path.write_bytes(data[:-40])  # the last call_end loses its end
    record_in_a_new_process(path, "second", 2)

    recording = read_recording(path)
    assert [call.call_index for call in recording.calls] == [0, 1, 2, 3]
    assert recording.truncated_calls == [1]
    assert [call.outcome for call in recording.calls] == [
        "complete",
        None,
        "complete",
        "complete",
    ]
    prompts = [call.request["context"]["messages"][0]["content"] for call in recording.calls]
    assert prompts == ["first 0", "first 1", "second 0", "second 1"]
    assert path.read_bytes().endswith(b"\n")


def test_a_writer_killed_mid_row_then_one_more_session_reads(tmp_path: Path) -> None:
    path = tmp_path / "killed.jsonl"
    died = subprocess.run(
        [sys.executable, "-c", RECORD_THEN_DIE_MID_ROW, str(path)], timeout=60, check=False
    )
    assert died.returncode == -signal.SIGKILL
    assert not path.read_bytes().endswith(b"\n")  # a row cut in half
    record_in_a_new_process(path, "second", 1)

    recording = read_recording(path)
    assert [call.outcome for call in recording.calls] == ["complete", None, "complete"]
    assert len(recording.calls[1].events) == 2  # the half-written third event is gone
    prompts = [call.request["context"]["messages"][0]["content"] for call in recording.calls]
    assert prompts == ["first 0", "first 1", "second 0"]


async def test_replay_serves_the_calls_after_a_cut_one(tmp_path: Path) -> None:
    path = tmp_path / "cut.jsonl"
    await record(path, "one", "two")
    writer_for(path).close()
    path.write_bytes(path.read_bytes()[:-40])
    await record(path, "three")

    replay = ReplayProvider(path)
    async for _ in replay.stream_simple(ECHO_MODEL, context("one")):
        pass
    with pytest.raises(RecordingTruncatedError) as info:
        async for _ in replay.stream_simple(ECHO_MODEL, context("two")):
            pass
    assert info.value.call_index == 1
    texts = [e async for e in replay.stream_simple(ECHO_MODEL, context("three"))]
    assert texts[-1].message.text == "echo:three"  # type: ignore[union-attr]
    replay.assert_consumed()


def test_a_complete_row_lacking_only_its_newline_is_completed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(
        encode_row(new_header()) + encode_row(request_row(0)) + orjson.dumps(call_end(0))
    )
    writer = RecordingWriter(path)
    assert writer.start_call(EMPTY_REQUEST) == 1
    writer.close()
    recording = read_recording(path, validate_events=False)
    assert [call.outcome for call in recording.calls] == ["complete", None]


@pytest.mark.parametrize("cut", [1, 10, 30])
def test_a_cut_request_row_is_removed_and_its_index_reused(tmp_path: Path, cut: int) -> None:
    path = tmp_path / "r.jsonl"
    whole = encode_row(new_header()) + encode_row(request_row(0)) + encode_row(call_end(0))
    path.write_bytes(whole + encode_row(request_row(1))[:cut])
    writer = RecordingWriter(path)
    assert writer.open() == 1
    assert writer.start_call(EMPTY_REQUEST) == 1
    writer.close()
    assert path.read_bytes() == whole + encode_row(request_row(1))


def test_a_cut_header_starts_the_recording_anew(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(encode_row(new_header())[:20])
    writer = RecordingWriter(path)
    assert writer.start_call(EMPTY_REQUEST) == 0
    writer.close()
    assert len(read_recording(path, validate_events=False).calls) == 1


def test_a_row_cut_while_this_writer_is_open_is_repaired_before_its_next_row(
    tmp_path: Path,
) -> None:
    """Another process died mid-row between two of this writer's rows."""
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    assert writer.start_call(EMPTY_REQUEST) == 0
    with path.open("ab") as other:
        other.write(encode_row(request_row(1)) + b'{"type":"event","call_index":1,"ev')
    writer.write_row(call_end(0))
    assert writer.start_call(EMPTY_REQUEST) == 2
    writer.close()
    recording = read_recording(path, validate_events=False)
    assert [call.outcome for call in recording.calls] == ["complete", None, None]


def test_a_file_that_is_not_a_recording_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"my notes\nno final newline")
    with pytest.raises(RecordingFileError, match="not an openprogram recording"):
        RecordingWriter(path).open()
    assert path.read_bytes() == b"my notes\nno final newline"


@pytest.mark.parametrize(
    "garbage",
    [
        b'not json but "request"\n',
        b'{"type":"request","call_index":"seven"}\n',
        b'["request"]\n',
    ],
)
def test_a_line_a_writer_cannot_read_is_a_recording_file_error(
    tmp_path: Path, garbage: bytes
) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(encode_row(new_header()) + garbage + encode_row(call_end(0)))
    with pytest.raises(RecordingFileError) as info:
        RecordingWriter(path).open()
    assert info.value.line == 2
    assert "line 2 is not a valid row" in info.value.problem
    assert "new recording" in str(info.value)


def test_garbage_appended_by_another_writer_is_a_recording_file_error(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.start_call(EMPTY_REQUEST)
    with path.open("ab") as other:
        other.write(b'{"type":"request","call_index":1,"model":{}\n')
    with pytest.raises(RecordingFileError, match="line 3 is not a valid row"):
        writer.start_call(EMPTY_REQUEST)
    writer.close()


# --- a write that fails part-way -------------------------------------------------------------


def test_a_write_that_fails_part_way_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.start_call(EMPTY_REQUEST)
    before = path.read_bytes()
    opened = writer._file
    assert opened is not None
    real_write = os.write

    def half_then_disk_full(fd: int, data: bytes) -> int:
        if fd != opened.fd:
            return real_write(fd, data)
        if len(data) > 1:
            return real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_disk_full)
    with pytest.raises(RecordingFileError, match="No space left on device"):
        writer.write_row(call_end(0))
    monkeypatch.undo()
    assert path.read_bytes() == before
    writer.write_row(call_end(0))
    assert writer.start_call(EMPTY_REQUEST) == 1
    writer.close()
    assert [c.outcome for c in read_recording(path, validate_events=False).calls] == [
        "complete",
        None,
    ]


# --- a file replaced under an open writer ----------------------------------------------------


async def test_a_deleted_recording_is_recreated_by_the_next_run(tmp_path: Path) -> None:
    path = tmp_path / "notebook.jsonl"
    await record(path, "first run")
    path.unlink()
    await record(path, "second run")
    recording = read_recording(path)
    assert [call.request["context"]["messages"][0]["content"] for call in recording.calls] == [
        "second run"
    ]
    assert recording.header["type"] == "header"
    assert writer_for(path).existing_calls == 0


async def test_a_replaced_recording_is_followed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    await record(path, "a")
    other = tmp_path / "other.jsonl"
    await record(other, "x", "y")
    os.replace(other, path)
    assert writer_for(path).open() == 2
    await record(path, "b")
    calls = read_recording(path).calls
    assert [c.request["context"]["messages"][0]["content"] for c in calls] == ["x", "y", "b"]


def test_a_call_under_way_finishes_in_the_file_it_started_in(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    first_index, first_file = writer.begin_call(EMPTY_REQUEST)
    moved = tmp_path / "moved.jsonl"
    os.rename(path, moved)
    second_index, second_file = writer.begin_call(EMPTY_REQUEST)
    assert (first_index, second_index) == (0, 0)
    assert second_file is not first_file
    writer.write_row(call_end(0), first_file)
    writer.write_row(call_end(0), second_file)
    writer.close()
    for recording in (read_recording(moved), read_recording(path)):
        assert [call.outcome for call in recording.calls] == ["complete"]


async def test_the_path_is_checked_once_per_call_not_per_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    checks: list[Path] = []
    real_is_at = OpenRecording.is_at

    def counting_is_at(self: OpenRecording, where: Path) -> bool:
        checks.append(where)
        return real_is_at(self, where)

    writer_for(path).open()
    monkeypatch.setattr(OpenRecording, "is_at", counting_is_at)
    await record(path, "one")  # five events
    assert len(read_recording(path).calls[0].events) == 5
    assert len(checks) == 1
