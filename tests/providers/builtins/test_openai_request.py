"""openai-completions: the exact body and path of the request the server receives. What every
vendor's request does (headers, keys, the same bytes for the same input) is tested in
``test_vendor_requests.py``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from openprogram.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    StreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram.providers.builtins.openai_completions import chat_completions_body
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider
from tests.support.provider_events import collect, last_done
from tests.support.sse_server import Script, ScriptedServer
from tests.support.tool_sessions import LOOKUP_TOOL
from tests.support.vendor_wire import oa_text_reply
from tests.support.vendors import HELLO, OPENAI

NOW = Tool(name="now", description="The time.", parameters={"type": "object"})

CONVERSATION = Context(
    system_prompt="You are terse.",
    messages=[
        UserMessage(content="Look up 'café'.", timestamp=1),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="I should call lookup.", signature="sig"),
                TextContent(text="Looking."),
                ToolCall(id="call_1", name="lookup", arguments={"q": "café"}),
                ToolCall(id="call_2", name="now", arguments={}),
            ],
            api="openai-completions",
            provider="openai",
            model="gpt-test",
            stop_reason="toolUse",
            timestamp=2,
        ),
        ToolResultMessage(
            tool_call_id="call_1", tool_name="lookup", content="a drink", timestamp=3
        ),
        ToolResultMessage(
            tool_call_id="call_2", tool_name="now", content="noon", is_error=True, timestamp=4
        ),
        UserMessage(
            content=[
                TextContent(text="And this?"),
                ImageContent(data="aGVsbG8=", mime_type="image/png"),
            ],
            timestamp=5,
        ),
    ],
    tools=[LOOKUP_TOOL, NOW],
)

EXPECTED_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "Look up 'café'."},
    {
        "role": "assistant",
        "content": "Looking.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "lookup", "arguments": '{"q":"café"}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a drink"},
    {"role": "tool", "tool_call_id": "call_2", "content": "noon"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}},
        ],
    },
]

EXPECTED_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
            },
        },
    },
    {
        "type": "function",
        "function": {"name": "now", "description": "The time.", "parameters": {"type": "object"}},
    },
]


def provider(server: ScriptedServer) -> HttpVendorProvider:
    return OPENAI.provider(server.base_url)


async def test_the_whole_request_body(server: ScriptedServer) -> None:
    server.serve(Script([oa_text_reply("ok")]))
    options = SimpleStreamOptions(
        temperature=0.25,
        max_tokens=321,
        tool_choice="auto",
        metadata={"user_id": "u1"},
        session_id="s1",
        reasoning="high",
    )
    last_done(await collect(provider(server).stream_simple(OPENAI.model, CONVERSATION, options)))

    received = server.received[0]
    assert received.request_line == "POST /v1/chat/completions HTTP/1.1"
    expected = {
        "model": "gpt-test",
        "messages": EXPECTED_MESSAGES,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 321,
        "temperature": 0.25,
        "tools": EXPECTED_TOOLS,
        "tool_choice": "auto",
    }
    assert received.json() == expected
    # the exact bytes: keys in this order, compact JSON, UTF-8 as is
    assert received.body == orjson.dumps(expected)


async def test_max_tokens_defaults_to_the_model_and_reasoning_needs_a_reasoning_model(
    server: ScriptedServer,
) -> None:
    server.serve(Script([oa_text_reply("ok")]), Script([oa_text_reply("ok")]))
    thinker = OPENAI.model.model_copy(update={"reasoning": True, "max_tokens": 999})
    options = SimpleStreamOptions(reasoning="low")
    await collect(provider(server).stream_simple(thinker, HELLO, options))
    await collect(provider(server).stream_simple(OPENAI.model, HELLO, options))

    assert server.received[0].json() == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 999,
        "reasoning_effort": "low",
    }
    assert "reasoning_effort" not in server.received[1].json()


def test_tool_choice_forms() -> None:
    def choice(value: str) -> Any:
        body = chat_completions_body(
            OPENAI.model, HELLO, StreamOptions(tool_choice=value), base_url="", reasoning=None
        )
        return body["tool_choice"]

    assert [choice(c) for c in ("auto", "none", "required")] == ["auto", "none", "required"]
    assert choice("lookup") == {"type": "function", "function": {"name": "lookup"}}


@pytest.mark.parametrize(
    ("base_url", "field"),
    [
        ("https://api.openai.com/v1", "max_completion_tokens"),
        ("http://localhost:11434/v1", "max_tokens"),
        ("https://openrouter.ai/api/v1", "max_tokens"),
    ],
)
def test_openai_itself_gets_max_completion_tokens(base_url: str, field: str) -> None:
    body = chat_completions_body(
        OPENAI.model, HELLO, StreamOptions(), base_url=base_url, reasoning=None
    )
    assert body[field] == OPENAI.model.max_tokens
    assert {"max_tokens", "max_completion_tokens"} & set(body) == {field}


def test_images_from_tool_results_follow_the_tool_messages() -> None:
    context = Context(
        messages=[
            UserMessage(content="shoot", timestamp=1),
            AssistantMessage(
                content=[ToolCall(id="c1", name="screenshot")],
                api="openai-completions",
                provider="openai",
                model="gpt-test",
                timestamp=2,
            ),
            ToolResultMessage(
                tool_call_id="c1",
                tool_name="screenshot",
                content=[
                    TextContent(text="done"),
                    ImageContent(data="AAAA", mime_type="image/png"),
                ],
                timestamp=3,
            ),
            UserMessage(content="what is it?", timestamp=4),
        ]
    )
    body = chat_completions_body(
        OPENAI.model, context, StreamOptions(), base_url="", reasoning=None
    )
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool", "user", "user"]
    assert body["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
        ],
    }
    assert body["messages"][3]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,AAAA"},
    }


def test_an_empty_assistant_reply_is_left_out() -> None:
    failed = AssistantMessage(
        api="openai-completions",
        provider="openai",
        model="gpt-test",
        stop_reason="error",
        error_message="boom",
        timestamp=2,
    )
    context = Context(messages=[UserMessage(content="a", timestamp=1), failed])
    body = chat_completions_body(
        OPENAI.model, context, StreamOptions(), base_url="", reasoning=None
    )
    assert body["messages"] == [{"role": "user", "content": "a"}]
