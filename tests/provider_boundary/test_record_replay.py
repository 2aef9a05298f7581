"""Recording at the registry boundary and replaying offline: what a recording holds, what replay
gives back, and how either fails."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordedProviderError, ReplayMismatch, UnconsumedCallsError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessageEvent,
    Context,
    EchoProvider,
    Model,
    RecordingProvider,
    ReplayProvider,
    SimpleStreamOptions,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextStartEvent,
    UserMessage,
    provider_scope,
    register_api_provider,
    stream_simple,
)
from openprogram.recording.call_digest import call_digest
from openprogram.recording.format import RECORDING_FORMAT_VERSION
from tests.support.offline import offline
from tests.support.recording_rows import read_rows, without_digest
from tests.support.tool_sessions import recording_into, tool_session


async def record_session(path: Path, **kwargs: Any) -> Any:
    with recording_into(path):
        return await tool_session(**kwargs)


async def test_tool_loop_records_the_documented_shape(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    _, replies = await record_session(path)
    assert replies[1].text == "echo:result-x"

    written = read_rows(path)
    assert written[0]["type"] == "header"
    assert written[0]["format_version"] == RECORDING_FORMAT_VERSION == 2
    for key in ("created_at", "recording_id", "openprogram_version", "redaction_version"):
        assert key in written[0]
    position = 1
    for call_index in (0, 1):
        request = written[position]
        assert request["type"] == "request"
        assert request["call_index"] == call_index
        sections = {"type", "call_index", "model", "context", "options"}
        # Call 1 repeats call 0's message and tool: it stores only what it adds.
        assert set(request) == (sections if call_index == 0 else {*sections, "base"})
        position += 1
        event_index = 0
        while written[position]["type"] == "event":
            assert written[position]["call_index"] == call_index
            assert written[position]["event_index"] == event_index
            event_index += 1
            position += 1
        end = written[position]
        assert without_digest(end) == {
            "type": "call_end",
            "call_index": call_index,
            "event_count": event_index,
            "outcome": "complete",
        }
        assert end["digest"]["call"] == call_digest(read_recording(path).calls[call_index])
        position += 1
    assert position == len(written)
    # call 0 emits the tool call; call 1 continues after the tool result
    assert written[1]["context"]["messages"][0]["content"] == '/tool lookup {"q": "x"}'
    second = written[1 + 1 + 5 + 1]
    assert second["base"] == {"call_index": 0, "context": {"messages": 1, "tools": 1}}
    assert [message["role"] for message in second["context"]["messages"]] == [
        "assistant",
        "toolResult",
    ]
    assert second["context"]["tools"] == []
    rebuilt = read_recording(path).calls[1].request["context"]
    assert [message["role"] for message in rebuilt["messages"]] == [
        "user",
        "assistant",
        "toolResult",
    ]
    assert rebuilt["tools"] == written[1]["context"]["tools"]


async def test_events_are_deltas_not_the_growing_message(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path)
    for row in read_rows(path):
        if row["type"] == "event" and row["event"]["type"] != "done":
            assert "message" not in row["event"]


async def test_replay_yields_the_same_events_with_sockets_disabled(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    recorded_context, recorded_replies = await record_session(path)

    provider = ReplayProvider(path)
    with offline(), provider_scope():
        register_api_provider("echo", provider)
        context, replies = await tool_session()
    provider.assert_consumed()
    assert [r.model_dump(exclude={"timestamp"}) for r in replies] == [
        r.model_dump(exclude={"timestamp"}) for r in recorded_replies
    ]
    assert len(context.messages) == len(recorded_context.messages)


async def test_replay_yields_exactly_the_recorded_events(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path)
    recording = read_recording(path)
    provider = ReplayProvider(path)
    context = Context(
        system_prompt="You are a test agent.",
        messages=[UserMessage.model_validate(recording.calls[0].request["context"]["messages"][0])],
        tools=recording.calls[0].request["context"]["tools"],
    )
    events = [e async for e in provider.stream_simple(ECHO_MODEL, context)]
    assert [e.model_dump(mode="json") for e in events] == recording.calls[0].event_rows


async def test_api_key_is_runtime_only(tmp_path: Path) -> None:
    path = tmp_path / "keyed.jsonl"
    key = "opk-this-is-a-long-runtime-key-1234"
    await record_session(path, options=SimpleStreamOptions(api_key=key, temperature=0.5))
    text = path.read_text()
    assert key not in text
    assert "api_key" not in text
    assert StreamOptions(api_key=key).model_dump(mode="json").get("api_key") is None

    provider = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", provider)
        await tool_session(options=SimpleStreamOptions(temperature=0.5))  # no key at all
    provider.assert_consumed()


KNOWN_KEY = "opk-live-4f9a8b7c6d5e4f3a2b1c"
SECRETS = {
    "bearer": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123",
    "cookie": "session=9f8e7d6c5b4a39281706",
    "user_text_key": "sk-ant-api03-ZyXwVuTsRqPoNmLkJiHg",
    "url_key": "u8Y7t6R5e4W3q2A1",
    "known": KNOWN_KEY,
}


def secret_request(bearer_key: str = SECRETS["bearer"]) -> tuple[Model, Context, Any]:
    model = ECHO_MODEL.model_copy(
        update={"headers": {"Authorization": f"Bearer {bearer_key}", "X-Trace": "keep-me"}}
    )
    text = (
        f"basic math; token limit reached; press any key. my key is {SECRETS['user_text_key']} "
        f"see https://api.example.test/v1?api_key={SECRETS['url_key']}&q=1 "
        f"and the known one {KNOWN_KEY} too"
    )
    context = Context(messages=[UserMessage(content=text)])
    options = SimpleStreamOptions(headers={"Cookie": SECRETS["cookie"]}, api_key=KNOWN_KEY)
    return model, context, options


async def test_no_secret_reaches_disk_and_the_recording_still_matches(tmp_path: Path) -> None:
    path = tmp_path / "secrets.jsonl"
    model, context, options = secret_request()
    provider = RecordingProvider(EchoProvider(), path)
    _ = [e async for e in provider.stream_simple(model, context, options)]

    text = path.read_text()
    for name, secret in SECRETS.items():
        assert secret not in text, name
    assert "[secret removed]" in text
    for kept in ("keep-me", "basic math", "token limit reached", "press any key", "X-Trace"):
        assert kept in text
    request = read_rows(path)[1]
    assert request["model"]["headers"]["Authorization"] == "[secret removed]"
    assert request["options"]["headers"]["Cookie"] == "[secret removed]"

    # The live request, carrying every real secret, matches the redacted recording.
    replay = ReplayProvider(path)
    _ = [e async for e in replay.stream_simple(model, context, options)]
    replay.assert_consumed()


async def test_known_key_from_the_environment_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "envkey-0123456789abcdef")
    path = tmp_path / "env.jsonl"
    provider = RecordingProvider(EchoProvider(), path)
    context = Context(messages=[UserMessage(content="the key envkey-0123456789abcdef leaked")])
    _ = [e async for e in provider.stream_simple(ECHO_MODEL, context)]
    assert "envkey-0123456789abcdef" not in path.read_text()


async def test_changed_tool_result_raises_a_two_line_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path, tool_result="echo:hi")
    provider = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", provider)
        with pytest.raises(ReplayMismatch) as caught:
            await tool_session(tool_result="echo:bye")
    error = caught.value
    assert isinstance(error, AssertionError)
    assert str(error) == (
        "replay mismatch at call 1, field context.messages[2].content[0].text:\n"
        "recorded 'echo:hi', incoming 'echo:bye'"
    )
    assert (error.call_index, error.field_path) == (1, "context.messages[2].content[0].text")
    assert (error.recorded, error.incoming) == ("echo:hi", "echo:bye")
    assert error.event_index is None
    # The mismatch did not consume call 1.
    assert provider.unconsumed_calls == [1]
    assert provider.mismatches == [error]


async def test_a_mismatch_does_not_consume_the_call(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path)
    provider = ReplayProvider(path)
    wrong = Context(messages=[UserMessage(content="something else")])
    with pytest.raises(ReplayMismatch) as caught:
        _ = [e async for e in provider.stream_simple(ECHO_MODEL, wrong)]
    assert caught.value.call_index == 0
    assert caught.value.field_path.startswith("context.")
    with provider_scope():
        register_api_provider("echo", provider)
        await tool_session()
    provider.assert_consumed()


async def test_a_call_past_the_end(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path)
    provider = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", provider)
        await tool_session()
        with pytest.raises(ReplayMismatch) as caught:
            await tool_session()
    assert caught.value.field_path == "call_index"
    assert caught.value.call_index == 2
    message = str(caught.value)
    assert message.startswith("replay mismatch at call 2, field call_index:\n")
    assert "recorded 2 calls" in message
    assert len(message.splitlines()) == 2


async def test_assert_consumed_names_the_calls_never_requested(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    await record_session(path)
    provider = ReplayProvider(path)
    provider.assert_consumed.__self__  # noqa: B018 - the method exists on the instance
    with pytest.raises(UnconsumedCallsError) as caught:
        provider.assert_consumed()
    assert caught.value.unconsumed == [0, 1]
    assert "2 of 2 recorded calls never requested" in str(caught.value)
    assert isinstance(caught.value, AssertionError)


def test_timestamps_are_not_compared(tmp_path: Path) -> None:
    path = tmp_path / "loop.jsonl"
    asyncio.run(record_session(path))
    provider = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", provider)
        asyncio.run(tool_session())  # new wall-clock timestamps on every message
    provider.assert_consumed()


class FailingProvider:
    """Streams two events, then fails like a dropped connection would."""

    requires_credentials = False

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def _events(self) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api="flaky", provider="flaky", model="m")
        yield TextStartEvent(content_index=0)
        raise self.error

    def stream(self, model: Model, context: Context, options: Any = None) -> Any:
        return self._events()

    stream_simple = stream


class UpstreamError(Exception):
    pass


FLAKY = Model(id="m", api="flaky", provider="flaky")
HELLO = Context(messages=[UserMessage(content="hello")])


@pytest.mark.parametrize(
    ("error", "expected_type"),
    [
        (
            ConnectionResetError("peer reset with sk-live-ABCDEFGHIJKLMNOPQRSTUV"),
            ConnectionResetError,
        ),
        (UpstreamError("upstream status 503"), RecordedProviderError),
    ],
)
async def test_a_provider_error_is_recorded_and_replayed(
    tmp_path: Path, error: Exception, expected_type: type[Exception]
) -> None:
    path = tmp_path / "error.jsonl"
    recorder = RecordingProvider(FailingProvider(error), path)
    seen: list[AssistantMessageEvent] = []
    with pytest.raises(type(error)):
        async for event in recorder.stream_simple(FLAKY, HELLO):
            seen.append(event)
    assert len(seen) == 2

    end = read_rows(path)[-1]
    assert end["outcome"] == "error"
    assert end["event_count"] == 2
    assert "sk-live-ABCDEFGHIJKLMNOPQRSTUV" not in path.read_text()
    recorded_type = end["error"]["type"]
    assert recorded_type.endswith(type(error).__qualname__)

    replayed: list[AssistantMessageEvent] = []
    with pytest.raises(expected_type) as caught:
        async for event in ReplayProvider(path).stream_simple(FLAKY, HELLO):
            replayed.append(event)
    assert [e.model_dump() for e in replayed] == [e.model_dump() for e in seen]
    assert str(caught.value) == end["error"]["message"]
    if isinstance(caught.value, RecordedProviderError):
        assert caught.value.original_type == recorded_type


async def test_a_consumer_that_stops_early_records_abandoned(tmp_path: Path) -> None:
    path = tmp_path / "abandoned.jsonl"
    recorder = RecordingProvider(EchoProvider(), path)
    events = recorder.stream_simple(ECHO_MODEL, HELLO)
    first = await anext(events)
    assert isinstance(first, StartEvent)
    await events.aclose()
    end = without_digest(read_rows(path)[-1])
    assert end == {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "abandoned"}

    # Replay gives the one recorded event, then says the recorded consumer stopped there.
    replayed = ReplayProvider(path).stream_simple(ECHO_MODEL, HELLO)
    assert isinstance(await anext(replayed), StartEvent)
    with pytest.raises(ReplayMismatch) as caught:
        await anext(replayed)
    assert caught.value.event_index == 1


async def test_stopping_after_the_final_event_is_complete(tmp_path: Path) -> None:
    path = tmp_path / "done.jsonl"
    recorder = RecordingProvider(EchoProvider(), path)
    async for event in recorder.stream_simple(ECHO_MODEL, HELLO):
        if event.type == "done":
            break
    await asyncio.sleep(0)  # let the loop finalize the abandoned generator
    assert read_recording(path).calls[0].outcome == "complete"


class PlainIterator:
    """An async iterator that is not a generator: it has no ``aclose()``."""

    def __init__(self) -> None:
        self.events: list[AssistantMessageEvent] = [
            StartEvent(),
            TextStartEvent(content_index=0),
            TextDeltaEvent(content_index=0, delta="plain"),
        ]

    def __aiter__(self) -> PlainIterator:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        if not self.events:
            raise StopAsyncIteration
        return self.events.pop(0)


class PlainProvider:
    requires_credentials = False

    def stream(self, model: Model, context: Context, options: Any = None) -> PlainIterator:
        return PlainIterator()

    stream_simple = stream


@pytest.mark.parametrize("stop_early", [False, True])
async def test_a_stream_without_aclose_records_fine(tmp_path: Path, stop_early: bool) -> None:
    path = tmp_path / "plain.jsonl"
    events = RecordingProvider(PlainProvider(), path).stream_simple(FLAKY, HELLO)
    received = []
    async for event in events:
        received.append(event)
        if stop_early:
            break
    if stop_early:
        await events.aclose()  # type: ignore[attr-defined]
    call = read_recording(path).calls[0]
    assert call.outcome == ("abandoned" if stop_early else "complete")
    assert len(call.events) == len(received)


async def test_files_are_private(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "rec.jsonl"
    old_umask = os.umask(0o022)
    try:
        await record_session(path)
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.parent.parent.stat().st_mode) == 0o700


async def test_recordings_on_one_path_share_one_call_sequence(tmp_path: Path) -> None:
    path = tmp_path / "shared.jsonl"
    first = RecordingProvider(EchoProvider(), path)
    second = RecordingProvider(EchoProvider(), path)
    assert first.writer is second.writer
    for provider in (first, second, first):
        _ = [e async for e in provider.stream_simple(ECHO_MODEL, HELLO)]
    assert [call.call_index for call in read_recording(path).calls] == [0, 1, 2]


async def test_recording_into_a_non_recording_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text("my own notes\n")
    recorder = RecordingProvider(EchoProvider(), path)
    from openprogram.errors import RecordingFileError

    with pytest.raises(RecordingFileError, match="not an openprogram recording"):
        _ = [e async for e in recorder.stream_simple(ECHO_MODEL, HELLO)]
    assert path.read_text() == "my own notes\n"


async def test_the_stream_helpers_pass_through_the_registry(tmp_path: Path) -> None:
    path = tmp_path / "registry.jsonl"
    with recording_into(path):
        events = [e async for e in stream_simple(ECHO_MODEL, HELLO)]
    assert events[-1].type == "done"
    assert len(read_recording(path).calls) == 1


def test_the_format_knows_every_event_type() -> None:
    from typing import get_args

    from openprogram.provider_boundary.codec import EVENT_TYPES
    from openprogram.providers.events import AssistantMessageEvent as EventUnion

    union = get_args(get_args(EventUnion)[0])
    assert {cls.model_fields["type"].default for cls in union} == EVENT_TYPES


class RefusingProvider:
    """Fails when asked to stream, before returning an iterator."""

    requires_credentials = False

    def stream(self, model: Model, context: Context, options: Any = None) -> Any:
        raise ValueError("refused at call time")

    stream_simple = stream


async def test_a_provider_failing_at_call_time_records_an_error_call(tmp_path: Path) -> None:
    path = tmp_path / "refused.jsonl"
    with pytest.raises(ValueError, match="refused at call time"):
        _ = [
            e async for e in RecordingProvider(RefusingProvider(), path).stream_simple(FLAKY, HELLO)
        ]
    call = read_recording(path).calls[0]
    assert (call.outcome, call.error.type if call.error else None) == ("error", "ValueError")
    with pytest.raises(ValueError, match="refused at call time"):
        _ = [e async for e in ReplayProvider(path).stream_simple(FLAKY, HELLO)]
