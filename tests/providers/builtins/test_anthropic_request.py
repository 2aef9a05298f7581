"""anthropic-messages: the exact request the server receives (body, path, headers)."""

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
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from openprogram.providers.builtins.anthropic_request import messages_body
from tests.support.provider_events import collect, last_done
from tests.support.sse_server import Script, ScriptedServer
from tests.support.vendor_wire import an_text_reply
from tests.support.vendors import ANTHROPIC, HELLO

LOOKUP = Tool(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)

CONVERSATION = Context(
    system_prompt="You are terse.",
    messages=[
        UserMessage(content="Look up 'café' twice.", timestamp=1),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="Two lookups.", signature="sig-1"),
                ThinkingContent(thinking="unsigned, from elsewhere"),
                TextContent(text="Looking."),
                ToolCall(id="toolu_1", name="lookup", arguments={"q": "café"}),
                ToolCall(id="toolu_2", name="lookup", arguments={"q": "cafe"}),
            ],
            api="anthropic-messages",
            provider="anthropic",
            model="claude-test",
            stop_reason="toolUse",
            timestamp=2,
        ),
        ToolResultMessage(
            tool_call_id="toolu_1", tool_name="lookup", content="a drink", timestamp=3
        ),
        ToolResultMessage(
            tool_call_id="toolu_2",
            tool_name="lookup",
            content=[
                TextContent(text="see image"),
                ImageContent(data="AAAA", mime_type="image/png"),
            ],
            is_error=True,
            timestamp=4,
        ),
        UserMessage(
            content=[
                TextContent(text="And this?"),
                ImageContent(data="QkJC", mime_type="image/jpeg"),
            ],
            timestamp=5,
        ),
    ],
    tools=[LOOKUP],
)

EXPECTED_MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Look up 'café' twice."},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Two lookups.", "signature": "sig-1"},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "café"}},
            {"type": "tool_use", "id": "toolu_2", "name": "lookup", "input": {"q": "cafe"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "a drink",
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": [
                    {"type": "text", "text": "see image"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                    },
                ],
                "is_error": True,
            },
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "And this?"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/jpeg", "data": "QkJC"},
            },
        ],
    },
]


def provider(server: ScriptedServer) -> AnthropicMessagesProvider:
    return AnthropicMessagesProvider(base_url=server.base_url)


async def test_the_whole_request_body(server: ScriptedServer) -> None:
    server.serve(Script([an_text_reply("ok")]))
    options = StreamOptions(
        temperature=0.5, max_tokens=500, tool_choice="required", metadata={"user_id": "u-1"}
    )
    last_done(await collect(provider(server).stream(ANTHROPIC.model, CONVERSATION, options)))

    received = server.received[0]
    assert received.request_line == "POST /v1/messages HTTP/1.1"
    expected = {
        "model": "claude-test",
        "max_tokens": 500,
        "stream": True,
        "system": "You are terse.",
        "messages": EXPECTED_MESSAGES,
        "tools": [
            {
                "name": "lookup",
                "description": "Look a word up.",
                "input_schema": {
                    "type": "object",
                    "properties": {"q": {"type": "string"}},
                    "required": ["q"],
                },
            }
        ],
        "tool_choice": {"type": "any"},
        "temperature": 0.5,
        "metadata": {"user_id": "u-1"},
    }
    assert received.json() == expected
    assert received.body == orjson.dumps(expected)


async def test_reasoning_turns_on_thinking_for_a_reasoning_model(server: ScriptedServer) -> None:
    server.serve(Script([an_text_reply("ok")]), Script([an_text_reply("ok")]))
    thinker = ANTHROPIC.model.model_copy(update={"reasoning": True, "max_tokens": 2000})
    options = SimpleStreamOptions(reasoning="medium")
    await collect(provider(server).stream_simple(thinker, HELLO, options))
    await collect(provider(server).stream_simple(ANTHROPIC.model, HELLO, options))

    assert server.received[0].json() == {
        "model": "claude-test",
        "max_tokens": 2000 + 8192,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": {"type": "enabled", "budget_tokens": 8192},
    }
    plain = server.received[1].json()
    assert "thinking" not in plain
    assert plain["max_tokens"] == ANTHROPIC.model.max_tokens


@pytest.mark.parametrize(
    ("level", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 16384)]
)
def test_thinking_budgets(level: Any, budget: int) -> None:
    thinker = ANTHROPIC.model.model_copy(update={"reasoning": True})
    body = messages_body(thinker, HELLO, StreamOptions(max_tokens=100), reasoning=level)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 100 + budget


def test_tool_choice_forms() -> None:
    def choice(value: str) -> Any:
        return messages_body(
            ANTHROPIC.model, HELLO, StreamOptions(tool_choice=value), reasoning=None
        )["tool_choice"]

    assert choice("auto") == {"type": "auto"}
    assert choice("none") == {"type": "none"}
    assert choice("required") == {"type": "any"}
    assert choice("lookup") == {"type": "tool", "name": "lookup"}


async def test_headers_with_a_key(server: ScriptedServer) -> None:
    server.serve(Script([an_text_reply("ok")]))
    model = ANTHROPIC.model.model_copy(update={"headers": {"anthropic-beta": "x-2025"}})
    options = StreamOptions(api_key="sk-ant-xyz", headers={"X-Call": "c"})
    await collect(provider(server).stream(model, HELLO, options))

    headers = server.received[0].headers
    assert headers["x-api-key"] == "sk-ant-xyz"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert headers["anthropic-beta"] == "x-2025"
    assert headers["x-call"] == "c"
    assert "authorization" not in headers


async def test_no_key_header_without_a_key_on_loopback(server: ScriptedServer) -> None:
    server.serve(Script([an_text_reply("ok")]))
    assert provider(server).requires_credentials is False
    last_done(await collect(provider(server).stream(ANTHROPIC.model, HELLO)))
    headers = server.received[0].headers
    assert "x-api-key" not in headers
    assert headers["anthropic-version"] == "2023-06-01"


async def test_the_same_input_sends_the_same_bytes(server: ScriptedServer) -> None:
    server.serve(Script([an_text_reply("ok")]), Script([an_text_reply("ok")]))
    for _ in range(2):
        await collect(provider(server).stream(ANTHROPIC.model, CONVERSATION))
    assert server.received[0].body == server.received[1].body
