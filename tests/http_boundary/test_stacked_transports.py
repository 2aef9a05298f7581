"""One request, one call, however the client libraries stack: when a captured library sends
through another captured one, the outermost records the request, the layers beneath pass it
through under record and are never reached under replay — so a recording made through a
stack holds one call per request, and replays offline to its end."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

import openprogram
from openprogram.http_boundary.boundary import HttpBoundary
from openprogram.recording.reader import read_recording
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.rewriting import RecordingMerge
from openprogram.recording.writer import writer_for
from tests.http_boundary.boundaries import LIBRARIES, boundary_active, call_end, library, rows
from tests.http_boundary.stacked_transports import (
    Handoff,
    HttpClientConnection,
    RelayConnection,
    aiohttp_transport,
    client_transport,
    requests_over,
    requests_transport,
    threaded_requests_transport,
)
from tests.support.offline import offline
from tests.support.sse_server import Script, ScriptedServer, cut, sse_event

EVENTS = [{"id": "chatcmpl-1", "choices": [{"delta": {"content": piece}}]} for piece in "héllo"]
STREAM = b"".join(sse_event(event) for event in EVENTS) + sse_event("[DONE]")
QUESTION = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}

Seen = tuple[int, str, bytes]
"""What a client got: the status, the content type and the body's bytes."""


def recorded_once_and_replayed_offline(
    server: ScriptedServer, path: Path, send: Callable[[str], Seen]
) -> None:
    """``send`` (given the URL) is recorded live as exactly one call, then replayed with the
    server stopped and no socket to the same answer, that one call consumed."""
    server.serve(Script(cut(STREAM, every=40, inside="é")))
    url = f"{server.base_url}/v1/chat/completions"

    with openprogram.record_replay(path, mode="record"):
        live = send(url)

    assert live == (200, "text/event-stream", STREAM)
    assert len(server.received) == 1
    requests_recorded = [row for row in rows(path) if row["type"] == "request"]
    assert [row["url"] for row in requests_recorded] == [url]
    assert requests_recorded[0]["body"] == QUESTION
    assert call_end(path)["outcome"] == "complete"
    server.stop()

    with offline(), openprogram.record_replay(path, mode="replay") as replay:
        replayed = send(url)
    assert replayed == live
    assert replay.session is not None
    assert replay.session.unconsumed_calls == []


def seen(response: Any, body: bytes) -> Seen:
    return response.status_code, response.headers["content-type"], body


def read_sync(client: Any, url: str) -> Seen:
    with client, client.stream("POST", url, json=QUESTION) as response:
        return seen(response, response.read())


def read_async(client: Any, url: str) -> Seen:
    async def read() -> Seen:
        async with client, client.stream("POST", url, json=QUESTION) as response:
            return seen(response, b"".join([chunk async for chunk in response.aiter_bytes()]))

    return asyncio.run(read())


@pytest.mark.parametrize("outer", LIBRARIES)
def test_httpx_over_aiohttp_is_one_call(outer: str, server: ScriptedServer, tmp_path: Path) -> None:
    module = library(outer)

    def send(url: str) -> Seen:
        return read_async(module.AsyncClient(transport=aiohttp_transport(module)), url)

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(("outer", "inner"), list(itertools.product(LIBRARIES, LIBRARIES)))
def test_a_client_over_another_client_is_one_call(
    outer: str, inner: str, asynchronous: bool, server: ScriptedServer, tmp_path: Path
) -> None:
    # httpx2 over httpx, httpx over httpx2, and a transport of an SDK's own over a client of
    # the same library
    outer_module, inner_module = library(outer), library(inner)

    def send(url: str) -> Seen:
        transport = client_transport(outer_module, inner_module, asynchronous=asynchronous)
        if asynchronous:
            return read_async(outer_module.AsyncClient(transport=transport), url)
        return read_sync(outer_module.Client(transport=transport), url)

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)


@pytest.mark.parametrize("outer", LIBRARIES)
def test_httpx_over_requests_is_one_call(
    outer: str, server: ScriptedServer, tmp_path: Path
) -> None:
    module = library(outer)

    def send(url: str) -> Seen:
        return read_sync(module.Client(transport=requests_transport(module)), url)

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)


HANDOFFS: dict[str, Handoff] = {
    "asyncio.to_thread": asyncio.to_thread,
    "anyio.to_thread.run_sync": anyio.to_thread.run_sync,
}


@pytest.mark.parametrize("handoff", HANDOFFS)
def test_a_request_handed_to_a_worker_thread_with_its_context_is_one_call(
    handoff: str, server: ScriptedServer, tmp_path: Path
) -> None:
    module = library("httpx")

    def send(url: str) -> Seen:
        transport = threaded_requests_transport(module, HANDOFFS[handoff])
        return read_async(module.AsyncClient(transport=transport), url)

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)


@pytest.mark.parametrize(
    "connection", [RelayConnection, HttpClientConnection], ids=["urllib3", "http.client"]
)
def test_requests_over_a_custom_urllib3_pool_is_one_call(
    connection: type, server: ScriptedServer, tmp_path: Path
) -> None:
    # requests over a pool whose connections relay through a second urllib3 pool, or send
    # with a plain http.client connection: the outer pool's capture records
    def send(url: str) -> Seen:
        with requests_over(connection) as session:
            response = session.post(url, json=QUESTION, timeout=10)
            return response.status_code, response.headers["content-type"], response.content

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)


def test_the_layer_beneath_is_reached_under_record_only(
    server: ScriptedServer, tmp_path: Path, aiohttp_sends: list[str]
) -> None:
    # the stack is real: aiohttp sends the recorded request live; under replay the outer
    # capture answers and aiohttp is never asked
    module = library("httpx")

    def send(url: str) -> Seen:
        return read_async(module.AsyncClient(transport=aiohttp_transport(module)), url)

    recorded_once_and_replayed_offline(server, tmp_path / "r.jsonl", send)
    assert aiohttp_sends == ["POST"]


def test_a_call_replay_or_record_sends_live_through_a_stack_is_one_call(
    server: ScriptedServer, tmp_path: Path
) -> None:
    # new_episodes: a request the recording does not hold is sent live through the stack
    # and recorded once, beside the one it does hold, answered from it
    module = library("httpx")
    recorded = tmp_path / "recorded.jsonl"
    server.serve(Script([STREAM]), Script([STREAM]))
    url = f"{server.base_url}/v1/chat/completions"

    def send(question: dict[str, Any]) -> Seen:
        async def read() -> Seen:
            client = module.AsyncClient(transport=aiohttp_transport(module))
            async with client, client.stream("POST", url, json=question) as response:
                return seen(response, b"".join([c async for c in response.aiter_bytes()]))

        return asyncio.run(read())

    with openprogram.record_replay(recorded, mode="record"):
        send(QUESTION)
    other = {**QUESTION, "messages": [{"role": "user", "content": "bye"}]}
    merged = tmp_path / "merged.jsonl"
    merge = RecordingMerge(ReplaySession(read_recording(recorded)), writer_for(merged))
    with boundary_active(HttpBoundary("replay_or_record", merge=merge)):
        assert send(QUESTION)[2] == STREAM  # answered from the recording
        assert send(other)[2] == STREAM  # sent live

    assert len(server.received) == 2
    assert [call.request["body"] for call in read_recording(merged).calls] == [QUESTION, other]
