"""anthropic-messages: what only the Messages stream does (usage in two events, block kinds and
event types it does not know, a delta for a block never opened), against a real loopback
server. What every vendor does is tested in ``test_vendor_streams.py``."""

from __future__ import annotations

from openprogram.providers import TextContent, Usage
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider
from tests.support.provider_events import collect, last_done, last_error, types
from tests.support.sse_server import Script, ScriptedServer, sse_event
from tests.support.vendor_wire import (
    an_block_start,
    an_block_stop,
    an_delta,
    an_message_delta,
    an_message_start,
    an_message_stop,
    an_reply,
    an_text_block,
)
from tests.support.vendors import ANTHROPIC, HELLO


def provider(server: ScriptedServer) -> HttpVendorProvider:
    return ANTHROPIC.provider(server.base_url)


async def test_usage_from_message_start_and_message_delta(server: ScriptedServer) -> None:
    stream = b"".join(
        [
            an_message_start(input_tokens=30, cache_read=200, cache_write=50),
            an_text_block(0, "ok"),
            an_message_delta("end_turn", output_tokens=12),
            an_message_stop(),
        ]
    )
    server.serve(Script([stream]))
    done = last_done(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    assert done.message.usage == Usage(
        input=30, output=12, cache_read=200, cache_write=50, total_tokens=292
    )


async def test_unknown_blocks_and_events_are_skipped(server: ScriptedServer) -> None:
    stream = an_reply(
        an_block_start(0, {"type": "redacted_thinking", "data": "abc"}),
        an_block_stop(0),
        sse_event({"type": "brand_new_event", "x": 1}, event="brand_new_event"),
        an_text_block(1, "visible"),
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
