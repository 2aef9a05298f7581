"""One live answer against the recorded one, on event rows: status, body kind, shapes per
event type, the compared headers and the tool calls; and which calls drift sends at all."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.drift.comparison import answer_drift, answer_of_rows, offered_tools
from openprogram.drift.credentials import Credentials, MissingCredentials, apply_credentials
from openprogram.drift.origins import BaseUrls, parse_base_urls
from openprogram.drift.sending import Unsent, live_request
from openprogram.recording.format import RecordedCall, RecordedError

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def response(status: int = 200, **headers: str) -> dict[str, Any]:
    return {"type": "http_response", "status": status, "headers": headers}


def body(value: Any) -> dict[str, Any]:
    return {"type": "http_body", "body": value}


def sse(data: Any, event: str | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {"type": "sse", "data": data}
    if event is not None:
        row["event"] = event
    return row


def kinds(request: dict[str, Any], recorded: list[Any], live: list[Any]) -> list[tuple[str, ...]]:
    found = answer_drift(request, answer_of_rows(recorded), answer_of_rows(live))
    return [(drift.kind, drift.path, drift.what) for drift in found]


def messages_stream(text: str = "Hi", stop: str = "end_turn") -> list[dict[str, Any]]:
    return [
        response(**{"content-type": "text/event-stream"}),
        sse(
            {"type": "message_start", "message": {"id": "msg_1", "role": "assistant"}},
            "message_start",
        ),
        sse(
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": text}},
            "content_block_delta",
        ),
        sse(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 3},
            },
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


ANTHROPIC = {"method": "POST", "url": "https://api.anthropic.com/v1/messages", "headers": {}}


def test_an_event_type_no_longer_sent_is_breaking_and_a_new_one_additive() -> None:
    recorded = messages_stream()
    live = [row for row in messages_stream() if row.get("event") != "message_stop"]
    live.append(sse({"type": "message_end"}, "message_end"))
    assert kinds(ANTHROPIC, recorded, live) == [
        ("breaking", "message_stop", "event type no longer sent"),
        ("additive", "message_end", "new event type"),
    ]


def test_a_stream_with_other_text_and_more_deltas_has_only_content_drift() -> None:
    recorded = messages_stream("Hello there")
    live = messages_stream("Bonjour")
    live.insert(3, copy.deepcopy(live[2]))
    assert kinds(ANTHROPIC, recorded, live) == [
        ("content", "content_block_delta: delta.text", "other values")
    ]


def test_success_and_error_swapped_stops_at_the_status_and_two_errors_compare_shapes() -> None:
    recorded = [response(200), body({"id": "x", "choices": []})]
    live = [response(429), body({"error": {"message": "slow down"}})]
    assert kinds({}, recorded, live) == [("breaking", "status", "changed")]
    recorded_error = [response(400), body({"error": {"message": "bad", "type": "invalid"}})]
    live_error = [response(400), body({"error": {"message": "bad", "code": 7}})]
    assert kinds({}, recorded_error, live_error) == [
        ("breaking", "error.type", "missing"),
        ("breaking", "error.code", "new field in the error body"),
    ]


def test_the_body_kind_and_the_compared_headers() -> None:
    json_type, text_type = {"content-type": "application/json"}, {"content-type": "text/plain"}
    recorded = [response(200, **json_type, **{"openai-version": "1"}), body({"a": 1})]
    live = [
        response(200, **text_type, **{"anthropic-version": "2"}),
        {"type": "http_body", "text": "a"},
    ]
    assert kinds({}, recorded, live) == [
        ("breaking", "headers.content-type", "other value"),
        ("breaking", "headers.openai-version", "no longer sent"),
        ("breaking", "body", "kind changed"),
        ("additive", "headers.anthropic-version", "new header"),
    ]
    charset = [response(200, **{"content-type": "application/json; charset=utf-8"}), body({"a": 1})]
    assert kinds({}, [response(200, **json_type), body({"a": 1})], charset) == [
        ("content", "headers.content-type", "other value")
    ]


def chat_tool_answer(name: str, arguments: str) -> list[dict[str, Any]]:
    call = {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    return [response(200), body(answer)]


TOOLS_REQUEST = {
    "method": "POST",
    "url": CHAT_URL,
    "headers": {},
    "body": {
        "model": "gpt-4o-mini",
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "get_weather",
                    "parameters": {"type": "object", "properties": {"city": {}}},
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "get_time",
                    "parameters": {"type": "object", "properties": {"zone": {}}},
                },
            },
        ],
    },
}


def test_another_offered_tool_is_content_and_an_unknown_tool_or_argument_is_breaking() -> None:
    recorded = chat_tool_answer("get_weather", '{"city": "Paris"}')
    other_tool = chat_tool_answer("get_time", '{"zone": "CET"}')
    assert {kind for kind, _, _ in kinds(TOOLS_REQUEST, recorded, other_tool)} == {"content"}
    assert kinds(TOOLS_REQUEST, recorded, chat_tool_answer("get_weather", '{"town": "Paris"}')) == [
        ("breaking", "tool call get_weather", "argument keys outside the tool's schema"),
        ("content", "choices[*].message.tool_calls[*].function.arguments", "other values"),
    ]
    assert kinds(TOOLS_REQUEST, recorded, chat_tool_answer("search", "{}"))[0] == (
        "breaking",
        "tool call search",
        "a tool the request did not offer",
    )


def test_offered_tools_are_read_from_every_api() -> None:
    schema = {"type": "object", "properties": {"q": {}}}
    assert offered_tools({"tools": [{"name": "a", "input_schema": schema}]}) == {"a": schema}
    assert offered_tools({"tools": [{"type": "function", "name": "b", "parameters": schema}]}) == {
        "b": schema
    }
    assert offered_tools(
        {"tools": [{"functionDeclarations": [{"name": "c", "parameters": schema}]}]}
    ) == {"c": schema}
    assert offered_tools(
        {"toolConfig": {"tools": [{"toolSpec": {"name": "d", "inputSchema": {"json": schema}}}]}}
    ) == {"d": schema}
    assert offered_tools({"messages": []}) == {}
    assert offered_tools("not an object") == {}


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text("abc", max_size=3), inner, max_size=3)
    ),
    max_leaves=12,
)


def with_other_values(value: Any, seed: int) -> Any:
    """The same shape, every leaf another value of its type."""
    if isinstance(value, dict):
        return {key: with_other_values(item, seed) for key, item in value.items()}
    if isinstance(value, list):
        return [with_other_values(item, seed) for item in value]
    if isinstance(value, bool):
        return value if seed % 2 else not value
    if isinstance(value, int):
        return value + seed
    if isinstance(value, str):
        return f"{value}~{seed}"
    return value


@settings(max_examples=60, deadline=None)
@given(JSON_VALUES, st.integers(1, 50))
def test_the_same_answer_shape_with_other_values_is_never_breaking_or_additive(
    value: Any, seed: int
) -> None:
    recorded = [response(200, **{"content-type": "application/json"}), body(value)]
    live = [
        response(200, **{"content-type": "application/json"}),
        body(with_other_values(value, seed)),
    ]
    assert {kind for kind, _, _ in kinds({}, recorded, live)} <= {"content"}


# --- which calls are sent -------------------------------------------------------------------


def http_call(
    request: dict[str, Any], *rows: dict[str, Any], outcome: str = "complete"
) -> RecordedCall:
    return RecordedCall(
        call_index=0,
        line=2,
        request={"method": "POST", "url": CHAT_URL, "headers": {}, **request},
        event_rows=list(rows) or [response(200), body({})],
        outcome=outcome,  # type: ignore[arg-type]
        boundary="http",
    )


KEYED = Credentials({"OPENAI_API_KEY": "sk-live-0123456789abcdefghij"})


STATE = "it depends on state the server keeps"
GEMINI_URL = "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent"
FILE_PART = {"type": "file", "file": {"file_id": "file-1"}}
REDACTED = "holds a redacted value ([secret removed]): sending it would not be the recorded request"


@pytest.mark.parametrize(
    ("request_fields", "reason"),
    [
        ({"body": {"previous_response_id": "r_1"}}, f"{STATE} (body.previous_response_id)"),
        (
            {"body": {"messages": [{"content": [FILE_PART]}]}},
            f"{STATE} (body.messages[0].content[0].file.file_id)",
        ),
        (
            {"url": "https://api.openai.com/v1/files"},
            "it calls /files, which manages state the server keeps",
        ),
        (
            {"url": "https://api.openai.com/v1/responses/resp_1", "method": "GET"},
            "it names a stored response, which the server keeps",
        ),
        ({"url": GEMINI_URL, "body": {"cachedContent": "c/1"}}, f"{STATE} (body.cachedContent)"),
        ({"method": "DELETE"}, "a DELETE changes what the server holds"),
        (
            {"body": {"messages": [{"role": "user", "content": "key: [secret removed]"}]}},
            f"body.messages[0].content {REDACTED}",
        ),
    ],
    ids=[
        "previous_response_id",
        "file_id",
        "/files",
        "stored",
        "cachedContent",
        "DELETE",
        "redacted",
    ],
)
def test_calls_that_depend_on_server_state_or_hold_a_redacted_value_are_not_sent(
    request_fields: dict[str, Any], reason: str
) -> None:
    with pytest.raises(Unsent) as unsent:
        live_request(http_call(request_fields), KEYED, BaseUrls())
    assert str(unsent.value) == reason


def test_calls_without_a_stable_recorded_answer_are_not_sent() -> None:
    refused = http_call({}, outcome="error")
    refused.event_rows = []
    refused.error = RecordedError("ConnectError", "refused")
    with pytest.raises(Unsent, match=r"got no response \(ConnectError\)"):
        live_request(refused, KEYED, BaseUrls())
    with pytest.raises(Unsent, match="a transient 429"):
        live_request(http_call({}, response(429), body({})), KEYED, BaseUrls())
    truncated = http_call({})
    truncated.outcome = None
    with pytest.raises(Unsent, match="stops inside this call"):
        live_request(truncated, KEYED, BaseUrls())


def test_a_sendable_call_is_sent_as_recorded_to_its_origin_with_its_key() -> None:
    call = http_call({"headers": {"content-type": "application/json"}, "body": {"model": "m"}})
    request = live_request(call, KEYED, parse_base_urls(["openai=http://127.0.0.1:9"]))
    assert request.url == "http://127.0.0.1:9/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-live-0123456789abcdefghij"
    assert request.headers["content-type"] == "application/json"
    assert request.body == b'{"model":"m"}'


def test_gemini_takes_the_key_where_the_recording_had_it() -> None:
    credentials = Credentials({"GEMINI_API_KEY": "gem-key-0123456789"})
    headers: dict[str, str] = {}
    url = f"{GEMINI_URL}?alt=sse&key=[secret removed]"
    sent = apply_credentials("google", "POST", url, headers, b"", credentials)
    assert sent.endswith("?alt=sse&key=gem-key-0123456789")
    assert headers == {}
    sent = apply_credentials("google", "POST", url.partition("?")[0], headers, b"", credentials)
    assert headers == {"x-goog-api-key": "gem-key-0123456789"}


def test_a_header_given_stands_in_for_a_missing_key_and_replaces_the_vendors() -> None:
    given = Credentials({}, (("Authorization", "Bearer proxy-token-0123456789"),))
    headers: dict[str, str] = {}
    apply_credentials("openai", "POST", CHAT_URL, headers, b"", given)
    assert headers == {"Authorization": "Bearer proxy-token-0123456789"}
    with pytest.raises(MissingCredentials, match=r"^no credentials known for this API$"):
        apply_credentials(None, "POST", "https://example.invalid/x", {}, b"", Credentials({}))
    with pytest.raises(MissingCredentials, match=r"^no openai key: set OPENAI_API_KEY \(or ask\)$"):
        apply_credentials(
            "openai", "POST", CHAT_URL, {}, b"", Credentials({}, other_way=" (or ask)")
        )


def test_the_text_report_names_many_content_paths_on_one_line() -> None:
    from openprogram.drift.check import CallDrift
    from openprogram.drift.response_shapes import PathDrift

    drift = [PathDrift("breaking", "status", "changed", "200", "500")]
    drift += [PathDrift("content", f"usage.n{i}", "other values", "1", "2") for i in range(4)]
    checked = CallDrift(3, "http", "POST api.x/v1", "drifted", drift)
    assert checked.lines() == [
        "call 3 POST api.x/v1: breaking: status changed: 200 → 500",
        "call 3 POST api.x/v1: content: other values at 4 paths: usage.n0, usage.n1 and 2 more "
        "(--json lists each)",
    ]
    few = CallDrift(3, "http", "POST api.x/v1", "drifted", drift[1:3])
    assert few.lines() == [
        "call 3 POST api.x/v1: content: usage.n0 other values: 1 → 2",
        "call 3 POST api.x/v1: content: usage.n1 other values: 1 → 2",
    ]
