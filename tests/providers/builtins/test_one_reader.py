"""The built-in providers and the store's views read a vendor's stream through one reader
(:mod:`openprogram.vendors`): for each stream, the message the provider streams and the reply
``show`` puts back together from the same events agree on the text, the thinking, the tool
calls, the stop reason, the usage and the server's error.

The streams: the ones the provider tests send (text cut inside characters, thinking, tool
calls whose arguments arrive in pieces, a server's error mid-stream, every finish reason),
the recorded calls the store tests read, the shapes the two readers once read two ways (an id
and a name split across chunks, both reasoning fields at once, arguments sent as an object, a
refusal), and streams of any blocks (a property test). The provider answers in-process
through ``httpx.MockTransport``; the store reads the same bytes as the recording holds them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.http_boundary.sse import SseParser
from openprogram.providers import (
    AssistantMessage,
    DoneEvent,
    ErrorEvent,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from openprogram.recording.format import RecordedCall
from openprogram.vendors import http_call_parts
from openprogram.vendors.anthropic_messages import message_tokens
from openprogram.vendors.openai_chat import chat_tokens
from openprogram.vendors.reply import HttpReply, Tokens
from tests.support.http_exchange_rows import response, sse
from tests.support.provider_events import collect
from tests.support.recording_rows import Row
from tests.support.sse_server import sse_event
from tests.support.vendor_http_rows import (
    chat_completion_call,
    chat_stream_call,
    messages_overloaded_mid_stream_call,
    messages_stream_call,
    messages_whole_call,
)
from tests.support.vendor_wire import (
    Block,
    Text,
    Thinking,
    ToolUse,
    oa_chunk,
    oa_stream,
    oa_tool_piece,
    oa_usage,
)
from tests.support.vendors import ANTHROPIC, HELLO, OPENAI, VENDORS, Vendor

SERVER = "http://127.0.0.1:9"
"""Where the provider sends: nothing listens there, the mock transport answers."""
URLS = {OPENAI.api: f"{SERVER}/v1/chat/completions", ANTHROPIC.api: f"{SERVER}/v1/messages"}
TOKENS: dict[str, Callable[[dict[str, Any]], Tokens]] = {
    OPENAI.api: chat_tokens,
    ANTHROPIC.api: message_tokens,
}


@dataclass(frozen=True)
class Readings:
    """One stream as the provider streamed it, and as ``show`` reads it."""

    message: AssistantMessage
    reply: HttpReply


async def provider_message(vendor: Vendor, stream: bytes) -> AssistantMessage:
    """The message the provider's last event holds after reading ``stream``."""

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=stream)

    provider = vendor.provider_class(
        base_url=vendor.base_url(SERVER), transport=httpx.MockTransport(answer)
    )
    options = StreamOptions(api_key="sk-test-0123456789abcdef")
    final = (await collect(provider.stream(vendor.model, HELLO, options)))[-1]
    assert isinstance(final, DoneEvent | ErrorEvent)
    return final.message if isinstance(final, DoneEvent) else final.error


def store_reply(vendor: Vendor, stream: bytes) -> HttpReply:
    """The reply ``show`` reads from a recorded call that received ``stream``."""
    parser = SseParser()
    events = parser.feed(stream.decode()) + parser.finish()
    rows: list[Row] = [response()]
    for event in events:
        try:
            data: Any = orjson.loads(event["data"])
        except orjson.JSONDecodeError:
            data = event["data"]
        rows.append(sse(data, event.get("event")))
    call = RecordedCall(
        call_index=0,
        line=1,
        request={"method": "POST", "url": URLS[vendor.api], "headers": {}, "body": {}},
        event_rows=rows,
        outcome="complete",
        boundary="http",
    )
    return http_call_parts(call)[1]


def read_both(vendor: Vendor, stream: bytes) -> Readings:
    return Readings(asyncio.run(provider_message(vendor, stream)), store_reply(vendor, stream))


def assert_they_agree(vendor: Vendor, stream: bytes) -> Readings:
    """The provider's message and the store's reply of ``stream`` say the same."""
    both = read_both(vendor, stream)
    message, reply = both.message, both.reply
    blocks = message.content
    texts = [block.text for block in blocks if isinstance(block, TextContent)]
    thinking = [block.thinking for block in blocks if isinstance(block, ThinkingContent)]
    calls = [(c.id, c.name, c.arguments) for c in blocks if isinstance(c, ToolCall)]
    assert [text for text in texts if text] == [
        "".join(pieces) for pieces in reply.text.values() if "".join(pieces)
    ]
    assert [text for text in thinking if text] == [
        "".join(pieces) for pieces in reply.thinking.values() if "".join(pieces)
    ]
    if message.stop_reason != "error":
        assert calls == [(t.id, t.name, t.arguments()) for t in reply.tools.values()]
        assert message.stop_reason == reply.finish
        assert reply.error is None
    elif reply.error is not None:  # the server's own error ends the stream there
        assert message.error_message is not None
        assert message.error_message.endswith(f": {reply.error}")
    else:  # the provider stops at what it refuses, the store reads on
        return both
    assert message.usage == Usage(**asdict(TOKENS[vendor.api](reply.usage or {})))
    return both


def wire_streams(vendor: Vendor) -> dict[str, bytes]:
    """The streams the provider tests send, for ``vendor``."""
    wire = vendor.wire
    signature = "EqQBCgIYAhIM1gbcDa9GJwZA" if vendor.signs_thinking else None
    streams = {
        "text cut inside characters": wire.text_reply("Caf", "é au ", "漢字", " 🙂 done"),
        "thinking then text": wire.reply(
            Thinking(("Let me th", "ink… 漢"), signature=signature), Text("Answer: 4")
        ),
        "tool calls with arguments in pieces": wire.reply(
            Text("Let me look."),
            ToolUse("call_a", "read_file", ("", '{"pa', 'th": "a', '.txt"}')),
            ToolUse("call_b", "list_dir", ('{"path": "."}',)),
            ToolUse("call_c", "now"),
        ),
        "a server's error mid-stream": wire.error_mid_stream(
            "partial", "overloaded_error", "Overloaded"
        ),
        "invalid arguments": wire.reply(Text("Calling."), ToolUse("call_7", "t", ('{"a": ',))),
        "no end": wire.without_its_end(Text("cut")),
        "only a beginning": wire.text_beginning("Hello", ", wor"),
    }
    for finish, with_tool, _ in vendor.finish_reasons:
        tool = [ToolUse("call_1", "t", ("{}",))] if with_tool else []
        streams[f"finish {finish}{' after a tool' * with_tool}"] = wire.reply(
            Text("x"), *tool, finish=finish
        )
    refusal, _ = vendor.refusal
    streams["refused"] = wire.reply(Text("Once upon"), finish=refusal)
    return streams


def recorded_stream(rows: list[Row]) -> bytes:
    """The bytes a recorded call's SSE events were."""
    payloads = [row["event"] for row in rows if row.get("type") == "event"]
    return b"".join(
        sse_event(payload["data"], event=payload.get("event"))
        for payload in payloads
        if payload.get("type") == "sse"
    )


OPENAI_ONLY = {
    "an id and a name split across chunks": oa_stream(
        oa_chunk({"role": "assistant", "content": None}),
        oa_tool_piece(0, call_id="call_", name="look"),
        oa_tool_piece(0, call_id="9x", name="up"),
        oa_tool_piece(0, arguments='{"q": "x"}'),
        oa_chunk(finish="tool_calls"),
        oa_usage(prompt=100, completion=9, cached=60),
    ),
    "both reasoning fields at once": oa_stream(
        oa_chunk({"reasoning_content": "hmm", "reasoning": "hmm"}),
        oa_chunk({"content": "ok"}, finish="stop"),
    ),
    "arguments sent as an object": oa_stream(
        oa_chunk({"tool_calls": [{"index": 0, "id": "c", "function": {"arguments": {"a": 1}}}]}),
        oa_chunk(finish="tool_calls"),
    ),
    "a refusal": oa_stream(oa_chunk({"refusal": "I can't."}), oa_chunk(finish="stop")),
    "text after the finish reason": oa_stream(
        oa_chunk({"content": "done"}, finish="stop"), oa_chunk({"content": " and more"})
    ),
    "a recorded stream": recorded_stream(chat_stream_call(0)),
}
ANTHROPIC_ONLY = {
    "a recorded stream": recorded_stream(messages_stream_call(0)),
    "a recorded error mid-stream": recorded_stream(messages_overloaded_mid_stream_call(0)),
}
CASES = [
    pytest.param(vendor, stream, id=f"{vendor.api}-{name}")
    for vendor in VENDORS
    for name, stream in wire_streams(vendor).items()
] + [
    pytest.param(vendor, stream, id=f"{vendor.api}-{name}")
    for vendor, streams in ((OPENAI, OPENAI_ONLY), (ANTHROPIC, ANTHROPIC_ONLY))
    for name, stream in streams.items()
]


@pytest.mark.parametrize(("vendor", "stream"), CASES)
def test_the_provider_and_the_store_read_a_stream_alike(vendor: Vendor, stream: bytes) -> None:
    assert_they_agree(vendor, stream)


def test_the_recorded_streams_are_read_whole() -> None:
    """The agreement above is not an agreement on nothing."""
    openai = read_both(OPENAI, OPENAI_ONLY["a recorded stream"])
    assert openai.message.text == "Let me check the weather."
    assert [call.name for call in openai.message.tool_calls] == ["get_weather"]
    assert (openai.message.stop_reason, openai.reply.stop_reason) == ("toolUse", "tool_calls")
    anthropic = read_both(ANTHROPIC, ANTHROPIC_ONLY["a recorded stream"])
    assert anthropic.message.stop_reason == "toolUse"
    assert anthropic.message.usage.input == 412
    overloaded = read_both(ANTHROPIC, ANTHROPIC_ONLY["a recorded error mid-stream"])
    assert overloaded.message.error_message == (
        "anthropic-messages: the server sent an error: overloaded_error: Overloaded"
    )
    assert overloaded.reply.error == "overloaded_error: Overloaded"


def test_a_split_name_and_a_refusal_are_read_as_the_provider_reads_them() -> None:
    split = read_both(OPENAI, OPENAI_ONLY["an id and a name split across chunks"])
    assert split.reply.tool_calls() == [("lookup", {"q": "x"})]
    assert split.message.usage == Usage(input=40, output=9, cache_read=60, total_tokens=109)
    refusal = read_both(OPENAI, OPENAI_ONLY["a refusal"])
    assert (refusal.message.text, refusal.reply.reply_text) == ("I can't.", "I can't.")
    both = read_both(OPENAI, OPENAI_ONLY["both reasoning fields at once"])
    assert both.reply.thinking_text == "hmm"


def test_a_whole_reply_means_what_its_stream_would() -> None:
    """A whole completion or message is read by the same vendor module, into the same
    pieces: its stop reason means what a stream's would."""
    for rows in (chat_completion_call(1), messages_whole_call(1)):
        call = RecordedCall(
            call_index=1,
            line=1,
            request=rows[0],
            event_rows=[row["event"] for row in rows if row.get("type") == "event"],
            outcome="complete",
            boundary="http",
        )
        reply = http_call_parts(call)[1]
        assert (reply.finish, reply.tool_calls(), reply.error) == ("stop", [], None)
        assert reply.reply_text == "It's 14 °C and overcast in Paris."


# -- streams of any blocks ------------------------------------------------------------------

PIECES = st.lists(st.text(max_size=6), min_size=1, max_size=3)
JSON_OBJECTS = st.dictionaries(st.sampled_from(["a", "q", "é"]), st.integers(-3, 3), max_size=2)


@st.composite
def tool_uses(draw: st.DrawFn) -> ToolUse:
    text = orjson.dumps(draw(JSON_OBJECTS)).decode()
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=3)))
    pieces = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    number = draw(st.integers(0, 99))
    return ToolUse(f"call_{number}", f"tool_{number}", tuple(pieces))


BLOCKS = st.lists(
    st.one_of(
        PIECES.map(lambda pieces: Text(*pieces)),
        PIECES.map(lambda pieces: Thinking(tuple(pieces), signature="sig")),
        tool_uses(),
    ),
    max_size=4,
)


@pytest.mark.parametrize("vendor", VENDORS, ids=lambda vendor: vendor.api)
@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(blocks=BLOCKS)
def test_any_reply_is_read_alike(vendor: Vendor, blocks: list[Block]) -> None:
    assert_they_agree(vendor, vendor.wire.reply(*blocks))
