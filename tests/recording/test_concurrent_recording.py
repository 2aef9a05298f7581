"""Several threads and processes recording into one file produce one valid recording."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import ECHO_MODEL, Context, EchoProvider, RecordingProvider, UserMessage
from openprogram.recording.writer import RecordingWriter

RECORD_25_CALLS = textwrap.dedent(
    """
    import asyncio, sys
    from openprogram.providers import (
        ECHO_MODEL, Context, EchoProvider, RecordingProvider, UserMessage,
    )

    async def main(path, worker):
        recorder = RecordingProvider(EchoProvider(), path)
        for n in range(25):
            context = Context(messages=[UserMessage(content=f"worker {worker} call {n}")])
            async for _ in recorder.stream_simple(ECHO_MODEL, context):
                await asyncio.sleep(0)

    asyncio.run(main(sys.argv[1], sys.argv[2]))
    """
)


def test_four_processes_share_one_recording(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    workers = [
        subprocess.Popen([sys.executable, "-c", RECORD_25_CALLS, str(path), str(worker)])
        for worker in range(4)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]

    recording = read_recording(path)
    assert [call.call_index for call in recording.calls] == list(range(100))
    assert all(call.outcome == "complete" for call in recording.calls)
    texts = sorted(call.request["context"]["messages"][0]["content"] for call in recording.calls)
    assert texts == sorted(f"worker {w} call {n}" for w in range(4) for n in range(25))
    for call in recording.calls:  # each call's events belong to its own request
        prompt = call.request["context"]["messages"][0]["content"]
        assert call.events[-1].message.text == f"echo:{prompt}"  # type: ignore[union-attr]


async def _record_calls(recorder: RecordingProvider, worker: int, count: int) -> None:
    for n in range(count):
        context = Context(messages=[UserMessage(content=f"thread {worker} call {n}")])
        _ = [event async for event in recorder.stream_simple(ECHO_MODEL, context)]


def test_threads_share_one_writer(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "threads.jsonl"
    recorder = RecordingProvider(EchoProvider(), path)
    threads = [
        threading.Thread(target=lambda w=w: asyncio.run(_record_calls(recorder, w, 20)))
        for w in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    recording = read_recording(path)
    assert [call.call_index for call in recording.calls] == list(range(80))


@pytest.mark.parametrize("calls_before", [0, 3])
def test_a_second_writer_continues_the_call_sequence(tmp_path: Path, calls_before: int) -> None:
    import asyncio

    path = tmp_path / "appended.jsonl"
    asyncio.run(_record_calls(RecordingProvider(EchoProvider(), path), 0, calls_before))
    writer = RecordingWriter(path)  # as a new process would open it
    assert writer.open() == calls_before
    request = {"model": {}, "context": {}, "options": {}}
    assert writer.start_call(request) == calls_before
    writer.write_row(
        {"type": "call_end", "call_index": calls_before, "event_count": 0, "outcome": "complete"}
    )
    writer.close()
    assert len(read_recording(path).calls) == calls_before + 1


def test_a_writer_continues_a_hand_formatted_recording(tmp_path: Path) -> None:
    path = tmp_path / "by-hand.jsonl"
    rows = [
        '{"type": "header", "format_version": 2}',
        '{"type": "request", "call_index": 0, "model": {}, "context": {}, "options": {}}',
        '{"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete"}',
        '{"type": "request", "call_index": 1, "model": {}, "context": {}, "options": {}}',
        '{"type": "call_end", "call_index": 1, "event_count": 0, "outcome": "complete"}',
    ]
    path.write_text("\n".join(rows) + "\n")
    writer = RecordingWriter(path)
    assert writer.open() == 2
    assert writer.start_call({"model": {}, "context": {}, "options": {}}) == 2
    writer.close()


def test_forget_writer_closes_and_drops_it(tmp_path: Path) -> None:
    from openprogram.recording.writer import forget_writer, writer_for

    path = tmp_path / "done.jsonl"
    first = writer_for(path)
    first.open()
    opened = first._file
    assert opened is not None
    descriptor = opened.fd
    forget_writer(path)
    assert writer_for(path) is not first
    assert first._file is None
    assert opened.fd == -1
    with pytest.raises(OSError, match="Bad file descriptor"):
        os.fstat(descriptor)  # closed (nothing else opened a file meanwhile)
