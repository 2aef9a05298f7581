"""HTTP calls as the vendors' servers answer them, written as recording rows by hand: one
place to import every sample call from.

Each function returns the rows of one call (request, events, call_end) at ``index``, faithful
to the vendor's published wire format: OpenAI Chat Completions and Responses
(``tests.support.openai_http_rows``) and Anthropic Messages
(``tests.support.anthropic_http_rows``), streamed and whole; here, an error response, a
transport error before any response, a stream cut mid-way or cut short, and a call to an API
the views do not know. :func:`odd_calls` holds shapes no vendor sends: a body that is not an
object, SSE data that is not JSON, no usage anywhere, fields of the wrong type.
"""

from __future__ import annotations

from tests.support.anthropic_http_rows import (
    ANTHROPIC_JSON,
    MESSAGES_URL,
    THINKING,
    block_delta,
    messages_event,
    messages_overloaded_mid_stream_call,
    messages_stream_call,
    messages_whole_call,
)
from tests.support.http_exchange_rows import (
    QUESTION,
    SYSTEM,
    WEATHER_ARGUMENTS,
    http_call,
    json_body,
    response,
    sse,
)
from tests.support.openai_http_rows import (
    CHAT_URL,
    CHAT_USAGE,
    RESPONSE_USAGE,
    RESPONSES_URL,
    chat_chunk,
    chat_completion_call,
    chat_messages,
    chat_stream_call,
    chat_tool_piece,
    responses_stream_call,
    responses_whole_call,
)
from tests.support.recording_rows import Row, call_end

__all__ = [
    "CHAT_URL",
    "CHAT_USAGE",
    "MESSAGES_URL",
    "QUESTION",
    "RATE_LIMIT_MESSAGE",
    "RESPONSES_URL",
    "RESPONSE_USAGE",
    "SYSTEM",
    "THINKING",
    "WEATHER_ARGUMENTS",
    "chat_chunk",
    "chat_completion_call",
    "chat_stream_call",
    "chat_tool_piece",
    "connect_error_call",
    "cut_stream_call",
    "documented_agent",
    "documented_agent_2",
    "http_call",
    "json_body",
    "messages_overloaded_mid_stream_call",
    "messages_stream_call",
    "messages_whole_call",
    "mixed_session",
    "odd_calls",
    "other_api_call",
    "rate_limited_call",
    "response",
    "responses_stream_call",
    "responses_whole_call",
    "sse",
    "truncated_stream_call",
]

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
                messages_event({"type": "content_block_start", "index": "0", "content_block": []}),
                block_delta(0, {"type": "input_json_delta", "partial_json": 3}),
                block_delta(1, "text"),  # type: ignore[arg-type]
                messages_event({"type": "message_delta", "delta": None, "usage": "many"}),
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
