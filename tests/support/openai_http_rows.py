"""OpenAI's answers as recording rows, faithful to the published wire formats: a Chat
Completions stream (text, then a tool call whose arguments arrive in pieces, then the usage
chunk and ``[DONE]``) and the whole completion that follows the tool result; a Responses stream
(a message, then a function call) with its named events, and the whole response that follows
the function's output."""

from __future__ import annotations

import orjson

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

CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"
CALL_ID = "call_DdmO9pD3xa9XTPNJ32zg2hcA"
OPENAI_TOOL: Row = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": WEATHER_PARAMETERS,
    },
}


def _chunk(choices: list[Row], usage: Row | None = None) -> Row:
    return {
        "id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
        "object": "chat.completion.chunk",
        "created": 1764576000,
        "model": "gpt-4o-mini-2024-07-18",
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
        "choices": choices,
        "usage": usage,
    }


def chat_chunk(delta: Row, finish: str | None = None) -> Row:
    """A stream chunk whose choice 0 carries ``delta`` (and ``finish``, the finish reason)."""
    return _chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])


def chat_tool_piece(arguments: str, *, first: bool = False) -> Row:
    """A chunk holding a piece of the ``get_weather`` call's arguments (the first piece also
    holds its id and name)."""
    call: Row = {"index": 0, "function": {"arguments": arguments}}
    if first:
        call = {"index": 0, "id": CALL_ID, "type": "function"}
        call["function"] = {"name": "get_weather", "arguments": arguments}
    return chat_chunk({"tool_calls": [call]})


CHAT_USAGE = {
    "prompt_tokens": 82,
    "completion_tokens": 27,
    "total_tokens": 109,
    "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
}


def chat_messages() -> list[Row]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}]


def chat_stream_call(index: int = 0) -> list[Row]:
    """A streamed completion: ``Let me check the weather.``, then ``get_weather`` called with
    ``{"city": "Paris"}`` in three pieces, finish reason ``tool_calls``, then the usage chunk."""
    body = {
        "model": "gpt-4o-mini",
        "messages": chat_messages(),
        "tools": [OPENAI_TOOL],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    chunks = [
        chat_chunk({"role": "assistant", "content": "", "refusal": None}),
        chat_chunk({"content": "Let me check"}),
        chat_chunk({"content": " the weather."}),
        chat_tool_piece("", first=True),
        chat_tool_piece('{"ci'),
        chat_tool_piece('ty": "Par'),
        chat_tool_piece('is"}'),
        chat_chunk({}, finish="tool_calls"),
        _chunk([], usage=CHAT_USAGE),
    ]
    events = [
        response(extra={"openai-version": "2020-10-01", "x-request-id": "req_7f3a"}),
        *(sse(chunk) for chunk in chunks),
        sse("[DONE]"),
    ]
    return http_call(index, "POST", CHAT_URL, body, events)


def chat_completion_call(index: int = 1) -> list[Row]:
    """The whole (not streamed) completion that follows the tool result."""
    arguments = orjson.dumps(WEATHER_ARGUMENTS).decode()
    messages = [
        *chat_messages(),
        {
            "role": "assistant",
            "content": "Let me check the weather.",
            "tool_calls": [
                {
                    "id": CALL_ID,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": CALL_ID, "content": '{"temp_c": 14, "sky": "overcast"}'},
    ]
    completion = {
        "id": "chatcmpl-B9MBtq1qxKMBgq4Jf6mSJ2hnsqWdX",
        "object": "chat.completion",
        "created": 1764576002,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": "It's 14 °C and overcast in Paris.",
                    "refusal": None,
                    "annotations": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 121, "completion_tokens": 12, "total_tokens": 133},
        "service_tier": "default",
        "system_fingerprint": "fp_06737a9306",
    }
    body = {"model": "gpt-4o-mini", "messages": messages, "tools": [OPENAI_TOOL]}
    events = [response(content_type="application/json"), json_body(completion)]
    return http_call(index, "POST", CHAT_URL, body, events)


# -- OpenAI Responses ------------------------------------------------------------------------

RESPONSE_USAGE = {
    "input_tokens": 62,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 23,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 85,
}
_MESSAGE_ITEM = {
    "id": "msg_67ccd3acc8d48190a77525dc6de64b4f",
    "type": "message",
    "role": "assistant",
}
_FUNCTION_ITEM = {
    "id": "fc_67ccd3b0e29c8190bb4e36bba4e3c6f6",
    "type": "function_call",
    "call_id": CALL_ID,
    "name": "get_weather",
}


def _response_object(status: str, output: list[Row], usage: Row | None) -> Row:
    return {
        "id": "resp_67ccd3a9da748190baa7f1570fe91ac6",
        "object": "response",
        "created_at": 1764576000,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-4.1-mini-2025-04-14",
        "output": output,
        "usage": usage,
    }


def responses_stream_call(index: int = 0) -> list[Row]:
    """A streamed response: a message ``I'll look that up.``, then a ``get_weather`` function
    call whose arguments arrive in two pieces; each event named as its ``type``."""
    text_part = {"type": "output_text", "annotations": [], "text": "I'll look that up."}
    message = {**_MESSAGE_ITEM, "status": "completed", "content": [text_part]}
    function = {**_FUNCTION_ITEM, "status": "completed", "arguments": '{"city":"Paris"}'}
    text_at = {"item_id": _MESSAGE_ITEM["id"], "output_index": 0, "content_index": 0}
    arguments_at = {"item_id": _FUNCTION_ITEM["id"], "output_index": 1}
    datas: list[Row] = [
        {"type": "response.created", "response": _response_object("in_progress", [], None)},
        {"type": "response.in_progress", "response": _response_object("in_progress", [], None)},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**_MESSAGE_ITEM, "status": "in_progress", "content": []},
        },
        {"type": "response.content_part.added", **text_at, "part": {**text_part, "text": ""}},
        {"type": "response.output_text.delta", **text_at, "delta": "I'll look", "logprobs": []},
        {"type": "response.output_text.delta", **text_at, "delta": " that up.", "logprobs": []},
        {"type": "response.output_text.done", **text_at, "text": "I'll look that up."},
        {"type": "response.content_part.done", **text_at, "part": text_part},
        {"type": "response.output_item.done", "output_index": 0, "item": message},
        {
            "type": "response.output_item.added",
            "output_index": 1,
            "item": {**_FUNCTION_ITEM, "status": "in_progress", "arguments": ""},
        },
        {"type": "response.function_call_arguments.delta", **arguments_at, "delta": '{"city":'},
        {"type": "response.function_call_arguments.delta", **arguments_at, "delta": '"Paris"}'},
        {
            "type": "response.function_call_arguments.done",
            **arguments_at,
            "arguments": '{"city":"Paris"}',
        },
        {"type": "response.output_item.done", "output_index": 1, "item": function},
        {
            "type": "response.completed",
            "response": _response_object("completed", [message, function], RESPONSE_USAGE),
        },
    ]
    for number, data in enumerate(datas):
        data["sequence_number"] = number
    body = {
        "model": "gpt-4.1-mini",
        "input": [{"role": "user", "content": QUESTION}],
        "tools": [{"type": "function", **OPENAI_TOOL["function"]}],
        "stream": True,
    }
    events = [response(), *(sse(data, data["type"]) for data in datas)]
    return http_call(index, "POST", RESPONSES_URL, body, events)


def responses_whole_call(index: int = 1) -> list[Row]:
    """The whole response to the function call's output: reasoning summary and a message."""
    output = [
        {
            "id": "rs_67ccd3b4a1f08190",
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "The tool says 14 °C."}],
        },
        {
            **_MESSAGE_ITEM,
            "status": "completed",
            "content": [{"type": "output_text", "annotations": [], "text": "14 °C in Paris."}],
        },
    ]
    usage = {"input_tokens": 90, "output_tokens": 9, "total_tokens": 99}
    body = {
        "model": "gpt-4.1-mini",
        "input": [
            {"role": "user", "content": QUESTION},
            {**_FUNCTION_ITEM, "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": CALL_ID, "output": "14 °C, overcast"},
        ],
    }
    events = [
        response(content_type="application/json"),
        json_body(_response_object("completed", output, usage)),
    ]
    return http_call(index, "POST", RESPONSES_URL, body, events)
