"""openai-completions: reading the Chat Completions stream, against a real loopback server."""

from __future__ import annotations

import pytest

from openprogram.providers import (
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    Usage,
)
from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider
from tests.support.provider_events import collect, last_done, last_error, types
from tests.support.sse_server import Script, ScriptedServer, cut
from tests.support.vendor_wire import oa_chunk, oa_stream, oa_text_reply, oa_tool_piece, oa_usage
from tests.support.vendors import HELLO, OPENAI


def provider(server: ScriptedServer) -> OpenAICompletionsProvider:
    return OpenAICompletionsProvider(base_url=f"{server.base_url}/v1")


async def test_text_split_inside_json_and_utf8_characters(server: ScriptedServer) -> None:
    stream = oa_text_reply("Caf", "é au ", "漢字", " 🙂 done")
    server.serve(Script(cut(stream, every=9, inside="é漢🙂")))

    events = await collect(provider(server).stream(OPENAI.model, HELLO))

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
    assert all(getattr(e, "content_index", 0) == 0 for e in events)
    assert "".join(e.delta for e in events if isinstance(e, TextDeltaEvent)) == (
        "Café au 漢字 🙂 done"
    )
    done = last_done(events)
    assert done.reason == "stop"
    message = done.message
    assert message.content == [TextContent(text="Café au 漢字 🙂 done")]
    assert (message.api, message.provider, message.model) == (
        "openai-completions",
        "openai",
        "gpt-test",
    )
    assert message.stop_reason == "stop"
    assert message.error_message is None


async def test_a_tool_call_split_across_many_chunks(server: ScriptedServer) -> None:
    stream = oa_stream(
        oa_chunk({"role": "assistant", "content": None}),
        oa_tool_piece(0, call_id="call_", name="look"),
        oa_tool_piece(0, call_id="9x", name="up"),
        oa_tool_piece(0, arguments='{"q'),
        oa_tool_piece(0, arguments='": "w'),
        oa_tool_piece(0, arguments='é漢", "n'),
        oa_tool_piece(0, arguments='": [1, 2]}'),
        oa_chunk(finish="tool_calls"),
        oa_usage(),
    )
    server.serve(Script(cut(stream, every=11, inside="é漢")))

    events = await collect(provider(server).stream(OPENAI.model, HELLO))

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
    assert (start.content_index, start.id, start.name) == (0, "call_9x", "lookup")
    deltas = "".join(e.delta for e in events if isinstance(e, ToolCallDeltaEvent))
    assert deltas == '{"q": "wé漢", "n": [1, 2]}'
    end = events[-2]
    assert isinstance(end, ToolCallEndEvent)
    expected = ToolCall(id="call_9x", name="lookup", arguments={"q": "wé漢", "n": [1, 2]})
    assert end.tool_call == expected
    done = last_done(events)
    assert done.reason == "toolUse"
    assert done.message.content == [expected]
    assert done.message.stop_reason == "toolUse"


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


async def test_text_then_two_tool_calls_take_contiguous_content_indexes(
    server: ScriptedServer,
) -> None:
    stream = oa_stream(
        oa_chunk({"content": "Let me look."}),
        oa_tool_piece(0, call_id="call_a", name="read_file", arguments=""),
        oa_tool_piece(0, arguments='{"path": "a.txt"}'),
        oa_tool_piece(1, call_id="call_b", name="list_dir", arguments=""),
        oa_tool_piece(1, arguments='{"path": "."}'),
        oa_tool_piece(2, call_id="call_c", name="now"),
        oa_chunk(finish="tool_calls"),
        oa_usage(),
    )
    server.serve(Script(cut(stream, every=23)))

    events = await collect(provider(server).stream(OPENAI.model, HELLO))

    starts = [e for e in events if isinstance(e, ToolCallStartEvent)]
    assert [(e.content_index, e.id, e.name) for e in starts] == [
        (1, "call_a", "read_file"),
        (2, "call_b", "list_dir"),
        (3, "call_c", "now"),
    ]
    assert types(events).index("text_end") < types(events).index("toolcall_start")
    done = last_done(events)
    assert done.reason == "toolUse"
    assert done.message.content == [
        TextContent(text="Let me look."),
        ToolCall(id="call_a", name="read_file", arguments={"path": "a.txt"}),
        ToolCall(id="call_b", name="list_dir", arguments={"path": "."}),
        ToolCall(id="call_c", name="now", arguments={}),
    ]


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


@pytest.mark.parametrize(
    ("finish_reason", "with_tool", "reason"),
    [
        ("stop", False, "stop"),
        ("length", False, "length"),
        ("tool_calls", True, "toolUse"),
        ("stop", True, "toolUse"),  # servers that say "stop" after a tool call
    ],
)
async def test_finish_reasons(
    server: ScriptedServer, finish_reason: str, with_tool: bool, reason: str
) -> None:
    tool = [oa_tool_piece(0, call_id="call_1", name="t", arguments="{}")] if with_tool else []
    server.serve(
        Script([oa_stream(oa_chunk({"content": "x"}), *tool, oa_chunk(finish=finish_reason))])
    )
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.reason == reason
    assert done.message.stop_reason == reason


async def test_content_filter_ends_with_an_error_keeping_the_text(server: ScriptedServer) -> None:
    server.serve(
        Script([oa_stream(oa_chunk({"content": "Once upon"}), oa_chunk(finish="content_filter"))])
    )
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert error.reason == "error"
    assert error.error.stop_reason == "error"
    assert error.error.error_message is not None
    assert "content filter" in error.error.error_message
    assert error.error.text == "Once upon"


async def test_reasoning_content_becomes_thinking(server: ScriptedServer) -> None:
    stream = oa_stream(
        oa_chunk({"role": "assistant", "reasoning_content": "Let me th"}),
        oa_chunk({"reasoning_content": "ink… 漢"}),
        oa_chunk({"content": "Answer: 4"}),
        oa_chunk(finish="stop"),
        oa_usage(),
    )
    server.serve(Script(cut(stream, inside="…漢")))

    events = await collect(provider(server).stream(OPENAI.model, HELLO))

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
    assert [getattr(e, "content_index", None) for e in events[1:-1]] == [0, 0, 0, 0, 1, 1, 1]
    assert last_done(events).message.content == [
        ThinkingContent(thinking="Let me think… 漢"),
        TextContent(text="Answer: 4"),
    ]


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


async def test_invalid_tool_arguments_are_an_error_naming_the_tool(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_chunk({"content": "Calling."}),
                    oa_tool_piece(0, call_id="call_7", name="read_file", arguments='{"path": '),
                    oa_chunk(finish="tool_calls"),
                )
            ]
        )
    )
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    message = error.error.error_message
    assert message is not None
    assert message.startswith("openai-completions: the model sent invalid JSON arguments")
    assert "'read_file'" in message
    assert "call_7" in message
    assert error.error.text == "Calling."


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


async def test_arguments_that_are_not_an_object_are_an_error(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_tool_piece(0, call_id="call_1", name="t", arguments="[1, 2]"),
                    oa_chunk(finish="tool_calls"),
                )
            ]
        )
    )
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert error.error.error_message is not None
    assert "not a JSON object" in error.error.error_message


async def test_arguments_sent_as_an_object_are_accepted(server: ScriptedServer) -> None:
    piece = oa_tool_piece(0, call_id="call_1", name="t")
    piece["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] = {"a": 1}
    server.serve(Script([oa_stream(piece, oa_chunk(finish="tool_calls"))]))
    done = last_done(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert done.message.content == [ToolCall(id="call_1", name="t", arguments={"a": 1})]


async def test_an_error_chunk_mid_stream_is_an_error_event(server: ScriptedServer) -> None:
    server.serve(
        Script(
            [
                oa_stream(
                    oa_chunk({"content": "partial"}),
                    {"error": {"message": "The server had an error", "type": "server_error"}},
                    done=False,
                )
            ]
        )
    )
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert error.error.error_message == (
        "openai-completions: the server sent an error mid-stream: "
        "server_error: The server had an error"
    )
    assert error.error.text == "partial"


async def test_done_without_a_finish_reason_is_an_error(server: ScriptedServer) -> None:
    server.serve(Script([oa_stream(oa_chunk({"content": "cut"}))]))
    error = last_error(await collect(provider(server).stream(OPENAI.model, HELLO)))
    assert error.error.error_message is not None
    assert "stream ended before the reply finished" in error.error.error_message
    assert error.error.text == "cut"


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
