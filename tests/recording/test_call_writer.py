"""The writer writes any boundary's call through one API (``open_call`` → ``write_event`` →
``end_call``), in one call sequence per file, with the same guarantees for every boundary."""

from __future__ import annotations

import asyncio
import math
import threading
from pathlib import Path

import pytest

from openprogram.errors import UnrecordableValueError
from openprogram.providers import ECHO_MODEL, Context, EchoProvider, RecordingProvider, UserMessage
from openprogram.recording.format import RecordedError
from openprogram.recording.reader import read_recording
from openprogram.recording.writer import RecordingWriter, writer_for
from openprogram.store.summary import summarize_recording
from tests.support.http_call_rows import chat_request, chunk

SSE = {"content-type": "text/event-stream"}
RESPONSE = {"type": "http_response", "status": 200, "headers": SSE}


def test_an_http_call_is_written_row_by_row_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "http.jsonl"
    writer = RecordingWriter(path)
    call = writer.open_call(chat_request())
    call.write_event(RESPONSE)
    call.write_event({"type": "sse", "data": chunk("Hi")})
    call.end_call("error", error=RecordedError("httpx2.ReadTimeout", "timed out"))
    writer.close()

    recording = read_recording(path)
    assert recording.header["features"] == [
        "http",
        "tapes",
        "request_deltas",
        "not_recorded",
        "eventstream",
        "raw_text",
    ]
    [recorded] = recording.calls
    assert recorded.boundary == "http"
    assert recorded.request["body"] == chat_request()["body"]
    assert recorded.event_rows == [RESPONSE, {"type": "sse", "data": chunk("Hi")}]
    assert (recorded.outcome, recorded.error) == (
        "error",
        RecordedError("httpx2.ReadTimeout", "timed out"),
    )
    lines = path.read_bytes().splitlines()
    assert lines[1].startswith(b'{"type":"request","call_index":0,"boundary":"http",')


def test_events_written_together_are_the_lines_written_one_by_one(tmp_path: Path) -> None:
    events = [RESPONSE, *({"type": "sse", "data": chunk(word)} for word in ("a", "b", "c"))]
    for name, together in (("apart", False), ("together", True)):
        writer = RecordingWriter(tmp_path / f"{name}.jsonl")
        call = writer.open_call(chat_request())
        if together:
            call.write_events(events[:1])
            call.write_events(events[1:])
        else:
            for event in events:
                call.write_event(event)
        assert call.event_count == 4
        call.end_call("complete")
        writer.close()
    apart, together = (
        (tmp_path / f"{name}.jsonl").read_bytes().splitlines()[1:] for name in ("apart", "together")
    )
    assert apart == together
    summary = summarize_recording(tmp_path / "together.jsonl")
    assert (summary.valid, summary.events) == (True, 4)


def test_a_call_ends_once_and_takes_no_event_after(tmp_path: Path) -> None:
    call = RecordingWriter(tmp_path / "r.jsonl").open_call(chat_request())
    call.end_call("abandoned")
    call.end_call("complete")  # ignored: a call ends once
    assert call.ended
    with pytest.raises(RuntimeError, match="call 0 has ended"):
        call.write_event(RESPONSE)
    [recorded] = read_recording(tmp_path / "r.jsonl").calls
    assert recorded.outcome == "abandoned"


def test_an_event_a_recording_cannot_hold_is_refused_and_nothing_is_written(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    call = RecordingWriter(path).open_call(chat_request())
    before = path.read_bytes()
    with pytest.raises(UnrecordableValueError) as caught:
        call.write_event({"type": "sse", "data": {"logprob": math.nan}})
    assert caught.value.field_path == "event.data.logprob"
    assert caught.value.call_index == 0
    assert path.read_bytes() == before
    call.write_event(RESPONSE)  # the call goes on: the refused event took no index
    call.end_call("complete")
    [recorded] = read_recording(path).calls
    assert recorded.event_rows == [RESPONSE]


def test_a_request_a_recording_cannot_hold_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open()
    before = path.read_bytes()
    with pytest.raises(UnrecordableValueError, match=r"field body\.temperature is inf"):
        writer.open_call(chat_request(temperature=math.inf))
    assert path.read_bytes() == before


async def test_provider_and_http_calls_share_one_call_sequence(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    recorder = RecordingProvider(EchoProvider(), path)

    def http_calls(count: int) -> None:
        for _ in range(count):
            call = writer_for(path).open_call(chat_request())
            call.write_event(RESPONSE)
            call.end_call("complete")

    async def provider_calls(count: int) -> None:
        for n in range(count):
            context = Context(messages=[UserMessage(content=f"call {n}")])
            _ = [event async for event in recorder.stream_simple(ECHO_MODEL, context)]

    threads = [threading.Thread(target=http_calls, args=(10,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    await asyncio.gather(provider_calls(10), asyncio.to_thread(http_calls, 10))
    for thread in threads:
        thread.join()

    recording = read_recording(path)
    assert [call.call_index for call in recording.calls] == list(range(50))
    boundaries = [call.boundary for call in recording.calls]
    assert (boundaries.count("http"), boundaries.count("provider")) == (40, 10)
    assert all(call.outcome == "complete" for call in recording.calls)


def test_a_call_cut_off_by_a_crash_is_repaired_before_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    call = RecordingWriter(path).open_call(chat_request())
    call.write_event(RESPONSE)
    with path.open("ab") as file:  # a writer killed mid-row
        file.write(b'{"type":"event","call_index":0,"event_index":1,"event":{"type":"sse","da')

    second = RecordingWriter(path).open_call(chat_request("again"))  # as a new process
    second.end_call("complete")

    first, again = read_recording(path).calls
    assert first.truncated
    assert first.event_rows == [RESPONSE]
    assert (again.call_index, again.outcome) == (1, "complete")
