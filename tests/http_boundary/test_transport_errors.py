"""Failures replay as themselves: a refused connection, a read timeout and a stream cut
mid-way raise the client library's own exception at the point they were raised live, and
error responses replay with their status, body and a retry hint that does not make the
client wait."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordedProviderError
from tests.http_boundary.boundaries import (
    LIBRARIES,
    ScriptedNetworkTransport,
    call_end,
    events,
    library,
    recording_into,
    replaying,
)
from tests.http_boundary.exchanges import MODES, send
from tests.support.offline import offline, sleeps_asked
from tests.support.sse_server import Script, ScriptedServer, error_script, sse_event


def both(test: Any) -> Any:
    """Run ``test`` with each client library, sync and async."""
    return pytest.mark.parametrize("lib", LIBRARIES)(pytest.mark.parametrize("mode", MODES)(test))


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def failure(lib: str, mode: str, url: str, **options: Any) -> BaseException:
    """What sending a request to ``url`` raised (an ``httpx``/``httpx2`` error)."""
    with pytest.raises(library(lib).TransportError) as caught:
        send(lib, mode, "POST", url, json={"q": 1}, **options)
    return caught.value


@both
def test_a_refused_connection_replays_as_the_same_error_before_any_response(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    url = f"http://127.0.0.1:{closed_port()}/v1/messages"

    with recording_into(path):
        live = failure(lib, mode, url)

    assert type(live) is library(lib).ConnectError
    assert events(path) == []
    end = call_end(path)
    assert end["outcome"] == "error"
    assert end["error"]["type"] == f"{lib}.ConnectError"
    with offline(), replaying(path):
        replayed = failure(lib, mode, url)
    assert type(replayed) is type(live)
    assert str(replayed) == str(live)
    # The operating system's error beneath it, which an SDK reading the chain shows
    # (anthropic: "Connection to … failed: [Errno 111] …"), is put back beneath it.
    beneath = deepest_os_error(live)
    assert end["error"].get("reason") == (None if beneath is None else str(beneath))
    if beneath is not None:
        assert isinstance(replayed.__cause__, OSError)
        assert str(replayed.__cause__) == str(beneath)


def deepest_os_error(error: BaseException) -> OSError | None:
    """The last OSError down the chain (groups, causes, arguments) whose text is not the
    error's own."""
    found, current, seen = None, error, {id(error)}
    while True:
        inner = [*getattr(current, "exceptions", ()), current.__cause__, *current.args]
        following = next((item for item in inner if isinstance(item, BaseException)), None)
        if following is None or id(following) in seen:
            break
        seen.add(id(following))
        current = following
        if isinstance(current, OSError) and str(current):
            found = current
    return None if found is None or str(found) == str(error) else found


@pytest.mark.parametrize(
    ("recorded_with", "replayed_with"), [("httpx", "httpx2"), ("httpx2", "httpx")]
)
def test_an_error_replays_as_the_class_of_the_replaying_clients_library(
    recorded_with: str, replayed_with: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    url = f"http://127.0.0.1:{closed_port()}/v1/messages"
    with recording_into(path):
        failure(recorded_with, "sync", url)

    with offline(), replaying(path):
        replayed = failure(replayed_with, "sync", url)
    assert type(replayed) is library(replayed_with).ConnectError


@both
def test_a_read_timeout_replays_after_the_events_received_before_it(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([sse_event({"n": 1})], ending="hold"))
    url = f"{server.base_url}/v1/chat/completions"
    received: list[bytes] = []

    def read(lib_module: Any) -> None:
        if mode == "async":

            async def go() -> None:
                async with (
                    lib_module.AsyncClient(timeout=0.3) as client,
                    client.stream("GET", url) as response,
                ):
                    async for chunk in response.aiter_bytes():
                        received.append(chunk)

            asyncio.run(go())
        else:
            with lib_module.Client(timeout=0.3) as client, client.stream("GET", url) as response:
                received.extend(response.iter_bytes())

    module = library(lib)
    with recording_into(path), pytest.raises(module.ReadTimeout):
        read(module)
    live = b"".join(received)

    assert [event["type"] for event in events(path)] == ["http_response", "sse"]
    assert call_end(path)["error"]["type"] == f"{lib}.ReadTimeout"
    received.clear()
    with offline(), sleeps_asked() as asked, replaying(path), pytest.raises(module.ReadTimeout):
        read(module)
    assert [
        seconds for seconds in asked if seconds > 0
    ] == []  # raised where it was, not waited for
    assert b"".join(received).replace(b" ", b"") == live.replace(b" ", b"")


@both
def test_a_stream_cut_mid_way_replays_as_the_same_protocol_error(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([sse_event({"n": 1}), b'data: {"n": 2'], ending="drop"))
    url = f"{server.base_url}/v1/messages"

    with recording_into(path):
        live = failure(lib, mode, url)

    assert isinstance(live, library(lib).TransportError)
    assert [event.get("data") for event in events(path)] == [None, {"n": 1}, None]
    assert events(path)[-1] == {"type": "sse_rest", "raw": 'data: {"n": 2'}  # the cut event
    end = call_end(path)
    assert end["error"]["type"] == f"{lib}.{type(live).__name__}"
    with offline(), replaying(path):
        replayed = failure(lib, mode, url)
    assert type(replayed) is type(live)
    assert str(replayed) == str(live)


@both
def test_an_error_raised_by_a_transport_before_or_during_the_body_replays_there(
    lib: str, mode: str, tmp_path: Path
) -> None:
    module = library(lib)
    cases: list[tuple[ScriptedNetworkTransport, type[BaseException]]] = [
        (
            ScriptedNetworkTransport(module, [], raise_before=module.ConnectTimeout("slow")),
            module.ConnectTimeout,
        ),
        (
            ScriptedNetworkTransport(module, [b"data: 1\n\n", module.ReadError("reset")]),
            module.ReadError,
        ),
        (
            ScriptedNetworkTransport(module, [b"data: 1\n\n", ConnectionResetError("gone")]),
            ConnectionResetError,
        ),
    ]
    for index, (network, error) in enumerate(cases):
        path = tmp_path / f"{index}.jsonl"
        with recording_into(path), pytest.raises(error) as live:
            _get(module, mode, network.transport)
        with offline(), replaying(path), pytest.raises(error) as replayed:
            _get(module, mode, network.transport)
        assert str(replayed.value) == str(live.value)
        assert len(network.requests) == 1  # replay never reached the transport


def _get(module: Any, mode: str, transport: Any) -> bytes:
    if mode == "async":

        async def go() -> bytes:
            async with module.AsyncClient(transport=transport) as client:
                return bytes((await client.get("http://model.test/")).content)

        return asyncio.run(go())
    with module.Client(transport=transport) as client:
        return bytes(client.get("http://model.test/").content)


def test_an_error_of_another_library_replays_naming_its_recorded_type(tmp_path: Path) -> None:
    class VendorSocketError(Exception):
        pass

    module = library("httpx2")
    path = tmp_path / "r.jsonl"
    network = ScriptedNetworkTransport(module, [], raise_before=VendorSocketError("no route"))
    with recording_into(path), pytest.raises(VendorSocketError):
        _get(module, "sync", network.transport)

    with offline(), replaying(path), pytest.raises(RecordedProviderError) as replayed:
        _get(module, "sync", network.transport)
    assert replayed.value.original_type.endswith("VendorSocketError")
    assert str(replayed.value) == "no route"


@both
def test_error_responses_replay_with_status_and_body_and_a_hint_that_does_not_wait(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    error = {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
    server.serve(
        error_script(429, error, {"retry-after": "3", "x-ratelimit-limit-requests": "60"}),
        error_script(529, {"error": {"type": "overloaded_error"}}, {"retry-after": "120"}),
        error_script(400, "bad request"),
    )
    url = f"{server.base_url}/v1/messages"

    def run() -> list[tuple[int, dict[str, str], bytes]]:
        answers = [send(lib, mode, "POST", url, json={"q": 1}) for _ in range(3)]
        return [(a.status, a.headers, a.body) for a in answers]

    with recording_into(path):
        live = run()
    with offline(), replaying(path):
        replayed = run()

    def content(body: bytes) -> Any:
        return json.loads(body) if body.startswith(b"{") else body

    assert [(status, content(body)) for status, _, body in replayed] == [
        (status, content(body)) for status, _, body in live
    ]
    rate_limited, overloaded, bad = (headers for _, headers, _ in replayed)
    assert rate_limited["retry-after-ms"] == "1"
    assert "retry-after" not in rate_limited
    assert rate_limited["x-ratelimit-limit-requests"] == "60"
    assert overloaded["retry-after"] == "120"  # the SDKs do not retry after that: served as is
    assert "retry-after-ms" not in bad


def test_a_task_cancelled_while_waiting_records_cancelled(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script(answer="silence"))
    module = library("httpx2")

    async def go() -> None:
        async with module.AsyncClient() as client:
            await asyncio.wait_for(client.get(f"{server.base_url}/slow"), timeout=0.2)

    with recording_into(path), pytest.raises(TimeoutError):
        asyncio.run(go())
    assert call_end(path)["outcome"] == "cancelled"
    assert events(path) == []

    async def replayed() -> None:
        async with module.AsyncClient() as client:
            await client.get(f"{server.base_url}/slow")

    with offline(), replaying(path), pytest.raises(asyncio.CancelledError):
        asyncio.run(replayed())  # raised where the recorded task was cancelled


def test_a_body_whose_reading_was_cancelled_replays_ending_there(tmp_path: Path) -> None:
    # openai 3.x drains the rest of a stream for at most 0.1 s after [DONE]; a slow end of
    # body is cancelled then, which replay, serving at once, does not repeat.
    path = tmp_path / "r.jsonl"
    module = library("httpx2")

    class SlowEnd(module.AsyncByteStream):  # type: ignore[name-defined,misc]
        async def __aiter__(self) -> Any:
            yield b"data: [DONE]\n\n"
            await asyncio.sleep(30)
            yield b": never\n\n"

    class Network(module.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        async def handle_async_request(self, request: Any) -> Any:
            headers = {"content-type": "text/event-stream"}
            return module.Response(200, headers=headers, stream=SlowEnd())

    async def read(timeout: float) -> list[bytes]:
        got: list[bytes] = []

        async def drain(response: Any) -> None:
            async for chunk in response.aiter_raw():
                got.append(chunk)

        async with (
            module.AsyncClient(transport=Network()) as client,
            client.stream("GET", "http://model.test/") as response,
        ):
            try:
                await asyncio.wait_for(drain(response), timeout)
            except TimeoutError:
                got.append(b"<timed out>")
        return got

    with recording_into(path):
        assert asyncio.run(read(0.1)) == [b"data: [DONE]\n\n", b"<timed out>"]
    assert call_end(path)["outcome"] == "cancelled"
    with offline(), replaying(path):
        assert asyncio.run(read(5)) == [b"data: [DONE]\n\n"]
