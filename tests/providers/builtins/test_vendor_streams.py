"""Reading a vendor's stream, for every vendor: each test runs once for each row of the vendor
table, against a real loopback server. What only one vendor's wire does is tested in
``test_openai_stream.py`` and ``test_anthropic_stream.py``."""

from __future__ import annotations

import pytest

from openprogram.providers import (
    TextContent,
    TextDeltaEvent,
    ThinkingContent,
    ThinkingEndEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from tests.support.provider_events import collect, last_done, last_error, types
from tests.support.sse_server import Script, ScriptedServer, cut
from tests.support.vendor_wire import Text, Thinking, ToolUse
from tests.support.vendors import HELLO, VENDORS, Vendor, vendor_id

each_vendor = pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA"
FINISHES = [
    pytest.param(
        vendor, finish, with_tool, reason, id=f"{vendor.api}-{finish}{'-tool' * with_tool}"
    )
    for vendor in VENDORS
    for finish, with_tool, reason in vendor.finish_reasons
]


@each_vendor
async def test_text_split_inside_json_and_utf8_characters(
    server: ScriptedServer, vendor: Vendor
) -> None:
    stream = vendor.wire.text_reply("Caf", "é au ", "漢字", " 🙂 done")
    server.serve(Script(cut(stream, every=9, inside="é漢🙂")))

    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))

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
        vendor.api,
        vendor.model.provider,
        vendor.model.id,
    )
    assert message.stop_reason == "stop"
    assert message.error_message is None


@each_vendor
async def test_a_tool_call_split_across_many_pieces(server: ScriptedServer, vendor: Vendor) -> None:
    pieces = ("", '{"q', '": "w', 'é漢", "n', '": [1, 2]}')
    stream = vendor.wire.reply(ToolUse("call_9x", "lookup", pieces))
    server.serve(Script(cut(stream, every=11, inside="é漢")))

    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))

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


@each_vendor
async def test_text_then_tool_calls_take_contiguous_content_indexes(
    server: ScriptedServer, vendor: Vendor
) -> None:
    stream = vendor.wire.reply(
        Text("Let me look."),
        ToolUse("call_a", "read_file", ('{"path": "a.txt"}',)),
        ToolUse("call_b", "list_dir", ('{"path": "."}',)),
        ToolUse("call_c", "now"),
    )
    server.serve(Script(cut(stream, every=23)))

    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))

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


@pytest.mark.parametrize(("vendor", "finish", "with_tool", "reason"), FINISHES)
async def test_finish_reasons(
    server: ScriptedServer, vendor: Vendor, finish: str, with_tool: bool, reason: str
) -> None:
    tool = [ToolUse("call_1", "t", ("{}",))] if with_tool else []
    server.serve(Script([vendor.wire.reply(Text("x"), *tool, finish=finish)]))

    done = last_done(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    assert done.reason == reason
    assert done.message.stop_reason == reason


@each_vendor
async def test_a_refused_reply_is_an_error_keeping_the_text(
    server: ScriptedServer, vendor: Vendor
) -> None:
    finish, words = vendor.refusal
    server.serve(Script([vendor.wire.reply(Text("Once upon"), finish=finish)]))

    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    assert error.reason == "error"
    assert error.error.stop_reason == "error"
    assert error.error.error_message is not None
    assert words in error.error.error_message
    assert error.error.text == "Once upon"


@each_vendor
async def test_thinking_then_text(server: ScriptedServer, vendor: Vendor) -> None:
    signature = SIGNATURE if vendor.signs_thinking else None
    stream = vendor.wire.reply(
        Thinking(("Let me th", "ink… 漢"), signature=signature), Text("Answer: 4")
    )
    server.serve(Script(cut(stream, every=31, inside="…漢")))

    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))

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
    end = events[4]
    assert isinstance(end, ThinkingEndEvent)
    assert (end.content, end.signature) == ("Let me think… 漢", signature)
    assert last_done(events).message.content == [
        ThinkingContent(thinking="Let me think… 漢", signature=signature),
        TextContent(text="Answer: 4"),
    ]


@each_vendor
async def test_invalid_tool_arguments_are_an_error_naming_the_tool(
    server: ScriptedServer, vendor: Vendor
) -> None:
    stream = vendor.wire.reply(Text("Calling."), ToolUse("call_7", "read_file", ('{"path": ',)))
    server.serve(Script([stream]))

    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    message = error.error.error_message
    assert message is not None
    assert message.startswith(
        f"{vendor.api}: the model sent invalid JSON arguments for tool 'read_file'"
    )
    assert "call_7" in message
    assert error.error.text == "Calling."


@each_vendor
async def test_arguments_that_are_not_an_object_are_an_error(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.reply(ToolUse("call_1", "t", ("[1, 2]",)))]))

    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    assert error.error.error_message is not None
    assert "not a JSON object" in error.error.error_message


@each_vendor
async def test_the_server_s_own_error_mid_stream_is_an_error_event_keeping_the_text(
    server: ScriptedServer, vendor: Vendor
) -> None:
    stream = vendor.wire.error_mid_stream("partial", "overloaded_error", "Overloaded")
    server.serve(Script([stream]))

    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    assert error.reason == "error"
    assert error.error.error_message == (
        f"{vendor.api}: {vendor.server_error}: overloaded_error: Overloaded"
    )
    assert error.error.text == "partial"


@each_vendor
async def test_a_stream_that_ends_without_finishing_the_reply_is_an_error(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.without_its_end(Text("cut"))]))

    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))

    assert error.error.error_message is not None
    assert "stream ended before the reply finished" in error.error.error_message
    assert error.error.text == "cut"
