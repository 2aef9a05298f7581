"""Values a recording cannot hold (non-finite numbers) are refused when recording, naming the
field, so a run never writes a recording it cannot replay."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import OpenProgramError, RecordedProviderError, UnrecordableValueError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    EchoProvider,
    Model,
    RecordingProvider,
    ReplayProvider,
    StartEvent,
    StreamOptions,
    ToolCall,
    ToolCallEndEvent,
    ToolCallStartEvent,
    UserMessage,
)
from tests.support.provider_events import collect

HELLO = Context(messages=[UserMessage(content="hello")])


class CountingEcho(EchoProvider):
    def __init__(self) -> None:
        self.calls = 0

    def stream(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        return super().stream(*args, **kwargs)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        (StreamOptions(temperature=math.inf), "options.temperature"),
        (StreamOptions(temperature=-math.inf), "options.temperature"),
        (StreamOptions(temperature=math.nan), "options.temperature"),
        (
            StreamOptions(metadata={"run": {"scores": [1.0, math.nan]}}),
            "options.metadata.run.scores[1]",
        ),
    ],
)
async def test_a_non_finite_number_in_a_request_is_refused_before_the_call(
    tmp_path: Path, options: StreamOptions, field: str
) -> None:
    path = tmp_path / "r.jsonl"
    provider = CountingEcho()
    recorder = RecordingProvider(provider, path)
    recorder.writer.open()
    before = path.read_bytes()
    with pytest.raises(UnrecordableValueError) as info:
        await collect(recorder.stream(ECHO_MODEL, HELLO, options))
    error = info.value
    assert isinstance(error, OpenProgramError)
    assert isinstance(error, ValueError)
    assert error.field_path == field
    message = str(error)
    assert f"field {field} is " in message
    assert "JSON has no inf or NaN" in message
    assert "pass a finite number" in message
    assert "\n" not in message
    assert path.read_bytes() == before  # nothing written for that call
    assert provider.calls == 0  # and it never went out
    # The same run with a finite value records, and replays from its own recording.
    await collect(recorder.stream(ECHO_MODEL, HELLO, StreamOptions(temperature=0.5)))
    replay = ReplayProvider(path)
    await collect(replay.stream(ECHO_MODEL, HELLO, StreamOptions(temperature=0.5)))


def test_a_non_finite_model_field_is_named() -> None:
    from openprogram.recording.format import encode_recordable_row

    with pytest.raises(UnrecordableValueError, match=r"field model\.x is nan"):
        encode_recordable_row("r.jsonl", {"model": {"x": math.nan}})


def test_finite_numbers_and_nulls_pass() -> None:
    from openprogram.recording.format import encode_recordable_row

    row = {"options": {"temperature": None, "top_p": 0.0, "big": 1e308, "small": -1e-308}}
    assert encode_recordable_row("r.jsonl", row).endswith(b"\n")


class NanArguments:
    """A model whose tool call carries NaN in its arguments (as Python's json.loads allows)."""

    requires_credentials = False

    async def _events(self) -> AsyncIterator[AssistantMessageEvent]:
        call = ToolCall(id="t1", name="measure", arguments={"x": math.nan})
        yield StartEvent(api="nan", provider="nan", model="m")
        yield ToolCallStartEvent(content_index=0, id="t1", name="measure")
        yield ToolCallEndEvent(content_index=0, tool_call=call)
        message = AssistantMessage(content=[call], api="nan", provider="nan", model="m")
        yield DoneEvent(reason="toolUse", message=message)

    def stream(self, model: Model, context: Context, options: Any = None) -> Any:
        return self._events()

    stream_simple = stream


async def test_a_non_finite_number_in_an_event_ends_the_call_with_that_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    model = Model(id="m", api="nan", provider="nan")
    seen: list[AssistantMessageEvent] = []
    with pytest.raises(UnrecordableValueError) as info:
        async for event in RecordingProvider(NanArguments(), path).stream(model, HELLO):
            seen.append(event)
    assert info.value.field_path == "event.tool_call.arguments.x"
    assert info.value.call_index == 0
    assert [event.type for event in seen] == ["start", "toolcall_start"]

    call = read_recording(path).calls[0]
    assert [row["type"] for row in call.event_rows] == ["start", "toolcall_start"]
    assert call.outcome == "error"
    assert call.error is not None
    assert call.error.type == "openprogram.errors.UnrecordableValueError"
    # Replay ends the call the same way: the two events, then an equivalent error.
    replayed: list[AssistantMessageEvent] = []
    with pytest.raises(RecordedProviderError) as replayed_error:
        async for event in ReplayProvider(path).stream(model, HELLO):
            replayed.append(event)
    assert [event.type for event in replayed] == ["start", "toolcall_start"]
    assert "event.tool_call.arguments.x" in str(replayed_error.value)


async def test_a_non_finite_number_in_a_message_a_request_adds_is_named_at_its_place(
    tmp_path: Path,
) -> None:
    # The messages the previous request held are not walked again; the new one is.
    recorder = RecordingProvider(EchoProvider(), tmp_path / "r.jsonl")
    first = UserMessage(content="hello")
    await collect(recorder.stream(ECHO_MODEL, Context(messages=[first])))
    reply = AssistantMessage(
        content=[ToolCall(id="t1", name="score", arguments={"value": math.nan})],
        api="echo",
        provider="echo",
        model="echo",
    )
    with pytest.raises(UnrecordableValueError) as info:
        await collect(recorder.stream(ECHO_MODEL, Context(messages=[first, reply])))
    assert info.value.field_path == "context.messages[1].content[0].arguments.value"
