"""``show``'s view of Gemini calls: a ``streamGenerateContent`` stream and a whole
``generateContent`` reply put back together (thought, text, function calls, finish reason,
usage), a refused prompt, Google's error body, the pieces of text a stream carried, and any
JSON at all giving a view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.format import RecordedCall
from openprogram.store.show import CallView, call_views
from openprogram.vendors import call_tokens, http_api, http_call_parts, streamed_blocks
from tests.support.gemini_http_rows import (
    STREAM_URL,
    STREAM_USAGE,
    THOUGHT,
    WHOLE_URL,
    gemini_blocked_call,
    gemini_error_call,
    gemini_stream_call,
    gemini_whole_call,
)
from tests.support.http_call_rows import write_calls
from tests.support.http_exchange_rows import QUESTION, SYSTEM, WEATHER_ARGUMENTS
from tests.support.recording_rows import Row

API = "gemini-generate-content"


def view_of(tmp_path: Path, rows: list[Row]) -> CallView:
    (view,) = call_views(write_calls(tmp_path / "one.jsonl", rows))
    return view


def recorded(rows: list[Row]) -> RecordedCall:
    request = {key: rows[0][key] for key in ("method", "url", "headers", "body")}
    events = [row["event"] for row in rows if row["type"] == "event"]
    return RecordedCall(
        call_index=0,
        line=2,
        request=request,
        event_rows=events,
        outcome="complete",
        boundary="http",
    )


def test_a_stream_with_a_thought_text_and_a_function_call(tmp_path: Path) -> None:
    view = view_of(tmp_path, gemini_stream_call(0))

    assert (view.input_role, view.input_text) == ("user", QUESTION)
    assert view.thinking_text == THOUGHT
    assert view.reply_text == "Let me check the weather."
    assert view.tool_calls == [("get_weather", WEATHER_ARGUMENTS)]
    assert (view.stop_reason, view.usage, view.tokens) == ("STOP", STREAM_USAGE, (61, 17))
    assert view.http is not None
    assert (view.http.api, view.http.body, view.http.sse_events) == (API, "sse", 4)


def test_the_whole_reply_after_the_function_response(tmp_path: Path) -> None:
    view = view_of(tmp_path, gemini_whole_call(0))

    assert view.input_role == "user"
    assert view.input_text == 'get_weather → {"temp_c":14,"sky":"overcast"}'
    assert view.reply_text == "It's 14 °C and overcast in Paris."
    assert (view.thinking_text, view.tool_calls) == ("", [])
    assert (view.stop_reason, view.tokens) == ("STOP", (98, 11))
    assert view.http is not None
    assert (view.http.api, view.http.body) == (API, "json")


def test_a_refused_prompt_shows_its_block_reason(tmp_path: Path) -> None:
    view = view_of(tmp_path, gemini_blocked_call(0))

    assert (view.reply_text, view.stop_reason, view.tokens) == ("", "PROHIBITED_CONTENT", (7, 0))


def test_an_error_shows_google_s_status_and_message(tmp_path: Path) -> None:
    view = view_of(tmp_path, gemini_error_call(0))

    assert view.error == (
        "HTTP 429: RESOURCE_EXHAUSTED: Resource has been exhausted (e.g. check quota)."
    )


def test_a_request_with_only_a_system_instruction_shows_it(tmp_path: Path) -> None:
    rows = gemini_whole_call(0)
    rows[0]["body"]["contents"] = []
    view = view_of(tmp_path, rows)

    assert (view.input_role, view.input_text) == ("system", SYSTEM)


def test_the_streamed_text_is_one_block_the_thought_another() -> None:
    call = recorded(gemini_stream_call(0))

    (text,) = streamed_blocks(call)  # the thought came in one piece: nothing cut across it
    path = ("data", "candidates", 0, "content", "parts", 0, "text")
    assert [(piece.event, piece.path, piece.text) for piece in text] == [
        (2, path, "Let me check"),
        (3, path, " the weather."),
    ]
    assert call_tokens(call) == 61 + 17


@pytest.mark.parametrize(
    ("url", "first", "api"),
    [
        (STREAM_URL, None, API),
        (WHOLE_URL, None, API),
        (
            "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/us-central1"
            "/publishers/google/models/gemini-2.5-pro:generateContent",
            None,
            API,
        ),
        ("http://127.0.0.1:4000/proxy", {"candidates": [], "responseId": "r"}, API),
        ("http://127.0.0.1:4000/proxy", {"candidates": []}, None),
        ("https://generativelanguage.googleapis.com/v1beta/models/m:countTokens", {}, None),
    ],
)
def test_which_calls_are_gemini_s(url: str, first: Any, api: str | None) -> None:
    assert http_api({"url": url, "headers": {}}, first) == api


_KEYS = st.sampled_from(
    [
        "contents",
        "parts",
        "text",
        "thought",
        "role",
        "functionCall",
        "functionResponse",
        "name",
        "args",
        "response",
        "inlineData",
        "mimeType",
        "systemInstruction",
        "candidates",
        "content",
        "index",
        "finishReason",
        "usageMetadata",
        "promptFeedback",
        "blockReason",
        "error",
        "message",
        "status",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(body=_JSON, datas=st.lists(_JSON, max_size=4), whole=_JSON, streamed=st.booleans())
def test_any_json_gives_a_view(body: Any, datas: list[Any], whole: Any, streamed: bool) -> None:
    events: list[Row] = [{"type": "http_response", "status": 200, "headers": {}}]
    events += (
        [{"type": "sse", "data": d} for d in datas]
        if streamed
        else [{"type": "http_body", "body": whole}]
    )
    request = {"method": "POST", "url": STREAM_URL, "headers": {}, "body": body}
    call = RecordedCall(
        call_index=0,
        line=2,
        request=request,
        event_rows=events,
        outcome="complete",
        boundary="http",
    )
    exchange, reply = http_call_parts(call)
    json.dumps(exchange.to_json())
    assert isinstance(reply.reply_text, str)
    assert isinstance(reply.thinking_text, str)
    json.dumps(reply.tool_calls())
    json.dumps(reply.usage)
    streamed_blocks(call)
