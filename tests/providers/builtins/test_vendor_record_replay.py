"""Record a vendor session against the loopback server, stop the server, replay it offline:
the same events, and no key in the recording."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import MissingApiKeyError
from openprogram.providers import (
    AssistantMessageEvent,
    Context,
    RecordingProvider,
    ReplayProvider,
    SimpleStreamOptions,
    ToolResultMessage,
    UserMessage,
    provider_scope,
    register_api_provider,
    stream_simple,
)
from tests.support.offline import offline
from tests.support.provider_events import collect, last_done, last_error
from tests.support.recording_rows import read_rows
from tests.support.sse_server import Script, ScriptedServer, error_script
from tests.support.tool_sessions import LOOKUP_TOOL
from tests.support.vendor_wire import ToolUse
from tests.support.vendors import VENDORS, Vendor, vendor_id

pytestmark = pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)

KEY = "sk-live-recorded-key-0123456789abcdef"


def without_timestamps(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timestamps(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [without_timestamps(v) for v in value]
    return value


def comparable(events: list[AssistantMessageEvent]) -> list[Any]:
    return [without_timestamps(event.model_dump(mode="json")) for event in events]


async def tool_session(vendor: Vendor, options: SimpleStreamOptions) -> list[list[Any]]:
    """The model calls ``lookup``, gets its result, and answers: two provider calls."""
    context = Context(
        system_prompt="Answer briefly.",
        messages=[UserMessage(content="What does 'café' mean?", timestamp=1)],
        tools=[LOOKUP_TOOL],
    )
    first = await collect(stream_simple(vendor.model, context, options))
    reply = last_done(first).message
    call = reply.tool_calls[0]
    context.messages += [
        reply,
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="a drink"),
    ]
    second = await collect(stream_simple(vendor.model, context, options))
    return [comparable(first), comparable(second)]


async def test_record_then_replay_offline(
    server: ScriptedServer, vendor: Vendor, tmp_path: Path
) -> None:
    server.serve(
        Script([vendor.wire.reply(ToolUse("call_1", "lookup", ('{"q": ', '"café"}')))]),
        Script([vendor.wire.text_reply("A ", "drink ☕.")]),
    )
    path = tmp_path / "session.jsonl"
    with provider_scope():
        register_api_provider(vendor.api, RecordingProvider(vendor.provider(server.base_url), path))
        recorded = await tool_session(vendor, SimpleStreamOptions(api_key=KEY, temperature=0))
    server.stop()
    assert len(server.received) == 2
    assert KEY not in path.read_text()

    with offline():
        replay = ReplayProvider(path)
        with provider_scope():
            register_api_provider(vendor.api, replay)
            replayed = await tool_session(vendor, SimpleStreamOptions(temperature=0))
    replay.assert_consumed()
    assert replayed == recorded
    assert recorded[1][-1]["message"]["content"] == [{"type": "text", "text": "A drink ☕."}]


async def test_an_http_error_replays_as_the_same_error_event(
    server: ScriptedServer, vendor: Vendor, tmp_path: Path
) -> None:
    path = tmp_path / "error.jsonl"
    context = Context(messages=[UserMessage(content="hi", timestamp=1)])
    server.serve(
        error_script(429, vendor.wire.error_body("Rate limit reached"), {"Retry-After": "7"})
    )
    with provider_scope():
        register_api_provider(vendor.api, RecordingProvider(vendor.provider(server.base_url), path))
        recorded = await collect(stream_simple(vendor.model, context))
    server.stop()
    assert "retry after 7 s" in (last_error(recorded).error.error_message or "")

    with offline(), provider_scope():
        replay = ReplayProvider(path)
        register_api_provider(vendor.api, replay)
        replayed = await collect(stream_simple(vendor.model, context))
    replay.assert_consumed()
    assert comparable(replayed) == comparable(recorded)


async def test_a_missing_key_is_recorded_as_the_call_error(vendor: Vendor, tmp_path: Path) -> None:
    path = tmp_path / "nokey.jsonl"
    remote = vendor.provider("https://api.example.test", api_key_env="NO_SUCH_KEY")
    events = RecordingProvider(remote, path).stream(vendor.model, Context(messages=[]))
    with pytest.raises(MissingApiKeyError):
        await anext(events)
    rows = read_rows(path)
    assert rows[-1]["type"] == "call_end"
    assert rows[-1]["outcome"] == "error"
    assert rows[-1]["error"]["type"] == "openprogram.errors.MissingApiKeyError"
    assert "NO_SUCH_KEY" in rows[-1]["error"]["message"]
