"""HTTP calls as the vendors' servers answer them, written as recording rows by hand.

Each function returns the rows of one call (request, events, call_end) at ``index``, faithful
to the vendor's published wire format: an OpenAI Chat Completions stream (text, then a tool
call whose arguments arrive in pieces, then the usage chunk and ``[DONE]``) and the whole
completion that follows the tool result; an OpenAI Responses stream (a message, then a
function call) with its named events; an Anthropic Messages stream (thinking, text, a
``tool_use`` block whose input arrives as ``input_json_delta`` pieces) and the whole message
that follows; an error response, an Anthropic error in the middle of a stream, a transport
error before any response, and a call to an API the views do not know. :func:`odd_calls`
holds shapes no vendor sends: a body that is not an object, SSE data that is not JSON, no
usage anywhere, fields of the wrong type.
"""

from __future__ import annotations

from typing import Any

import orjson

from tests.support.recording_rows import Row, call_end, event

CHAT_URL = "https://api.openai.com/v1/chat/completions"
RESPONSES_URL = "https://api.openai.com/v1/responses"
MESSAGES_URL = "https://api.anthropic.com/v1/messages"

JSON = {"content-type": "application/json"}
ANTHROPIC_JSON = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
CALL_ID = "call_DdmO9pD3xa9XTPNJ32zg2hcA"
TOOLU_ID = "toolu_01A09q90qw90lq917835lq9"
WEATHER_ARGUMENTS = {"city": "Paris"}
QUESTION = "What's the weather in Paris? Answer briefly."
SYSTEM = "You are a weather assistant."

OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
ANTHROPIC_TOOL = {
    "name": "get_weather",
    "description": "Current weather for a city",
    "input_schema": OPENAI_TOOL["function"]["parameters"],  # type: ignore[index]
}


def http_call(
    index: int,
    method: str,
    url: str,
    body: Any = None,
    events: list[Row] | None = None,
    *,
    headers: dict[str, str] | None = None,
    outcome: str | None = "complete",
    error: Row | None = None,
) -> list[Row]:
    """The rows of one HTTP call; ``outcome`` None leaves it cut short (no call_end)."""
    request: Row = {
        "type": "request",
        "call_index": index,
        "boundary": "http",
        "method": method,
        "url": url,
        "headers": JSON if headers is None else headers,
    }
    if body is not None:
        request["body"] = body
    payloads = events or []
    rows = [request, *(event(index, n, payload) for n, payload in enumerate(payloads))]
    if outcome is not None:
        rows.append(call_end(index, len(payloads), outcome, error))
    return rows


def response(
    status: int = 200, content_type: str = "text/event-stream", extra: dict[str, str] | None = None
) -> Row:
    """An ``http_response`` event with the headers a vendor sends beside its content type."""
    headers = {"content-type": content_type, "date": "Mon, 01 Dec 2026 08:00:00 GMT"}
    headers.update(extra or {})
    return {"type": "http_response", "status": status, "headers": headers}


def sse(data: Any, name: str | None = None) -> Row:
    row: Row = {"type": "sse"}
    if name is not None:
        row["event"] = name
    row["data"] = data
    return row


def json_body(body: Any) -> Row:
    return {"type": "http_body", "body": body}


# -- OpenAI Chat Completions -----------------------------------------------------------------


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
        "tools": [{"type": "function", **OPENAI_TOOL["function"]}],  # type: ignore[dict-item]
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


# -- Anthropic Messages ----------------------------------------------------------------------

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


def _an(data: Row) -> Row:
    """An Anthropic event: named as its ``type``."""
    return sse(data, data["type"])


def _block_delta(index: int, delta: Row) -> Row:
    return _an({"type": "content_block_delta", "index": index, "delta": delta})


def messages_stream_call(index: int = 0) -> list[Row]:
    """A streamed message: thinking (signed), text, then a ``tool_use`` block whose input
    arrives as three ``input_json_delta`` pieces; stop reason ``tool_use``."""
    start: Row = {**_MESSAGE, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = _START_USAGE
    tool_block = {"type": "tool_use", "id": TOOLU_ID, "name": "get_weather", "input": {}}
    events = [
        response(extra={"request-id": "req_011CSHoEeqs5C35K2UUqR7Fy"}),
        _an({"type": "message_start", "message": start}),
        _an(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "thinking", "thinking": "", "signature": ""},
            }
        ),
        _block_delta(0, {"type": "thinking_delta", "thinking": THINKING[:24]}),
        _block_delta(0, {"type": "thinking_delta", "thinking": THINKING[24:]}),
        _block_delta(0, {"type": "signature_delta", "signature": SIGNATURE}),
        _an({"type": "content_block_stop", "index": 0}),
        _an(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        _an({"type": "ping"}),
        _block_delta(1, {"type": "text_delta", "text": "I'll check the current weather"}),
        _block_delta(1, {"type": "text_delta", "text": " in Paris."}),
        _an({"type": "content_block_stop", "index": 1}),
        _an({"type": "content_block_start", "index": 2, "content_block": tool_block}),
        _block_delta(2, {"type": "input_json_delta", "partial_json": ""}),
        _block_delta(2, {"type": "input_json_delta", "partial_json": '{"city": "Pa'}),
        _block_delta(2, {"type": "input_json_delta", "partial_json": 'ris"}'}),
        _an({"type": "content_block_stop", "index": 2}),
        _an(
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 89},
            }
        ),
        _an({"type": "message_stop"}),
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
        _an({"type": "message_start", "message": start}),
        _an(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        _block_delta(0, {"type": "text_delta", "text": "It is"}),
        _an(
            {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
        ),
    ]
    body = _messages_body([{"role": "user", "content": QUESTION}], stream=True)
    return http_call(index, "POST", MESSAGES_URL, body, events, headers=ANTHROPIC_JSON)


# -- failures and other APIs -------------------------------------------------------------------

RATE_LIMIT_MESSAGE = (
    "Rate limit reached for gpt-4o-mini in organization org-Xq on tokens per min (TPM): "
    "Limit 200000, Used 199961, Requested 620. Please try again in 174ms."
)


def rate_limited_call(index: int = 0) -> list[Row]:
    """A 429 with OpenAI's error body (and the retry hint the SDK would honour)."""
    body = {"model": "gpt-4o-mini", "messages": chat_messages()}
    error = {
        "error": {
            "message": RATE_LIMIT_MESSAGE,
            "type": "tokens",
            "param": None,
            "code": "rate_limit_exceeded",
        }
    }
    events = [
        response(429, "application/json", {"retry-after-ms": "174", "x-request-id": "req_a"}),
        json_body(error),
    ]
    return http_call(index, "POST", CHAT_URL, body, events)


CONNECT_ERROR = {"type": "httpx2.ConnectError", "message": "[Errno 111] Connection refused"}


def connect_error_call(index: int = 0) -> list[Row]:
    """No response at all: the connection was refused."""
    body = {"model": "gpt-4o-mini", "messages": chat_messages(), "stream": True}
    return http_call(index, "POST", CHAT_URL, body, [], outcome="error", error=CONNECT_ERROR)


def cut_stream_call(index: int = 0) -> list[Row]:
    """A Chat Completions stream cut mid-way by the network after two chunks."""
    rows = chat_stream_call(index)
    kept = rows[:4]  # the request, the response, two chunks
    error = {"type": "httpx.RemoteProtocolError", "message": "peer closed connection"}
    return [*kept, call_end(index, len(kept) - 1, "error", error)]


def truncated_stream_call(index: int = 0) -> list[Row]:
    """An Anthropic stream whose recording stops mid-way (the process died): no call_end."""
    return messages_stream_call(index)[:-10]


def other_api_call(index: int = 0) -> list[Row]:
    """A JSON API the views know nothing of (shown as method, URL, status and body size)."""
    listing = {"object": "list", "data": [{"id": "gpt-4o-mini", "object": "model"}]}
    events = [response(content_type="application/json"), json_body(listing)]
    return http_call(index, "GET", "https://api.example.com/v1/models", None, events)


def odd_calls() -> dict[str, list[Row]]:
    """Shapes no vendor sends, each as one call at index 0, by what is odd about it."""
    weather = chat_chunk({"content": "Sunny"})
    return {
        "request body is a list": http_call(
            0, "POST", CHAT_URL, [1, 2], [response(200, "application/json"), json_body([])]
        ),
        "response body is a string": http_call(
            0, "POST", MESSAGES_URL, {"messages": "hi"}, [response(), json_body("hello")]
        ),
        "sse data is not JSON": http_call(
            0, "POST", CHAT_URL, {"messages": []}, [response(), sse("hello"), sse("{broken")]
        ),
        "no usage anywhere": http_call(
            0, "POST", CHAT_URL, {"model": 7, "messages": [{"role": 3}]}, [response(), sse(weather)]
        ),
        "fields of the wrong type": http_call(
            0,
            "POST",
            RESPONSES_URL,
            {"input": [{"type": "function_call_output", "output": [1]}], "model": None},
            [
                response(),
                sse({"type": "response.output_text.delta", "output_index": [0], "delta": 5}),
                sse({"type": "response.function_call_arguments.delta", "delta": None}),
                sse({"type": "response.output_item.added", "item": "x", "output_index": {}}),
                sse({"type": "response.completed", "response": {"usage": [], "status": 1}}),
            ],
        ),
        "anthropic blocks of the wrong type": http_call(
            0,
            "POST",
            MESSAGES_URL,
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": {}}]}]},
            [
                response(),
                _an({"type": "content_block_start", "index": "0", "content_block": []}),
                _block_delta(0, {"type": "input_json_delta", "partial_json": 3}),
                _block_delta(1, "text"),  # type: ignore[arg-type]
                _an({"type": "message_delta", "delta": None, "usage": "many"}),
            ],
            headers=ANTHROPIC_JSON,
        ),
        "binary body": http_call(
            0,
            "POST",
            "https://api.example.com/upload",
            None,
            [response(200, "application/octet-stream"), {"type": "http_body", "base64": "AAEC"}],
        ),
        "text body and no model": http_call(
            0,
            "POST",
            CHAT_URL,
            {"messages": [{"role": "user", "content": [{"type": "image_url"}, "x"]}]},
            [response(500, "text/plain"), {"type": "http_body", "text": "upstream\x1b[31m failed"}],
        ),
        "sse data is a list": http_call(
            0, "POST", CHAT_URL, {"messages": [[]]}, [response(), sse([1, 2]), sse(None)]
        ),
    }


def mixed_session() -> list[list[Row]]:
    """The calls of a recording of both boundaries: a provider call, then SDK traffic of each
    API and its failures — nine calls, eight of them HTTP calls."""
    from tests.support.http_call_rows import provider_call

    return [
        provider_call(0),
        chat_stream_call(1),
        responses_stream_call(2),
        messages_stream_call(3),
        rate_limited_call(4),
        connect_error_call(5),
        cut_stream_call(6),
        other_api_call(7),
        truncated_stream_call(8),
    ]


def documented_agent() -> list[list[Row]]:
    """The calls of ``agent.jsonl``, the SDK recording docs/cli.md shows and diffs: an OpenAI
    stream with a tool call, the completion after the tool result, an Anthropic stream, a
    429 and a refused connection."""
    return [
        chat_stream_call(0),
        chat_completion_call(1),
        messages_stream_call(2),
        rate_limited_call(3),
        connect_error_call(4),
    ]


def documented_agent_2() -> list[list[Row]]:
    """``agent-2.jsonl`` of docs/cli.md: ``agent.jsonl`` with one streamed piece changed."""
    calls = documented_agent()
    calls[0][3]["event"]["data"]["choices"][0]["delta"]["content"] = "Let me look"
    return calls
