"""Wire-format builders for the vendor tests: OpenAI chunks and Anthropic events as bytes,
and small helpers to drive a provider and read what came back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from sse_server import sse_event

from openprogram.providers import (
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    UserMessage,
)
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider

OPENAI_MODEL = Model(id="gpt-test", api="openai-completions", provider="openai")
ANTHROPIC_MODEL = Model(id="claude-test", api="anthropic-messages", provider="anthropic")
HELLO = Context(messages=[UserMessage(content="hi", timestamp=1)])


async def collect(events: AsyncIterator[AssistantMessageEvent]) -> list[AssistantMessageEvent]:
    return [event async for event in events]


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


def last_error(events: list[AssistantMessageEvent]) -> ErrorEvent:
    assert events, "no events"
    final = events[-1]
    assert isinstance(final, ErrorEvent), f"expected an error event, got {types(events)}"
    return final


def last_done(events: list[AssistantMessageEvent]) -> DoneEvent:
    final = events[-1]
    assert isinstance(final, DoneEvent), f"expected done, got {final!r}"
    return final


# -- OpenAI Chat Completions ----------------------------------------------------------------


def oa_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def oa_usage(prompt: int = 12, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    return oa_chunk(
        no_choices=True,
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    )


def oa_stream(*chunks: dict[str, Any], done: bool = True) -> bytes:
    body = b"".join(sse_event(chunk) for chunk in chunks)
    return body + (sse_event("[DONE]") if done else b"")


def oa_text_reply(*texts: str, finish: str = "stop") -> bytes:
    return oa_stream(
        oa_chunk({"role": "assistant", "content": ""}),
        *(oa_chunk({"content": text}) for text in texts),
        oa_chunk(finish=finish),
        oa_usage(),
    )


def oa_tool_piece(
    index: int,
    *,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    piece: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        piece["id"] = call_id
        piece["type"] = "function"
    return oa_chunk({"tool_calls": [piece]})


# -- Anthropic Messages ---------------------------------------------------------------------


def an_event(data: dict[str, Any]) -> bytes:
    return sse_event(data, event=data["type"])


def an_message_start(input_tokens: int = 20, cache_read: int = 0, cache_write: int = 0) -> bytes:
    return an_event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-test",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        }
    )


def an_block_start(index: int, block: dict[str, Any]) -> bytes:
    return an_event({"type": "content_block_start", "index": index, "content_block": block})


def an_delta(index: int, delta: dict[str, Any]) -> bytes:
    return an_event({"type": "content_block_delta", "index": index, "delta": delta})


def an_block_stop(index: int) -> bytes:
    return an_event({"type": "content_block_stop", "index": index})


def an_message_delta(stop_reason: str, output_tokens: int = 7) -> bytes:
    return an_event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )


def an_message_stop() -> bytes:
    return an_event({"type": "message_stop"})


PING = sse_event({"type": "ping"}, event="ping")


def an_text_reply(*texts: str, stop_reason: str = "end_turn") -> bytes:
    return b"".join(
        [
            an_message_start(),
            an_block_start(0, {"type": "text", "text": ""}),
            PING,
            *(an_delta(0, {"type": "text_delta", "text": text}) for text in texts),
            an_block_stop(0),
            an_message_delta(stop_reason),
            an_message_stop(),
        ]
    )


# -- either vendor, for the tests every vendor must pass ------------------------------------


@dataclass(frozen=True)
class Vendor:
    """One vendor's provider, model and wire format, for parametrized tests."""

    api: str
    model: Model

    def provider(self, server_url: str, **settings: Any) -> HttpVendorProvider:
        if self.api == "openai-completions":
            return OpenAICompletionsProvider(base_url=f"{server_url}/v1", **settings)
        return AnthropicMessagesProvider(base_url=server_url, **settings)

    def text_reply(self, *texts: str) -> bytes:
        return oa_text_reply(*texts) if self.api == "openai-completions" else an_text_reply(*texts)

    def tool_reply(self, call_id: str, name: str, arguments: str) -> bytes:
        """A reply that calls one tool, its arguments' JSON split in two."""
        half = len(arguments) // 2
        if self.api == "openai-completions":
            return oa_stream(
                oa_tool_piece(0, call_id=call_id, name=name, arguments=""),
                oa_tool_piece(0, arguments=arguments[:half]),
                oa_tool_piece(0, arguments=arguments[half:]),
                oa_chunk(finish="tool_calls"),
                oa_usage(),
            )
        return b"".join(
            [
                an_message_start(),
                an_block_start(0, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
                an_delta(0, {"type": "input_json_delta", "partial_json": arguments[:half]}),
                an_delta(0, {"type": "input_json_delta", "partial_json": arguments[half:]}),
                an_block_stop(0),
                an_message_delta("tool_use"),
                an_message_stop(),
            ]
        )

    def text_beginning(self, *texts: str) -> bytes:
        """The start of a text reply, with no finish."""
        if self.api == "openai-completions":
            return oa_stream(*(oa_chunk({"content": text}) for text in texts), done=False)
        return b"".join(
            [
                an_message_start(),
                an_block_start(0, {"type": "text", "text": ""}),
                *(an_delta(0, {"type": "text_delta", "text": text}) for text in texts),
            ]
        )

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        if self.api == "openai-completions":
            return {"error": {"message": message, "type": kind, "param": None, "code": None}}
        return {"type": "error", "error": {"type": kind, "message": message}}


OPENAI = Vendor("openai-completions", OPENAI_MODEL)
ANTHROPIC = Vendor("anthropic-messages", ANTHROPIC_MODEL)
VENDORS = [OPENAI, ANTHROPIC]
