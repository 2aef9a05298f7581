"""The loopback server speaks what the official SDKs expect, live, with no capture: each
error status raises the vendor's exception for it, JSON answers are gzip-encoded when the
client accepts it, the per-response values change from one response to the next — and the
socket guard the replay tests rely on does stop the SDKs' connections."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.sdk_capture import recording, sockets_watched
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, Scenario, observe
from tests.support.sdk_scenarios import ANTHROPIC_SCENARIOS, OPENAI_SCENARIOS
from tests.support.sdk_server import ErrorReply, SdkServer

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]

EXCEPTIONS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    404: "NotFoundError",
    429: "RateLimitError",
    500: "InternalServerError",
}
OVERLOADED = {"openai": "InternalServerError", "anthropic": "OverloadedError"}


def whole(kind: ClientKind) -> str:
    return "chat_create" if kind.vendor == "openai" else "messages_create"


def scenario_named(name: str) -> Scenario:
    return {**OPENAI_SCENARIOS, **ANTHROPIC_SCENARIOS}[name]


@pytest.mark.parametrize("status", [*EXCEPTIONS, 529])
@pytest.mark.parametrize("kind", KINDS)
async def test_each_error_status_raises_the_vendors_exception(
    kind: ClientKind, status: int
) -> None:
    with SdkServer() as server:
        server.queue(ErrorReply(status, {"retry-after": "7"}))
        observed = await observe(kind, server.base_url, scenario_named(whole(kind)), max_retries=0)
        sent = server.sent[0]

    assert observed.raised is not None
    expected = EXCEPTIONS.get(status, OVERLOADED[kind.vendor])
    assert observed.raised.type == f"{kind.vendor}.{expected}"
    assert observed.raised.status == status
    assert sent.headers["retry-after"] == "7"
    body = observed.raised.body
    if kind.vendor == "openai":  # the SDK keeps the "error" object
        assert set(body) == {"message", "type", "param", "code"}
    else:
        assert body["type"] == "error"
        assert set(body["error"]) == {"type", "message"}
        assert body["request_id"].startswith("req_")


@pytest.mark.parametrize("kind", KINDS)
async def test_json_answers_are_gzip_encoded_and_recorded_decoded(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        observed = await observe(kind, server.base_url, scenario_named(whole(kind)))
        sent = server.sent[0]
    assert observed.raised is None
    assert sent.gzipped
    assert sent.headers["content-encoding"] == "gzip"

    rows = path.read_text()
    assert '"type":"http_body","body":{' in rows
    assert "content-encoding" not in rows
    assert observed.seen[0]["model"] in rows


def test_a_client_that_asks_for_no_encoding_gets_plain_json() -> None:
    with SdkServer() as server:
        answer = httpx.post(
            f"{server.openai_url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
            headers={"accept-encoding": "identity"},
        )
    assert "content-encoding" not in answer.headers
    assert answer.json()["choices"][0]["message"]["content"] == "You said: hi"


@pytest.mark.parametrize("kind", KINDS)
async def test_per_response_values_change_from_one_response_to_the_next(
    kind: ClientKind,
) -> None:
    name = whole(kind)
    with SdkServer() as server:
        first = await observe(kind, server.base_url, scenario_named(name))
        second = await observe(kind, server.base_url, scenario_named(name))
        headers = [sent.headers for sent in server.sent]

    request_id = "x-request-id" if kind.vendor == "openai" else "request-id"
    assert headers[0][request_id] != headers[1][request_id]
    assert headers[0]["cf-ray"] != headers[1]["cf-ray"]
    assert first.seen[0]["id"] != second.seen[0]["id"]
    same_content = "choices" if kind.vendor == "openai" else "content"
    assert first.seen[0][same_content] == second.seen[0][same_content]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_socket_guard_stops_the_sdk_connections(kind: ClientKind) -> None:
    with SdkServer() as server, sockets_watched() as attempts:
        observed = await observe(kind, server.base_url, scenario_named(whole(kind)), max_retries=0)

    assert observed.raised is not None
    assert observed.raised.type == f"{kind.vendor}.APIConnectionError"
    assert attempts
