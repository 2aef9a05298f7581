"""openai-completions: what only the Chat Completions stream does (tool call ids and names in
pieces, usage chunks, other servers' reasoning field, arguments cut at max_tokens), against a
real loopback server. What every vendor does is tested in ``test_vendor_streams.py``."""

from __future__ import annotations

from openprogram.providers import (
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolCallStartEvent,
    Usage,
)
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider
from tests.support.provider_events import collect, last_done, last_error, types
from tests.support.sse_server import Script, ScriptedServer, cut
from tests.support.vendor_wire import oa_chunk, oa_stream, oa_tool_piece, oa_usage
from tests.support.vendors import HELLO, OPENAI


def provider(server: ScriptedServer) -> HttpVendorProvider:
    return OPENAI.provider(server.base_url)


async def test_an_id_and_a_name_split_across_chunks_are_joined(server: ScriptedServer) -> None:
    stream = oa_stream(
        oa_chunk({"role": "assistant", "content": None}),
        oa_tool_piece(0, call_id="call_", name="look"),
        oa_tool_piece(0, call_id="9x", name="up"),
        oa_tool_piece(0, arguments='{"q": "x"}'),
        oa_chunk(finish="tool_calls"),
        oa_usage(),
    )
    server.serve(Script(cut(stream, every=11)))

    events = await collect(provider(server).stream(OPENAI.model, HELLO))

    start = events[1]
    assert isinstance(start, ToolCallStartEvent)
    assert (start.content_index, start.id, start.name) == (0, "call_9x", "lookup")
    expected = ToolCall(id="call_9x", name="lookup", arguments={"q": "x"})
    assert last_done(events).message.content == [expected]


async def test_an_id_and_name_repeated_in_every_chunk_are_kept_once(
    server: ScriptedServer,
) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_tool_piece(0, call_id="call_1", name="lookup", arguments=""),
                    oa_tool_piece(0, call_id="call_1", name="lookup", arguments='{"q":'),
                    oa_tool_piece(0, call_id="call_1", name="lookup", arguments=' "x"}'),
                    oa_chunk(finish="tool_calls"),
                )
            ]
        )
    )
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.content == [ToolCall(id="call_1", name="lookup", arguments={"q": "x"})]


async def test_usage_with_cached_tokens(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_chunk({"content": "ok"}),
                    oa_chunk(finish="stop"),
                    oa_usage(prompt=100, completion=9, cached=60),
                )
            ]
        )
    )
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.usage == Usage(input=40, output=9, cache_read=60, total_tokens=109)


async def test_a_usage_chunk_with_null_choices_and_no_done_line(server: ScriptedServer) -> None:
    # Some compatible servers send "choices": null in the usage chunk, or close without [DONE].
    usage = oa_usage(prompt=3, completion=2) | {"choices": None}
    server.serve(Script([oa_stream(oa_chunk({"content": "hi"}, finish="stop"), usage, done=False)]))
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.usage == Usage(input=3, output=2, total_tokens=5)
    assert done.message.text == "hi"


async def test_the_reasoning_field_of_other_servers_becomes_thinking(
    server: ScriptedServer,
) -> None:
    server.serve(
        Script(
            [oa_stream(oa_chunk({"reasoning": "hmm"}), oa_chunk({"content": "ok"}, finish="stop"))]
        )
    )
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.content == [ThinkingContent(thinking="hmm"), TextContent(text="ok")]


async def test_arguments_cut_by_max_tokens_say_so(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_tool_piece(0, call_id="call_1", name="write", arguments='{"text": "abc'),
                    oa_chunk(finish="length"),
                )
            ]
        )
    )
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert error.error.error_message is not None
    assert "'write'" in error.error.error_message
    assert "max_tokens" in error.error.error_message


async def test_arguments_sent_as_an_object_are_accepted(server: ScriptedServer) -> None:
    piece = oa_tool_piece(0, call_id="call_1", name="t")
    piece["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = {"a": 1}
    server.serve(Script([oa_stream(piece, oa_chunk(finish="tool_calls"))]))
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.content == [ToolCall(id="call_1", name="t", arguments={"a": 1})]


async def test_a_call_ended_before_an_invalid_one_is_still_streamed(
    server: ScriptedServer,
) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_tool_piece(0, call_id="call_1", name="good", arguments='{"a": 1}'),
                    oa_tool_piece(1, call_id="call_2", name="bad", arguments='{"a": '),
                    oa_chunk(finish="tool_calls"),
                )
            ]
        )
    )
    events = await collect(provider(server).stream(OPENAI.model, HELLO))
    assert types(events)[-2:] == ["toolcall_end", "error"]
    error = last_error(events)
    assert error.error.content[0] == ToolCall(id="call_1", name="good", arguments={"a": 1})
    assert error.error.error_message is not None
    assert "'bad'" in error.error.error_message
