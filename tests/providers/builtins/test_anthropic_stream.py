"""anthropic-messages: reading the Messages stream, against a real loopback server."""

from __future__ import annotations

import pytest

from openprogram.providers import (
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingEndEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallStartEvent,
    Usage,
)
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from tests.support.provider_events import collect, last_done, last_error, types
from tests.support.sse_server import Script, ScriptedServer, cut, sse_event
from tests.support.vendor_wire import (
    PING,
    an_block_start,
    an_block_stop,
    an_delta,
    an_event,
    an_message_delta,
    an_message_start,
    an_message_stop,
    an_text_reply,
)
from tests.support.vendors import ANTHROPIC, HELLO


def provider(server: ScriptedServer) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(base_url=server.base_url)


def text_block(index: int, text: str) -> bytes:
    return b"".join(
        [
            an_block_start(index, {"type": "text", "text": ""}),
            an_delta(index, {"type": "text_delta", "text": text}),
            an_block_stop(index),
        ]
    )


def tool_block(index: int, call_id: str, name: str, *pieces: str) -> bytes:
    return b"".join(
        [
            an_block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
            *(an_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces),
            an_block_stop(index),
        ]
    )


def reply(*blocks: bytes, stop_reason: str = "end_turn") -> bytes:
    return b"".join([an_message_start(), *blocks, an_message_delta(stop_reason), an_message_stop()])


async def test_text_split_inside_json_and_utf8_characters(server: ScriptedServer) -> None:
    stream = an_text_reply("Caf", "é au ", "漢字", " 🙂 done")
    server.serve(Script(cut(stream, every=13, inside="é漢🙂")))

    events = await collect(provider(server).stream(ANTHROPIC.model, HELLO))

    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert "".join(e.delta for e in events if isinstance(e, TextDeltaEvent)) == (
        "Café au 漢字 🙂 done"
    )
    done = last_done(events)
    assert done.reason == "stop"
    assert done.message.content == [TextContent(text="Café au 漢字 🙂 done")]
    assert (done.message.api, done.message.provider, done.message.model) == (
        "anthropic-messages",
        "anthropic",
        "claude-test",
    )


async def test_usage_from_message_start_and_message_delta(server: ScriptedServer) -> None:
    stream = b"".join(
        [
            an_message_start(input_tokens=30, cache_read=200, cache_write=50),
            text_block(0, "ok"),
            an_message_delta("end_turn", output_tokens=12),
            an_message_stop(),
        ]
    )
    server.serve(Script([stream]))
    done = last_done(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert done.message.usage == Usage(
        input=30, output=12, cache_read=200, cache_write=50, total_tokens=292
    )


async def test_thinking_with_its_signature_then_text(server: ScriptedServer) -> None:
    stream = reply(
        an_block_start(0, {"type": "thinking", "thinking": ""}),
        an_delta(0, {"type": "thinking_delta", "thinking": "Two plus "}),
        an_delta(0, {"type": "thinking_delta", "thinking": "two… 漢"}),
        an_delta(0, {"type": "signature_delta", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"}),
        an_block_stop(0),
        text_block(1, "4"),
    )
    server.serve(Script(cut(stream, every=31, inside="…漢")))

    events = await collect(provider(server).stream(ANTHROPIC.model, HELLO))

    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    end = events[4]
    assert isinstance(end, ThinkingEndEvent)
    assert (end.content, end.signature) == ("Two plus two… 漢", "EqQBCgIYAhIM1gbcDa9GJwZA")
    assert last_done(events).message.content == [
        ThinkingContent(thinking="Two plus two… 漢", signature="EqQBCgIYAhIM1gbcDa9GJwZA"),
        TextContent(text="4"),
    ]


async def test_a_tool_call_split_across_many_deltas(server: ScriptedServer) -> None:
    stream = reply(
        tool_block(0, "toolu_01", "lookup", "", '{"q', '": "wé', '漢", "n": [1', ", 2]}"),
        stop_reason="tool_use",
    )
    server.serve(Script(cut(stream, every=17, inside="é漢")))

    events = await collect(provider(server).stream(ANTHROPIC.model, HELLO))

    assert types(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    start = events[1]
    assert isinstance(start, ToolCallStartEvent)
    assert (start.content_index, start.id, start.name) == (0, "toolu_01", "lookup")
    assert "".join(e.delta for e in events if isinstance(e, ToolCallDeltaEvent)) == (
        '{"q": "wé漢", "n": [1, 2]}'
    )
    done = last_done(events)
    assert done.reason == "toolUse"
    assert done.message.content == [
        ToolCall(id="toolu_01", name="lookup", arguments={"q": "wé漢", "n": [1, 2]})
    ]


async def test_text_and_two_tool_calls(server: ScriptedServer) -> None:
    stream = reply(
        text_block(0, "Let me look."),
        PING,
        tool_block(1, "toolu_a", "read_file", '{"path": "a.txt"}'),
        tool_block(2, "toolu_b", "now"),
        stop_reason="tool_use",
    )
    server.serve(Script(cut(stream, every=40)))

    events = await collect(provider(server).stream(ANTHROPIC.model, HELLO))

    starts = [e for e in events if isinstance(e, ToolCallStartEvent)]
    assert [(e.content_index, e.id) for e in starts] == [(1, "toolu_a"), (2, "toolu_b")]
    assert last_done(events).message.content == [
        TextContent(text="Let me look."),
        ToolCall(id="toolu_a", name="read_file", arguments={"path": "a.txt"}),
        ToolCall(id="toolu_b", name="now", arguments={}),
    ]


@pytest.mark.parametrize(
    ("stop_reason", "reason"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "toolUse"),
    ],
)
async def test_stop_reasons(server: ScriptedServer, stop_reason: str, reason: str) -> None:
    server.serve(Script([reply(text_block(0, "x"), stop_reason=stop_reason)]))
    done = last_done(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert done.reason == reason
    assert done.message.stop_reason == reason


async def test_a_refusal_is_an_error_keeping_the_text(server: ScriptedServer) -> None:
    server.serve(Script([reply(text_block(0, "I can't"), stop_reason="refusal")]))
    error = last_error(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert error.error.error_message is not None
    assert "refusal" in error.error.error_message
    assert error.error.text == "I can't"


async def test_an_error_event_carries_the_server_type_and_message(server: ScriptedServer) -> None:
    stream = b"".join(
        [
            an_message_start(),
            an_block_start(0, {"type": "text", "text": ""}),
            an_delta(0, {"type": "text_delta", "text": "Hel"}),
            an_event(
                {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            ),
        ]
    )
    server.serve(Script([stream]))
    error = last_error(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert error.reason == "error"
    assert error.error.error_message == (
        "anthropic-messages: the server sent an error: overloaded_error: Overloaded"
    )
    assert error.error.text == "Hel"


async def test_invalid_tool_input_is_an_error_naming_the_tool(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [reply(tool_block(0, "toolu_9", "write_file", '{"path": "a'), stop_reason="tool_use")]
        )
    )
    error = last_error(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert error.error.error_message is not None
    assert "invalid JSON arguments for tool 'write_file'" in error.error.error_message
    assert "toolu_9" in error.error.error_message


async def test_unknown_blocks_and_events_are_skipped(server: ScriptedServer) -> None:
    stream = reply(
        an_block_start(0, {"type": "redacted_thinking", "data": "abc"}),
        an_block_stop(0),
        sse_event({"type": "brand_new_event", "x": 1}, event="brand_new_event"),
        text_block(1, "visible"),
    )
    server.serve(Script([stream]))
    events = await collect(provider(server).stream(ANTHROPIC.model, HELLO))
    assert types(events) == ["start", "text_start", "text_delta", "text_end", "done"]
    assert events[1].content_index == 0  # type: ignore[union-attr]
    assert last_done(events).message.content == [TextContent(text="visible")]


async def test_a_delta_for_a_block_that_never_started_is_an_error(server: ScriptedServer) -> None:
    stream = b"".join([an_message_start(), an_delta(3, {"type": "text_delta", "text": "x"})])
    server.serve(Script([stream]))
    error = last_error(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert error.error.error_message is not None
    assert "content block 3 was never started" in error.error.error_message


async def test_no_message_stop_is_an_error(server: ScriptedServer) -> None:
    stream = b"".join([an_message_start(), text_block(0, "cut"), an_message_delta("end_turn")])
    server.serve(Script([stream]))
    error = last_error(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert error.error.error_message is not None
    assert "stream ended before the reply finished" in error.error.error_message
    assert error.error.text == "cut"
