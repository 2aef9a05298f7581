"""A vendor provider sends through the transport it is given: a test answers it in-process
with ``httpx.MockTransport``, no server and no socket. (The base URLs are on loopback, port
9, where nothing listens: a provider that ignored its transport fails here, it reaches no
other machine.)"""

from __future__ import annotations

import json

import httpx
import pytest

from openprogram.providers import Context, Model, StreamOptions, UserMessage
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider
from openprogram.providers.streaming import collect_message

HELLO = Context(messages=[UserMessage(content="hello")])


def sse(*events: dict[str, object], done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


async def test_an_openai_provider_streams_through_a_mock_transport() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        chunks = sse(
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi "}}]},
            {"choices": [{"index": 0, "delta": {"content": "there"}, "finish_reason": "stop"}]},
        )
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=chunks)

    provider = OpenAICompletionsProvider(
        base_url="http://127.0.0.1:9/v1", transport=httpx.MockTransport(answer)
    )
    model = Model(id="gpt-test", api="openai-completions", provider="openai")
    events = provider.stream(model, HELLO, StreamOptions(api_key="sk-test-key"))
    message = await collect_message(events, model=model)

    assert message.stop_reason == "stop"
    assert [block.text for block in message.content if block.type == "text"] == ["Hi there"]
    [request] = seen
    assert str(request.url) == "http://127.0.0.1:9/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test-key"
    assert json.loads(request.content)["messages"] == [{"role": "user", "content": "hello"}]


async def test_an_error_status_from_the_mock_transport_is_an_error_reply() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, json={"error": {"message": "slow down"}})

    provider = AnthropicMessagesProvider(
        base_url="http://127.0.0.1:9", transport=httpx.MockTransport(answer)
    )
    model = Model(id="claude-test", api="anthropic-messages", provider="anthropic")
    events = provider.stream(model, HELLO, StreamOptions(api_key="sk-ant-test"))
    message = await collect_message(events, model=model)

    assert message.stop_reason == "error"
    assert message.error_message is not None
    assert "HTTP 429" in message.error_message
    assert "slow down" in message.error_message


@pytest.mark.parametrize("provider_class", [OpenAICompletionsProvider, AnthropicMessagesProvider])
def test_without_a_transport_the_provider_uses_the_network(provider_class: type) -> None:
    assert provider_class().transport is None
