"""anthropic-messages: the exact body and path of the request the server receives. What every
vendor's request does (headers, keys, the same bytes for the same input) is tested in
``test_vendor_requests.py``."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from openprogram.providers import (
    SimpleStreamOptions,
    StreamOptions,
)
from openprogram.providers.builtins.anthropic_messages import messages_body
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider
from tests.support.provider_events import collect, last_done
from tests.support.sse_server import Script, ScriptedServer
from tests.support.vendor_wire import an_text_reply
from tests.support.vendors import ANTHROPIC, HELLO, conversation

CONVERSATION = conversation(ANTHROPIC)

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


def provider(server: ScriptedServer) -> HttpVendorProvider:
    return ANTHROPIC.provider(server.base_url)


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
