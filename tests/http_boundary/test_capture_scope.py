"""Which requests the HTTP boundary captures, and how it stops a run: transports that never
touch the network, passthrough hosts and openprogram's own vendor clients are left alone;
a mismatch or a blocked boundary escapes ``except Exception`` retry loops whole."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordReplayBlockedError, ReplayMismatch
from openprogram.http_boundary.boundary import (
    PROVIDER_CLIENT_MARK,
    HttpBoundary,
    activate_http_boundary,
    active_http_boundary,
)
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.recording.writer import writer_for
from tests.http_boundary.boundaries import (
    LIBRARIES,
    ScriptedNetworkTransport,
    blocked,
    events,
    library,
    recording_into,
    replaying,
    rows,
)
from tests.http_boundary.exchanges import send
from tests.support.offline import offline
from tests.support.provider_events import collect
from tests.support.sse_server import Script, ScriptedServer, error_script
from tests.support.vendor_wire import oa_text_reply
from tests.support.vendors import HELLO, OPENAI

CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def json_reply(server: ScriptedServer, count: int = 1) -> None:
    for _ in range(count):
        server.serve(Script([b'{"ok": true}'], headers={"Content-Type": "application/json"}))


@pytest.mark.parametrize("lib", LIBRARIES)
def test_transports_that_never_touch_the_network_are_not_captured(lib: str, tmp_path: Path) -> None:
    module = library(lib)
    path = tmp_path / "r.jsonl"

    def wsgi_app(environ: Any, start_response: Any) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"wsgi"]

    async def asgi_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"asgi"})

    async def via_asgi() -> bytes:
        async with module.AsyncClient(transport=module.ASGITransport(app=asgi_app)) as client:
            return bytes((await client.get("http://app.test/")).content)

    mock = module.MockTransport(lambda request: module.Response(200, content=b"mock"))
    with recording_into(path):
        with module.Client(transport=mock) as client:
            assert client.get("http://app.test/").content == b"mock"
        with module.Client(transport=module.WSGITransport(app=wsgi_app)) as client:
            assert client.get("http://app.test/").content == b"wsgi"
        assert asyncio.run(via_asgi()) == b"asgi"

    assert not path.exists()


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_hand_made_network_transport_is_captured(lib: str, tmp_path: Path) -> None:
    module = library(lib)
    path = tmp_path / "r.jsonl"
    network = ScriptedNetworkTransport(
        module, [b"{}"], headers={"content-type": "application/json"}
    )

    with recording_into(path), module.Client(transport=network.transport) as client:
        client.post("http://model.test/v1/x", json=CHAT)

    assert rows(path)[0]["body"] == CHAT


@pytest.mark.parametrize("lib", LIBRARIES)
def test_without_an_active_boundary_a_client_gets_its_own_transport(lib: str) -> None:
    module = library(lib)
    with module.Client() as client:
        url = module.URL("https://api.example.com/")
        assert client._transport_for_url(url) is client._transport
        deactivate = activate_http_boundary(
            HttpBoundary("blocked", blocked_reason="the configuration cannot be read")
        )
        try:
            assert client._transport_for_url(url) is not client._transport
        finally:
            deactivate()
        assert client._transport_for_url(url) is client._transport


@pytest.mark.parametrize("passthrough", ["127.0.0.1", "127.0.0.1:{port}"])
def test_passthrough_hosts_are_sent_as_they_are_in_every_mode(
    passthrough: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    hosts = frozenset({passthrough.format(port=server.port).upper()})
    json_reply(server, 2)

    with recording_into(path, passthrough_hosts=hosts):
        assert send("httpx2", "sync", "GET", f"{server.base_url}/health").status == 200
    deactivate = activate_http_boundary(
        HttpBoundary("blocked", blocked_reason="broken", passthrough_hosts=hosts)
    )
    try:
        assert send("httpx", "async", "GET", f"{server.base_url}/health").status == 200
    finally:
        deactivate()

    assert not path.exists()
    assert len(server.received) == 2


def test_a_passthrough_host_on_another_port_is_captured(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    json_reply(server)
    with recording_into(path, passthrough_hosts=frozenset({"127.0.0.1:1"})):
        send("httpx2", "sync", "GET", f"{server.base_url}/health")
    assert [row["type"] for row in rows(path)] == ["request", "event", "event", "call_end"]


def test_openprogram_vendor_clients_are_recorded_at_the_registry_not_at_http(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    path = tmp_path / "r.jsonl"
    server.serve(Script([oa_text_reply("hello")]))
    json_reply(server)

    with recording_into(path):
        events_seen = asyncio.run(
            collect(OPENAI.provider(server.base_url).stream(OPENAI.model, HELLO))
        )
        with library("httpx").Client() as client:
            setattr(client, PROVIDER_CLIENT_MARK, True)
            marked = client.get(f"{server.base_url}/marked")

    assert events_seen[-1].type == "done"
    assert marked.status_code == 200
    assert not path.exists()
    assert len(server.received) == 2


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_mismatch_escapes_a_retry_loop_whole_and_is_kept_by_the_session(
    lib: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    json_reply(server)
    url = f"{server.base_url}/v1/chat/completions"
    with recording_into(path):
        send(lib, "sync", "POST", url, json=CHAT)

    drifted = {"model": "m", "messages": [{"role": "user", "content": "bye"}]}
    attempts = 0

    def with_retries() -> None:
        nonlocal attempts
        for _ in range(3):  # what an SDK does with an Exception from its transport
            attempts += 1
            try:
                send(lib, "sync", "POST", url, json=drifted)
                return
            except Exception:
                continue

    with offline(), replaying(path) as session, pytest.raises(RecordReplayEscape) as caught:
        with_retries()

    assert attempts == 1
    error = caught.value.error
    assert isinstance(error, ReplayMismatch)
    assert not isinstance(caught.value, Exception)
    assert error.field_path == "body.messages[0].content"
    assert (
        str(caught.value)
        == str(error)
        == (
            "replay mismatch at call 0, field body.messages[0].content:\n"
            "recorded 'hi', incoming 'bye'"
        )
    )
    assert session.mismatches == [error]
    assert session.unconsumed_calls == [0]  # a mismatch does not consume the call


def test_a_mismatch_escapes_an_sdk_at_once_unwrapped(
    server: ScriptedServer, tmp_path: Path
) -> None:
    openai = pytest.importorskip("openai")
    path = tmp_path / "r.jsonl"
    server.serve(Script([oa_text_reply("hello")]))

    def ask(content: str) -> Any:
        client = openai.OpenAI(
            base_url=f"{server.base_url}/v1", api_key="sk-test-0123456789abcdefghij"
        )
        messages = [{"role": "user", "content": content}]
        return list(client.chat.completions.create(model="m", messages=messages, stream=True))

    with recording_into(path):
        ask("hi")
    with offline(), replaying(path), pytest.raises(RecordReplayEscape) as caught:
        ask("bye")
    assert isinstance(caught.value.error, ReplayMismatch)
    assert caught.value.error.field_path == "body.messages[0].content"


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_blocked_boundary_lets_no_request_leave_and_names_the_way_out(
    lib: str, server: ScriptedServer
) -> None:
    json_reply(server)
    with blocked("the replay file is missing"), pytest.raises(RecordReplayEscape) as caught:
        try:
            send(lib, "async", "POST", f"{server.base_url}/v1/messages", json=CHAT)
        except Exception:  # an SDK's retry loop
            pytest.fail("the blocked error was caught as an Exception")

    assert server.received == []
    assert isinstance(caught.value.error, RecordReplayBlockedError)
    message = str(caught.value)
    assert message.startswith("record/replay is blocked: the replay file is missing; ")
    assert "`openprogram recordings status`" in message
    assert "`openprogram recordings off`" in message


def test_a_recording_that_cannot_be_written_stops_the_request(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "not-a-recording.jsonl"
    path.write_text("hello\n")
    json_reply(server)
    with recording_into(path), pytest.raises(RecordReplayEscape) as caught:
        send("httpx2", "sync", "GET", f"{server.base_url}/x")
    assert "not an openprogram recording" in str(caught.value.error)
    assert server.received == []


@pytest.mark.parametrize("lib", LIBRARIES)
def test_a_websocket_handshake_is_refused_under_replay_and_sent_uncaptured_when_recording(
    lib: str, server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(error_script(400, "no websockets here"))
    json_reply(server)
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade"}
    url = f"{server.base_url}/v1/realtime?model=m"

    with recording_into(path), caplog.at_level(logging.WARNING, logger="openprogram"):
        assert send(lib, "sync", "GET", url, headers=upgrade).status == 400
        send(lib, "sync", "GET", f"{server.base_url}/after")

    assert "is not recorded" in caplog.text
    assert [row["url"] for row in rows(path) if row["type"] == "request"] == [
        f"{server.base_url}/after"
    ]
    with offline(), replaying(path) as session, pytest.raises(RecordReplayEscape) as caught:
        send(lib, "sync", "GET", url, headers=upgrade)
    assert "WebSocket APIs such as OpenAI Realtime are not recorded" in str(caught.value)
    assert session.mismatches == [caught.value.error]


def test_the_key_sent_in_a_credential_header_is_removed_wherever_it_appears(
    tmp_path: Path,
) -> None:
    module = library("httpx2")
    path = tmp_path / "r.jsonl"
    key = "gsk_plainlookingkey12345"  # not key-shaped, not in the environment
    echo = f'{{"text": "your key is {key}"}}'.encode()
    network = ScriptedNetworkTransport(module, [b"data: " + echo + b"\n\n"])
    headers = {"x-goog-api-key": key, "Authorization": f"Bearer {key}"}

    with recording_into(path), module.Client(transport=network.transport) as client:
        client.post(f"http://model.test/v1?key={key}", json={"note": key}, headers=headers)

    text = path.read_text()
    assert key not in text
    request = rows(path)[0]
    assert request["url"] == f"http://model.test/v1?key={PLACEHOLDER}"
    assert request["body"] == {"note": PLACEHOLDER}
    assert events(path)[1]["data"] == {"text": f"your key is {PLACEHOLDER}"}


def test_headers_named_by_the_caller_are_stored_and_compared(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    json_reply(server)
    extra = frozenset({"X-Tenant"})
    with recording_into(path, extra_headers=extra):
        send("httpx2", "sync", "GET", f"{server.base_url}/x", headers={"x-tenant": "blue"})

    assert rows(path)[0]["headers"] == {"x-tenant": "blue"}
    with (
        offline(),
        replaying(path, extra_headers=extra),
        pytest.raises(RecordReplayEscape) as caught,
    ):
        send("httpx2", "sync", "GET", f"{server.base_url}/x", headers={"x-tenant": "green"})
    assert isinstance(caught.value.error, ReplayMismatch)
    assert caught.value.error.field_path == "headers.x-tenant"


def test_activations_nest_and_are_undone_last_first(tmp_path: Path) -> None:
    outer = HttpBoundary("record", writer=writer_for(tmp_path / "a.jsonl"))
    inner = HttpBoundary("blocked", blocked_reason="inner")
    undo_outer = activate_http_boundary(outer)
    undo_inner = activate_http_boundary(inner)
    try:
        assert active_http_boundary() is inner
        with pytest.raises(RuntimeError, match="reverse order"):
            undo_outer()
        assert active_http_boundary() is inner
    finally:
        undo_inner()
        undo_inner()  # a second time does nothing
        assert active_http_boundary() is outer
        undo_outer()
    assert active_http_boundary() is None


@pytest.mark.parametrize(
    ("mode", "options"),
    [("record", {}), ("replay", {}), ("blocked", {}), ("paused", {"blocked_reason": "x"})],
)
def test_a_boundary_without_what_its_mode_needs_is_refused(
    mode: Any, options: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match="HttpBoundary"):
        HttpBoundary(mode, **options)
