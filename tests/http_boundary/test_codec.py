"""The HTTP codec: what of a request and a response is stored, redacted how, and how the
stored rows are served back."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest

from openprogram.http_boundary.codec import (
    MULTIPART_BOUNDARY,
    body_event,
    encode_body_row,
    encode_sse_row,
    fast_retry_headers,
    request_sections,
    response_event,
    sse_event_row,
)
from openprogram.http_boundary.sse import SseParser
from openprogram.json_nesting import MAX_NESTING_DEPTH
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER

KEY = "sk-live-0123456789abcdefghijklmnop"
REDACTOR = SecretRedactor([KEY])
JSON = [("content-type", "application/json")]


def sections(headers: list[tuple[str, str]], content: bytes, **kw: Any) -> dict[str, Any]:
    return request_sections("POST", "https://api.example.com/v1/x", headers, content, **kw)


def test_only_the_headers_that_change_a_request_are_stored() -> None:
    headers = [
        ("content-type", "application/json"),
        ("authorization", f"Bearer {KEY}"),
        ("x-api-key", KEY),
        ("user-agent", "OpenAI/Python 3.57.0"),
        ("x-stainless-retry-count", "0"),
        ("idempotency-key", "stainless-python-retry-1"),
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "tools-1"),
        ("anthropic-beta", "cache-2"),
        ("openai-beta", "assistants=v2"),
        ("x-team", "blue"),
    ]
    stored = sections(headers, b"{}", extra_headers=frozenset({"x-team", "x-api-key"}))
    assert stored["headers"] == {
        "content-type": "application/json",
        "anthropic-version": "2023-06-01",
        "anthropic-beta": "tools-1, cache-2",
        "openai-beta": "assistants=v2",
        "x-team": "blue",  # named by the caller; x-api-key named too, but never stored
    }


@pytest.mark.parametrize(
    ("content_type", "content", "expected"),
    [
        ("application/json", b'{"model": "m", "n": 1e5}', {"body": {"model": "m", "n": 1e5}}),
        ("application/vnd.api+json; charset=utf-8", b"[1]", {"body": [1]}),
        ("application/json", b'{"broken": ', {"body_text": '{"broken": '}),
        ("application/json", b'{"n": NaN}', {"body_text": '{"n": NaN}'}),
        ("text/plain", b'{"a": 1}', {"body_text": '{"a": 1}'}),
        ("application/octet-stream", b"\xff\x00", {"body_base64": "/wA="}),
        ("application/json", b"", {}),
    ],
)
def test_a_request_body_is_stored_in_exactly_one_form(
    content_type: str, content: bytes, expected: dict[str, Any]
) -> None:
    stored = sections([("content-type", content_type)], content)
    assert {k: v for k, v in stored.items() if k.startswith("body")} == expected


def test_json_nested_deeper_than_a_row_may_hold_is_stored_as_text() -> None:
    deep = b"[" * MAX_NESTING_DEPTH + b"]" * MAX_NESTING_DEPTH
    shallow = b"[" * (MAX_NESTING_DEPTH - 2) + b"]" * (MAX_NESTING_DEPTH - 2)
    assert "body_text" in sections(JSON, deep)
    assert "body" in sections(JSON, shallow)
    row = sse_event_row({"data": deep.decode()}, REDACTOR)
    assert row["data"] == deep.decode()


def test_the_random_multipart_boundary_is_stored_fixed_so_uploads_compare_equal() -> None:
    def upload(boundary: str) -> dict[str, Any]:
        disposition = 'Content-Disposition: form-data; name="f"'
        body = f"--{boundary}\r\n{disposition}\r\n\r\nhi\r\n--{boundary}--\r\n"
        headers = [("content-type", f"multipart/form-data; boundary={boundary}")]
        return sections(headers, body.encode())

    first, second = upload("a1b2c3d4e5"), upload("f6e7d8c9b0")
    assert first == second
    assert first["headers"]["content-type"] == f"multipart/form-data; boundary={MULTIPART_BOUNDARY}"
    assert first["body_text"].startswith(f"--{MULTIPART_BOUNDARY}\r\n")


def test_response_headers_lose_credentials_cookies_hop_by_hop_and_encoding() -> None:
    event = response_event(
        200,
        [
            ("content-type", "text/event-stream"),
            ("set-cookie", "session=abc"),
            ("set-cookie", "other=def"),
            ("connection", "keep-alive"),
            ("keep-alive", "timeout=5"),
            ("transfer-encoding", "chunked"),
            ("content-encoding", "gzip"),
            ("content-length", "120"),
            ("x-api-key", KEY),
            ("x-echo", f"key {KEY}"),
            ("openai-version", "2020-10-01"),
            ("via", "1.1 a"),
            ("via", "1.1 b"),
        ],
        REDACTOR,
    )
    assert event == {
        "type": "http_response",
        "status": 200,
        "headers": {
            "content-type": "text/event-stream",
            "x-echo": f"key {PLACEHOLDER}",
            "openai-version": "2020-10-01",
            "via": "1.1 a, 1.1 b",
        },
    }


def test_sse_data_is_stored_parsed_only_when_it_is_a_json_object_or_array() -> None:
    assert sse_event_row({"data": '{"a": [1, 2]}'}, REDACTOR)["data"] == {"a": [1, 2]}
    assert sse_event_row({"data": "[1]"}, REDACTOR)["data"] == [1]
    for text in ("[DONE]", "1e5", '"quoted"', "true", "{not json"):
        assert sse_event_row({"data": text}, REDACTOR)["data"] == text


def test_sse_rows_keep_the_fields_the_server_sent_and_are_redacted_by_value_only() -> None:
    event = {"event": "delta", "data": f'{{"password": "hunter2!", "k": "{KEY}"}}', "id": "4"}
    assert sse_event_row(event, REDACTOR) == {
        "type": "sse",
        "event": "delta",
        "data": {"password": "hunter2!", "k": PLACEHOLDER},
        "id": "4",
    }
    assert sse_event_row({"data": "x", "retry": 10}, REDACTOR) == {
        "type": "sse",
        "data": "x",
        "retry": 10,
    }


@pytest.mark.parametrize(
    "row",
    [
        {"type": "sse", "data": {"choices": [{"delta": {"content": "a\nb"}}]}},
        {"type": "sse", "event": "message_stop", "data": {"type": "message_stop"}},
        {"type": "sse", "data": "line one\nline two", "id": "", "retry": 5},
        {"type": "sse", "data": ""},
    ],
)
def test_an_sse_row_is_served_as_bytes_that_parse_to_the_same_event(row: dict[str, Any]) -> None:
    parsed = SseParser().feed(encode_sse_row(row).decode())
    assert len(parsed) == 1
    assert sse_event_row(parsed[0], REDACTOR) == row


def test_a_body_is_stored_decoded_in_one_form_and_served_as_its_bytes() -> None:
    json_row = body_event("application/json", b'{"error": {"message": "slow"}}', REDACTOR)
    text_row = body_event("text/plain; charset=utf-8", "héllo".encode(), REDACTOR)
    bytes_row = body_event("image/png", b"\x89PNG\xff", REDACTOR)
    assert json_row == {"type": "http_body", "body": {"error": {"message": "slow"}}}
    assert text_row == {"type": "http_body", "text": "héllo"}
    assert bytes_row == {"type": "http_body", "base64": base64.b64encode(b"\x89PNG\xff").decode()}
    assert body_event("application/json", b"", REDACTOR) is None
    assert orjson.loads(encode_body_row(json_row)) == {"error": {"message": "slow"}}
    assert encode_body_row(text_row) == "héllo".encode()
    assert encode_body_row(bytes_row) == b"\x89PNG\xff"


@pytest.mark.parametrize(
    ("status", "headers", "served"),
    [
        (429, {"retry-after": "2"}, {"retry-after-ms": "1"}),
        (429, {"retry-after": "0"}, {"retry-after-ms": "1"}),
        (503, {"retry-after-ms": "250", "x": "y"}, {"x": "y", "retry-after-ms": "1"}),
        (500, {}, {"retry-after-ms": "1"}),
        (408, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, {"retry-after-ms": "1"}),
        (400, {"x-should-retry": "true"}, {"x-should-retry": "true", "retry-after-ms": "1"}),
        # the SDKs do not retry these: served as recorded
        (400, {"retry-after": "2"}, {"retry-after": "2"}),
        (200, {}, {}),
        (429, {"x-should-retry": "false"}, {"x-should-retry": "false"}),
        (429, {"retry-after": "120"}, {"retry-after": "120"}),
    ],
)
def test_retryable_responses_are_served_with_the_smallest_hint_the_sdks_honour(
    status: int, headers: dict[str, str], served: dict[str, str]
) -> None:
    assert fast_retry_headers(status, headers) == served
