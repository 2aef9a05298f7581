"""``show``'s view of HTTP calls: the exchange, and for OpenAI Chat Completions, OpenAI
Responses and Anthropic Messages (streamed and whole) the conversation put back together."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.format import RecordedCall, RecordedError
from openprogram.store.show import CallView, call_views
from openprogram.vendors import http_api, http_call_parts
from tests.support.http_call_rows import write_calls
from tests.support.recording_rows import Row
from tests.support.vendor_http_rows import (
    CHAT_URL,
    CHAT_USAGE,
    MESSAGES_URL,
    QUESTION,
    RATE_LIMIT_MESSAGE,
    RESPONSE_USAGE,
    RESPONSES_URL,
    SYSTEM,
    THINKING,
    WEATHER_ARGUMENTS,
    chat_completion_call,
    chat_stream_call,
    connect_error_call,
    cut_stream_call,
    http_call,
    messages_overloaded_mid_stream_call,
    messages_stream_call,
    messages_whole_call,
    odd_calls,
    other_api_call,
    rate_limited_call,
    response,
    responses_stream_call,
    responses_whole_call,
    sse,
    truncated_stream_call,
)


def view_of(tmp_path: Path, rows: list[Row]) -> CallView:
    """The view of a recording holding the one call ``rows``."""
    (view,) = call_views(write_calls(tmp_path / "one.jsonl", rows))
    return view


def data_size(rows: list[Row]) -> int:
    """The bytes of every SSE event's data, as the exchange counts them."""
    datas = [row["event"]["data"] for row in rows if row.get("event", {}).get("type") == "sse"]
    return sum(len(d.encode() if isinstance(d, str) else orjson.dumps(d)) for d in datas)


def test_an_openai_chat_stream_with_text_and_a_streamed_tool_call(tmp_path: Path) -> None:
    rows = chat_stream_call(0)
    view = view_of(tmp_path, rows)

    assert (view.boundary, view.model) == ("http", "api.openai.com:gpt-4o-mini")
    assert (view.input_role, view.input_text) == ("user", QUESTION)
    assert view.reply_text == "Let me check the weather."
    assert view.tool_calls == [("get_weather", WEATHER_ARGUMENTS)]
    assert (view.stop_reason, view.usage, view.tokens) == ("tool_calls", CHAT_USAGE, (82, 27))
    assert (view.outcome, view.error, view.event_count) == ("complete", None, 11)
    assert view.http is not None
    assert view.http.to_json() == {
        "method": "POST",
        "url": CHAT_URL,
        "status": 200,
        "api": "openai-completions",
        "body": "sse",
        "sse_events": 10,
        "body_size": data_size(rows),
        "transport_error": None,
    }


def test_the_whole_chat_completion_after_the_tool_result(tmp_path: Path) -> None:
    view = view_of(tmp_path, chat_completion_call(0))

    assert view.input_role == "tool"
    assert view.input_text == 'get_weather → {"temp_c": 14, "sky": "overcast"}'
    assert view.reply_text == "It's 14 °C and overcast in Paris."
    assert (view.tool_calls, view.stop_reason, view.tokens) == ([], "stop", (121, 12))
    assert view.http is not None
    assert (view.http.body, view.http.sse_events, view.http.api) == (
        "json",
        0,
        "openai-completions",
    )
    assert view.http.body_size == len(orjson.dumps(chat_completion_call(0)[-2]["event"]["body"]))


def test_an_openai_responses_stream_with_text_and_a_function_call(tmp_path: Path) -> None:
    view = view_of(tmp_path, responses_stream_call(0))

    assert view.model == "api.openai.com:gpt-4.1-mini"
    assert (view.input_role, view.input_text) == ("user", QUESTION)
    assert view.reply_text == "I'll look that up."
    assert view.tool_calls == [("get_weather", WEATHER_ARGUMENTS)]
    assert (view.stop_reason, view.usage, view.tokens) == ("completed", RESPONSE_USAGE, (62, 23))
    assert view.http is not None
    assert (view.http.api, view.http.sse_events) == ("openai-responses", 15)


def test_the_whole_openai_response_after_the_function_output(tmp_path: Path) -> None:
    view = view_of(tmp_path, responses_whole_call(0))

    assert view.input_role == "function_call_output"
    assert view.input_text == "get_weather → 14 °C, overcast"
    assert view.thinking_text == "The tool says 14 °C."
    assert view.reply_text == "14 °C in Paris."
    assert (view.tool_calls, view.stop_reason, view.tokens) == ([], "completed", (90, 9))


def test_an_anthropic_stream_with_thinking_text_and_tool_use(tmp_path: Path) -> None:
    view = view_of(tmp_path, messages_stream_call(0))

    assert view.model == "api.anthropic.com:claude-sonnet-4-5"
    assert (view.input_role, view.input_text) == ("user", QUESTION)
    assert view.thinking_text == THINKING
    assert view.reply_text == "I'll check the current weather in Paris."
    assert view.tool_calls == [("get_weather", WEATHER_ARGUMENTS)]
    assert view.stop_reason == "tool_use"
    assert view.usage is not None
    assert (view.usage["input_tokens"], view.usage["output_tokens"]) == (412, 89)
    assert view.http is not None
    assert (view.http.api, view.http.sse_events) == ("anthropic-messages", 18)


def test_the_whole_anthropic_message_after_the_tool_result(tmp_path: Path) -> None:
    view = view_of(tmp_path, messages_whole_call(0))

    assert (view.input_role, view.input_text) == ("user", "get_weather → 14 °C, overcast")
    assert view.reply_text == "It's 14 °C and overcast in Paris."
    assert (view.thinking_text, view.tool_calls) == ("", [])
    assert (view.stop_reason, view.tokens) == ("end_turn", (530, 18))


def test_an_anthropic_message_with_no_message_shows_the_system_prompt(tmp_path: Path) -> None:
    rows = http_call(0, "POST", MESSAGES_URL, {"system": SYSTEM, "messages": []}, [response()])
    view = view_of(tmp_path, rows)

    assert (view.input_role, view.input_text) == ("system", SYSTEM)


def test_the_server_s_own_error_in_a_stream(tmp_path: Path) -> None:
    view = view_of(tmp_path, messages_overloaded_mid_stream_call(0))

    assert view.reply_text == "It is"
    assert (view.outcome, view.error) == ("complete", "overloaded_error: Overloaded")


def test_an_error_response(tmp_path: Path) -> None:
    view = view_of(tmp_path, rate_limited_call(0))

    assert view.error == f"HTTP 429: rate_limit_exceeded: {RATE_LIMIT_MESSAGE}"
    assert view.http is not None
    assert (view.http.status, view.http.body, view.http.transport_error) == (429, "json", None)
    assert (view.reply_text, view.tool_calls, view.usage) == ("", [], None)


def test_a_refused_connection(tmp_path: Path) -> None:
    view = view_of(tmp_path, connect_error_call(0))

    refused = "httpx2.ConnectError: [Errno 111] Connection refused"
    assert (view.outcome, view.error, view.event_count) == ("error", refused, 0)
    assert view.http is not None
    assert (view.http.status, view.http.body, view.http.transport_error) == (None, None, refused)
    assert (view.input_role, view.input_text) == ("user", QUESTION)


def test_a_stream_cut_mid_way(tmp_path: Path) -> None:
    view = view_of(tmp_path, cut_stream_call(0))

    assert view.reply_text == "Let me check"
    assert view.http is not None
    assert (view.http.status, view.http.sse_events) == (200, 2)
    assert (
        view.error
        == view.http.transport_error
        == ("httpx.RemoteProtocolError: peer closed connection")
    )


def test_a_call_cut_short_keeps_what_streamed(tmp_path: Path) -> None:
    view = view_of(tmp_path, truncated_stream_call(0))

    assert view.truncated
    assert view.thinking_text == THINKING
    assert view.reply_text == "I'll check the current weather"
    assert view.stop_reason is None


def test_tool_arguments_cut_mid_way_are_shown_as_their_text(tmp_path: Path) -> None:
    rows = chat_stream_call(0)[:7]  # up to the piece '{"ci', then nothing
    view = view_of(tmp_path, rows)

    assert view.truncated
    assert view.tool_calls == [("get_weather", '{"ci')]
    assert view.to_json()["tool_calls"] == [{"name": "get_weather", "arguments": '{"ci'}]


def test_an_api_it_does_not_know_gets_the_exchange_only(tmp_path: Path) -> None:
    rows = other_api_call(0)
    view = view_of(tmp_path, rows)

    assert view.model == "GET api.example.com/v1/models"
    assert (view.input_role, view.input_text, view.reply_text) == (None, "", "")
    assert view.http is not None
    assert view.http.api is None
    assert (view.http.method, view.http.status, view.http.body) == ("GET", 200, "json")
    assert view.http.body_size == len(orjson.dumps(rows[-2]["event"]["body"]))


@pytest.mark.parametrize(
    ("url", "headers", "first", "api"),
    [
        ("http://127.0.0.1:8000/v1/chat/completions", {}, None, "openai-completions"),
        (
            "https://example.openai.azure.com/openai/deployments/d/chat/completions?a=1",
            {},
            None,
            "openai-completions",
        ),
        ("http://127.0.0.1:8000/v1/responses/", {}, None, "openai-responses"),
        (
            "http://127.0.0.1:9/v1/messages",
            {"anthropic-version": "2023-06-01"},
            None,
            "anthropic-messages",
        ),
        ("https://api.anthropic.com/v1/messages", {}, None, "anthropic-messages"),
        ("https://api.openai.com/v1/threads/t/messages", {}, {"object": "thread.message"}, None),
        ("http://127.0.0.1/proxy", {}, {"object": "chat.completion.chunk"}, "openai-completions"),
        ("http://127.0.0.1/proxy", {}, {"type": "response.created"}, "openai-responses"),
        ("http://127.0.0.1/proxy", {}, {"type": "message_start"}, "anthropic-messages"),
        ("http://[::1/proxy", {}, "[DONE]", None),
    ],
)
def test_which_api_a_call_was_made_to(
    url: str, headers: dict[str, str], first: Any, api: str | None
) -> None:
    assert http_api({"url": url, "headers": headers}, first) == api


def test_a_chat_stream_at_a_path_it_does_not_know_is_read_by_its_shape(tmp_path: Path) -> None:
    rows = chat_stream_call(0)
    rows[0]["url"] = "http://127.0.0.1:4000/proxy/openai"
    view = view_of(tmp_path, rows)

    assert view.reply_text == "Let me check the weather."
    assert view.tool_calls == [("get_weather", WEATHER_ARGUMENTS)]


@pytest.mark.parametrize("what", list(odd_calls()))
def test_odd_shapes_give_a_view_never_an_error(tmp_path: Path, what: str) -> None:
    view = view_of(tmp_path, odd_calls()[what])

    json.dumps(view.to_json())  # the --json output of it
    assert view.http is not None
    assert view.outcome == "complete"


def test_what_odd_shapes_show(tmp_path: Path) -> None:
    odd = {what: view_of(tmp_path, rows) for what, rows in odd_calls().items()}

    assert odd["sse data is not JSON"].reply_text == ""
    assert odd["sse data is not JSON"].http.sse_events == 2  # type: ignore[union-attr]
    no_usage = odd["no usage anywhere"]
    assert (no_usage.reply_text, no_usage.usage, no_usage.tokens) == ("Sunny", None, None)
    assert no_usage.model == "POST api.openai.com/v1/chat/completions"  # its model is 7
    text = odd["text body and no model"]
    assert (text.input_role, text.input_text) == ("user", "[image]")
    assert text.error == "HTTP 500: upstream\x1b[31m failed"
    binary = odd["binary body"]
    assert binary.http is not None
    assert (binary.http.body, binary.http.body_size) == ("binary", 3)
    assert odd["response body is a string"].reply_text == ""
    wrong = odd["fields of the wrong type"]
    assert (wrong.input_role, wrong.input_text) == ("function_call_output", "? → ")
    assert (wrong.reply_text, wrong.tool_calls, wrong.stop_reason, wrong.usage) == (
        "",
        [],
        None,
        None,
    )


# -- any JSON at all ---------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)
KEYS = st.sampled_from(
    [
        "type",
        "choices",
        "delta",
        "index",
        "content",
        "tool_calls",
        "function",
        "arguments",
        "name",
        "output_index",
        "item",
        "response",
        "usage",
        "content_block",
        "partial_json",
        "messages",
        "input",
        "role",
        "error",
        "message",
        "output",
        "text",
    ]
)
VENDOR_JSON = st.recursive(
    JSON_VALUES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    url=st.sampled_from([CHAT_URL, RESPONSES_URL, MESSAGES_URL, "https://x.test/other"]),
    body=VENDOR_JSON,
    datas=st.lists(VENDOR_JSON, max_size=5),
    whole=VENDOR_JSON,
    status=st.sampled_from([200, 400, 529]),
    streamed=st.booleans(),
)
def test_any_json_in_a_known_api_gives_a_view(
    url: str, body: Any, datas: list[Any], whole: Any, status: int, streamed: bool
) -> None:
    events: list[Row] = [{"type": "http_response", "status": status, "headers": {}}]
    events += [sse(data) for data in datas] if streamed else [{"type": "http_body", "body": whole}]
    call = RecordedCall(
        call_index=0,
        line=2,
        request={"method": "POST", "url": url, "headers": {}, "body": body},
        event_rows=events,
        outcome="error",
        error=RecordedError("httpx.ReadError", "reset"),
        boundary="http",
    )
    exchange, reply = http_call_parts(call)
    json.dumps(exchange.to_json())
    assert isinstance(reply.reply_text, str)
    assert isinstance(reply.thinking_text, str)
    json.dumps(reply.tool_calls())
    json.dumps(reply.usage)
