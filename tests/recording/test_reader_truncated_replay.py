"""Replay of a recording whose last call was cut short: the complete calls are served, the
cut one raises when it is reached."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.errors import RecordingFileError, RecordingTruncatedError, ReplayMismatch
from openprogram.provider_boundary.codec import (
    read_recording,
)
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ReplayProvider,
    UserMessage,
    complete_simple,
)
from tests.support.recording_rows import (
    call_end,
    two_calls,
    without_digest,
    write_rows,
)
from tests.support.tool_sessions import recording_into

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
    assert without_digest(orjson.loads(lines[-1])) == call_end(1, 5)
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
    lines = two_calls()
    lines[3] = "{not json"
    path = write_rows(tmp_path / "r.jsonl", lines)
    with pytest.raises(RecordingFileError) as info:
        ReplayProvider(path)
    assert info.value.line == 4
