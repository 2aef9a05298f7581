"""What the reader and the writer let through their doors: only regular files, and only rows
nested no deeper than the one nesting limit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.errors import RecordingFileError, UnrecordableValueError
from openprogram.json_nesting import MAX_NESTING_DEPTH
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    RecordingProvider,
    StreamOptions,
    Tool,
    UserMessage,
)
from openprogram.recording.format import encode_row, new_header
from openprogram.recording.reader import read_recording_bytes, read_recording_file
from openprogram.recording.writer import RecordingWriter
from tests.support.recording_rows import write_rows


def run_with_timeout(function: Any, seconds: float = 10.0) -> Any:
    """``function()`` in a thread; fails the test if it has not returned after ``seconds``."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def nested(depth: int) -> Any:
    """A value of ``depth`` nested lists around a number."""
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def valid_request_row(call_index: int, parameters: Any) -> dict[str, Any]:
    return {
        "type": "request",
        "call_index": call_index,
        "model": {"id": "echo", "api": "echo", "provider": "echo"},
        "context": {
            "messages": [{"role": "user", "content": "hi", "timestamp": 1}],
            "tools": [{"name": "t", "description": "d", "parameters": parameters}],
        },
        "options": {},
    }


# --- only regular files ----------------------------------------------------------------------


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordingFileError) as info:
        run_with_timeout(lambda: read_recording(fifo))
    assert info.value.problem == "not a regular file (a FIFO)"
    assert info.value.path == str(fifo)
    assert "\n" not in str(info.value)


def test_dev_zero_is_refused_without_reading_it() -> None:
    """In a child process with its memory capped, so a reader that reads /dev/zero fails
    quickly instead of eating the machine's memory."""
    script = textwrap.dedent(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        from openprogram.errors import RecordingFileError
        from openprogram.provider_boundary.codec import read_recording
        try:
            read_recording("/dev/zero")
        except RecordingFileError as exc:
            print(exc.problem)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert result.stdout.strip() == "not a regular file (a character device)", result.stderr


def test_read_recording_bytes_is_the_same_door(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordingFileError, match="not a regular file"):
        run_with_timeout(lambda: read_recording_bytes(fifo))
    path = write_rows(tmp_path / "r.jsonl", [new_header()])
    assert read_recording_bytes(path) == path.read_bytes()
    data, info = read_recording_file(path)
    assert data == path.read_bytes()
    assert info.st_size == len(data)


def test_missing_file_through_the_door(tmp_path: Path) -> None:
    with pytest.raises(RecordingFileError, match="no such recording"):
        read_recording_bytes(tmp_path / "absent.jsonl")


def test_the_writer_refuses_a_fifo_without_blocking_or_writing(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(RecordingFileError, match="not a regular file"):
        run_with_timeout(lambda: RecordingWriter(fifo).open())


# --- one nesting limit: the reader -----------------------------------------------------------


def test_a_row_at_the_limit_reads(tmp_path: Path) -> None:
    # The row is level 1, context 2, tools 3, the tool 4: 124 more lists make 128.
    row = valid_request_row(0, nested(MAX_NESTING_DEPTH - 4))
    path = write_rows(tmp_path / "r.jsonl", [new_header(), row])
    assert read_recording(path, validate_events=False).calls[0].truncated


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH - 3, 300, 1_000, 2_000])
def test_a_row_nested_deeper_than_the_limit_is_refused_naming_the_line(
    tmp_path: Path, depth: int
) -> None:
    # Built as text: orjson does not write values this deep.
    deep = b"[" * depth + b"1" + b"]" * depth
    row = orjson.dumps(valid_request_row(0, 0)).replace(b'"parameters":0', b'"parameters":' + deep)
    path = tmp_path / "deep.jsonl"
    path.write_bytes(encode_row(new_header()) + row + b"\n" + encode_row({"type": "call_end"}))
    with pytest.raises(RecordingFileError) as info:
        read_recording(path, validate_events=False)
    assert info.value.line == 2
    assert f"nested deeper than {MAX_NESTING_DEPTH} levels" in info.value.problem
    assert "\n" not in str(info.value)


def test_only_rows_with_more_brackets_than_the_limit_are_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bracket count decides which rows are walked: ordinary rows never are."""
    import openprogram.recording.reader as reader_module

    walked: list[object] = []
    monkeypatch.setattr(
        reader_module, "exceeds_nesting_limit", lambda row: walked.append(row) or False
    )
    wide = [[1]] * MAX_NESTING_DEPTH  # many brackets, shallow
    rows = [new_header(), valid_request_row(0, {"a": [1]}), valid_request_row(1, wide)]
    read_recording(write_rows(tmp_path / "r.jsonl", rows), validate_events=False)
    assert [row["call_index"] for row in walked] == [1]  # type: ignore[index]


# --- one nesting limit: the writer -----------------------------------------------------------


async def test_the_recorder_refuses_a_request_nested_too_deep_before_the_call(
    tmp_path: Path,
) -> None:
    calls: list[object] = []

    class CountingEcho(EchoProvider):
        def stream(self, *args: Any, **kwargs: Any) -> Any:
            calls.append(args)
            return super().stream(*args, **kwargs)

    path = tmp_path / "r.jsonl"
    recorder = RecordingProvider(CountingEcho(), path)
    recorder.writer.open()
    before = path.read_bytes()
    deep_tool = Tool(name="t", description="d", parameters={"p": nested(MAX_NESTING_DEPTH)})
    context = Context(messages=[UserMessage(content="hi")], tools=[deep_tool])
    with pytest.raises(UnrecordableValueError) as info:
        async for _ in recorder.stream(ECHO_MODEL, context, StreamOptions()):
            pass
    assert info.value.field_path.startswith("context.tools[0].parameters.p[0][0]")
    assert "nested deeper than 128 levels" in str(info.value)
    assert "\n" not in str(info.value)
    assert len(str(info.value)) < 400
    assert isinstance(info.value, ValueError)
    assert path.read_bytes() == before  # nothing written
    assert calls == []  # the call never went out
    read_recording(path)


def test_what_the_writer_accepts_the_reader_reads(tmp_path: Path) -> None:
    """The writer's limit is the reader's: the deepest row it writes reads back."""
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    row = valid_request_row(0, nested(MAX_NESTING_DEPTH - 4))
    request = {key: row[key] for key in ("model", "context", "options")}
    assert writer.start_call(request) == 0
    with pytest.raises(UnrecordableValueError):
        writer.start_call({**request, "options": {"x": nested(MAX_NESTING_DEPTH)}})
    writer.close()
    assert len(read_recording(path, validate_events=False).calls) == 1


def test_an_event_nested_too_deep_is_refused_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open()
    before = path.read_bytes()
    row = {"type": "event", "call_index": 0, "event_index": 0, "event": {"x": nested(300)}}
    with pytest.raises(UnrecordableValueError) as info:
        writer.write_row(row)
    writer.close()
    assert info.value.call_index == 0
    assert info.value.field_path.startswith("event.x[0][0]")
    assert path.read_bytes() == before
