"""Anthropic's answers as recording rows, faithful to the published Messages streaming
format: a stream of thinking (signed), text and a ``tool_use`` block whose input arrives as
``input_json_delta`` pieces; the whole message that follows the tool result; a stream the
server ends with its own ``overloaded_error``."""

from __future__ import annotations

from tests.support.http_exchange_rows import (
    QUESTION,
    SYSTEM,
    WEATHER_ARGUMENTS,
    WEATHER_PARAMETERS,
    http_call,
    json_body,
    response,
    sse,
)
from tests.support.recording_rows import Row

MESSAGES_URL = "https://api.anthropic.com/v1/messages"
ANTHROPIC_JSON = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
TOOLU_ID = "toolu_01A09q90qw90lq917835lq9"
ANTHROPIC_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "input_schema": WEATHER_PARAMETERS,
}


_MESSAGE = {
    "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
}
_START_USAGE = {
    "input_tokens": 412,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
    "output_tokens": 4,
    "service_tier": "standard",
}
THINKING = "The user wants the weather in Paris; I should call get_weather."
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def _messages_body(messages: list[Row], *, stream: bool) -> Row:
    body: Row = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 2048,
        "system": SYSTEM,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [ANTHROPIC_TOOL],
        "messages": messages,
    }
    if stream:
        body["stream"] = True
    return body


def messages_event(data: Row) -> Row:
    """An Anthropic event: named as its ``type``."""
    return sse(data, data["type"])


def block_delta(index: int, delta: Row) -> Row:
    return messages_event({"type": "content_block_delta", "index": index, "delta": delta})


def messages_stream_call(index: int = 0) -> list[Row]:
    """A streamed message: thinking (signed), text, then a ``tool_use`` block whose input
    arrives as three ``input_json_delta`` pieces; stop reason ``tool_use``."""
    start: Row = {**_MESSAGE, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = _START_USAGE
    tool_block = {"type": "tool_use", "id": TOOLU_ID, "name": "get_weather", "input": {}}
    events = [
        response(extra={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}),
        messages_event({"type": "message_start", "message": start}),
        messages_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
        block_delta(0, {"type": "thinking_delta", "thinking": THINKING[:24]}),
        block_delta(0, {"type": "thinking_delta", "thinking": THINKING[24:]}),
        block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        messages_event({"type": "content_block_stop", "index": 0}),
        messages_event(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        messages_event({"type": "ping"}),
        block_delta(1, {"type": "text_delta", "text": "I'll check the current weather"}),
        block_delta(1, {"type": "text_delta", "text": " in Paris."}),
        messages_event({"type": "content_block_stop", "index": 1}),
        messages_event({"type": "content_block_start", "index": 2, "content_block": tool_block}),
        block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
        block_delta(2, {"type": "input_json_delta", "partial_json": '{"city": "Pa'}),
        block_delta(2, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        messages_event({"type": "content_block_stop", "index": 2}),
        messages_event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 89},
            }
        ),
        messages_event({"type": "message_stop"}),
    ]
    body = _messages_body([{"role": "user", "content": QUESTION}], stream=True)
    return http_call(index, "POST", MESSAGES_URL, body, events, headers=ANTHROPIC_JSON)


def messages_whole_call(index: int = 1) -> list[Row]:
    """The whole message that follows the tool result (not streamed)."""
    assistant = [
        {"type": "thinking", "thinking": THINKING, "signature": SIGNATURE},
        {"type": "text", "text": "I'll check the current weather in Paris."},
        {"type": "tool_use", "id": TOOLU_ID, "name": "get_weather", "input": WEATHER_ARGUMENTS},
    ]
    result = {"type": "tool_result", "tool_use_id": TOOLU_ID, "content": "14 °C, overcast"}
    messages: list[Row] = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [result]},
    ]
    message = {
        **_MESSAGE,
        "content": [{"type": "text", "text": "It's 14 °C and overcast in Paris."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 530, "output_tokens": 18},
    }
    events = [response(content_type="application/json"), json_body(message)]
    body = _messages_body(messages, stream=False)
    return http_call(index, "POST", MESSAGES_URL, body, events, headers=ANTHROPIC_JSON)


def messages_overloaded_mid_stream_call(index: int = 0) -> list[Row]:
    """A stream the server ends with its own ``overloaded_error`` event after some text."""
    start: Row = {**_MESSAGE, "content": [], "stop_reason": None, "usage": _START_USAGE}
    events = [
        response(),
        messages_event({"type": "message_start", "message": start}),
        messages_event(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        block_delta(0, {"type": "text_delta", "text": "It is"}),
        messages_event(
            {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
        ),
    ]
    body = _messages_body([{"role": "user", "content": QUESTION}], stream=True)
    return http_call(index, "POST", MESSAGES_URL, body, events, headers=ANTHROPIC_JSON)
