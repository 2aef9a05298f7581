"""An HTTP request is redacted by the provider boundary's rule: configuration by name and
value, the conversation by value only; and the per-run response fields are named once."""

from __future__ import annotations

import pytest

from openprogram.recording.call_digest import (
    deterministic_event,
    is_non_deterministic_header,
    request_ignore_fields,
)
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER

KEY = "sk-" + "Zx9" * 10
KNOWN = "known-credential-value"


def redact(request: dict[str, object]) -> dict[str, object]:
    return SecretRedactor([KNOWN]).redact_http_request(request)


def test_configuration_is_redacted_by_name_and_the_conversation_by_value_only() -> None:
    request = {
        "method": "POST",
        "url": f"https://user:pa55word@example.test/v1/chat?api_key={KNOWN}&x=1",
        "headers": {"content-type": "application/json", "x-api-key": "abc123def456"},
        "body": {
            "model": "gpt-4o-mini",
            "api_key": "short-but-named",
            "metadata": {"password": "p4ss", "note": f"Bearer {KEY}"},
            "messages": [
                {"role": "user", "content": f"my key is {KEY}"},
                {"role": "assistant", "content": None, "password": "hunter2!"},
            ],
            "input": [{"type": "function_call", "arguments": '{"token": "visible"}'}],
            "system": f"you know {KNOWN}",
            "instructions": {"token": "kept-as-conversation"},
        },
    }
    redacted = redact(request)
    assert redacted == {
        "method": "POST",
        "url": f"https://{PLACEHOLDER}@example.test/v1/chat?api_key={PLACEHOLDER}&x=1",
        "headers": {"content-type": "application/json", "x-api-key": PLACEHOLDER},
        "body": {
            "model": "gpt-4o-mini",
            "api_key": PLACEHOLDER,
            "metadata": {"password": PLACEHOLDER, "note": f"Bearer {PLACEHOLDER}"},
            "messages": [
                {"role": "user", "content": f"my key is {PLACEHOLDER}"},
                {"role": "assistant", "content": None, "password": "hunter2!"},
            ],
            "input": [{"type": "function_call", "arguments": '{"token": "visible"}'}],
            "system": f"you know {PLACEHOLDER}",
            "instructions": {"token": "kept-as-conversation"},
        },
    }
    assert redact(redacted) == redacted  # idempotent: replay redacts both sides again


def test_text_bodies_are_redacted_by_value_and_bytes_are_kept() -> None:
    assert redact({"body_text": f"key={KEY}"}) == {"body_text": f"key={PLACEHOLDER}"}
    assert redact({"body_base64": "c2stc2VjcmV0"}) == {"body_base64": "c2stc2VjcmV0"}
    assert redact({"body": [KEY]}) == {"body": [PLACEHOLDER]}


@pytest.mark.parametrize(
    "name",
    [
        "date",
        "x-request-id",
        "request-id",
        "x-amzn-requestid",
        "openai-processing-ms",
        "cf-ray",
        "server-timing",
        "x-envoy-upstream-service-time",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-tokens",
        "anthropic-ratelimit-input-tokens-remaining",
        "anthropic-ratelimit-requests-reset",
        "retry-after",
        "retry-after-ms",
    ],
)
def test_per_run_response_headers(name: str) -> None:
    assert is_non_deterministic_header(name)


@pytest.mark.parametrize(
    "name", ["x-litellm-call-id", "x-litellm-response-duration-ms", "x-gateway-trace", "server"]
)
def test_any_header_a_server_adds_is_left_out(name: str) -> None:
    assert is_non_deterministic_header(name)


@pytest.mark.parametrize(
    "name",
    ["content-type", "content-encoding", "location", "www-authenticate", "x-should-retry"],
)
def test_headers_that_change_what_the_client_does_are_compared(name: str) -> None:
    assert not is_non_deterministic_header(name)


def test_the_times_of_the_response_object_are_left_out_and_nothing_else() -> None:
    data = {
        "id": "chatcmpl-1",
        "created": 1,
        "system_fingerprint": "fp",
        "model": "m",
        "choices": [{"delta": {"tool_calls": [{"id": "call_1"}]}}],
    }
    assert deterministic_event("http", {"type": "sse", "data": data}) == {
        "type": "sse",
        "data": {
            "id": "chatcmpl-1",
            "model": "m",
            "choices": [{"delta": {"tool_calls": [{"id": "call_1"}]}}],
        },
    }
    nested = {"type": "response.completed", "response": {"id": "resp_1", "created_at": 5}}
    assert deterministic_event("http", {"type": "http_body", "body": nested}) == {
        "type": "http_body",
        "body": {"type": "response.completed", "response": {"id": "resp_1"}},
    }
    gemini = {"responseId": "r1", "createTime": "2026-12-04T01:00:00Z", "modelVersion": "m"}
    assert deterministic_event("http", {"type": "http_body", "body": gemini}) == {
        "type": "http_body",
        "body": {"responseId": "r1", "modelVersion": "m"},
    }
    text = {"type": "sse", "data": "[DONE]"}
    assert deterministic_event("http", text) is text
    provider = {"type": "done", "message": {"id": "x", "timestamp": 3}}
    assert deterministic_event("provider", provider) is provider


def test_only_a_provider_request_leaves_out_timestamps() -> None:
    assert request_ignore_fields("provider") == {"timestamp"}
    assert request_ignore_fields("http") == frozenset()


def test_what_changes_between_two_bedrock_runs_is_left_out() -> None:
    metadata = {
        "type": "eventstream",
        "base64": "AAAA",
        "headers": {":event-type": "metadata"},
        "data": {"usage": {"inputTokens": 3}, "metrics": {"latencyMs": 412}, "p": "abcdefgh"},
    }
    assert deterministic_event("http", metadata) == {
        "type": "eventstream",
        "headers": {":event-type": "metadata"},
        "data": {"usage": {"inputTokens": 3}, "metrics": {}},
    }
    cut_off = {"type": "eventstream", "base64": "AAAA"}  # bytes that made no whole message
    assert deterministic_event("http", cut_off) is cut_off
    body = {"output": {"message": {}}, "stopReason": "end_turn", "metrics": {"latencyMs": 9}}
    assert deterministic_event("http", {"type": "http_body", "body": body}) == {
        "type": "http_body",
        "body": {"output": {"message": {}}, "stopReason": "end_turn", "metrics": {}},
    }


def test_geminis_conversation_is_redacted_by_value_only() -> None:
    call = {"functionCall": {"name": "login", "args": {"password": "hunter2!"}}}
    request = {
        "method": "POST",
        "url": "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
        "body": {
            "contents": [{"role": "model", "parts": [call]}],
            "systemInstruction": {"parts": [{"text": f"the key is {KEY}", "token": "kept"}]},
            "generationConfig": {"token": "named"},
        },
    }
    body = redact(request)["body"]
    assert isinstance(body, dict)
    assert body["contents"] == [{"role": "model", "parts": [call]}]
    assert body["systemInstruction"] == {
        "parts": [{"text": f"the key is {PLACEHOLDER}", "token": "kept"}]
    }
    assert body["generationConfig"] == {"token": PLACEHOLDER}
