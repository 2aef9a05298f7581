"""Record an exchange through a real httpx or httpx2 client (sync and async) against a
loopback server, then replay it with no socket at all: the client gets the same status,
headers and body it got live."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import ReplayMismatch
from openprogram.http_boundary.codec import MULTIPART_BOUNDARY
from openprogram.recording.mismatch import RecordReplayEscape
from tests.http_boundary.boundaries import (
    LIBRARIES,
    ScriptedNetworkTransport,
    call_end,
    events,
    library,
    recording_into,
    replaying,
    rows,
    without_raw,
)
from tests.http_boundary.exchanges import MODES, send
from tests.support.offline import offline
from tests.support.recording_rows import without_digest
from tests.support.sse_server import Script, ScriptedServer, cut, sse_event

pytestmark = [pytest.mark.parametrize("lib", LIBRARIES), pytest.mark.parametrize("mode", MODES)]

CHUNK = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "héllo\nwörld"}}]}


def sse_stream() -> bytes:
    return (
        b": keep-alive\n\n"
        + sse_event(CHUNK)
        + b"event: tick\r\nid: 3\r\ndata: line one\r\ndata: line two\r\n\r\n"
        + sse_event("[DONE]")
    )


def test_an_sse_stream_is_recorded_event_by_event_and_replayed_offline(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script(cut(sse_stream(), every=7, inside=["ö"])))
    url = f"{server.base_url}/v1/chat/completions?stream=1"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    with recording_into(path):
        live = send(lib, mode, "POST", url, json=body)

    request, *_ = rows(path)
    assert request == {
        "type": "request",
        "call_index": 0,
        "boundary": "http",
        "method": "POST",
        "url": url,
        "headers": {"content-type": "application/json"},
        "body": body,
    }
    recorded = events(path)
    assert recorded[0]["type"] == "http_response"
    assert recorded[0]["status"] == 200
    assert recorded[0]["headers"]["content-type"] == "text/event-stream"
    assert "transfer-encoding" not in recorded[0]["headers"]
    assert [without_raw(event) for event in recorded[1:]] == [
        {"type": "sse", "data": CHUNK},
        {"type": "sse", "event": "tick", "data": "line one\nline two", "id": "3"},
        {"type": "sse", "data": "[DONE]"},
    ]
    # the text as it came, where the events re-serialized would not give it back
    assert [event.get("raw") for event in recorded[1:]] == [
        (b": keep-alive\n\n" + sse_event(CHUNK)).decode(),
        "event: tick\r\nid: 3\r\ndata: line one\r\ndata: line two\r\n\r\n",
        None,
    ]
    assert without_digest(call_end(path)) == {
        "type": "call_end",
        "call_index": 0,
        "event_count": 4,
        "outcome": "complete",
    }

    with offline(), replaying(path) as session:
        replayed = send(lib, mode, "POST", url, json=body)

    assert session.unconsumed_calls == []
    assert replayed.status == live.status
    assert replayed.headers["content-type"] == live.headers["content-type"]
    assert replayed.events() == live.events()
    assert replayed.body == live.body == sse_stream()


def test_a_gzip_encoded_json_body_is_stored_decoded_and_served_plain(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    payload = {"error": {"message": "rate limited", "type": "requests"}}
    encoded = gzip.compress(json.dumps(payload).encode())
    server.serve(
        Script(
            cut(encoded, every=9),
            status=429,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        )
    )

    with recording_into(path):
        live = send(lib, mode, "GET", f"{server.base_url}/v1/models")

    assert events(path)[1] == {"type": "http_body", "body": payload, "raw": json.dumps(payload)}
    assert "content-encoding" not in events(path)[0]["headers"]
    assert "content-length" not in events(path)[0]["headers"]  # of the encoded bytes
    with offline(), replaying(path):
        replayed = send(lib, mode, "GET", f"{server.base_url}/v1/models")
    assert (replayed.status, json.loads(replayed.body)) == (live.status, json.loads(live.body))
    assert "content-encoding" not in replayed.headers
    assert replayed.headers["retry-after-ms"] == "1"


def test_text_and_binary_bodies_round_trip(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([b"plain ", "tëxt".encode()], headers={"Content-Type": "text/plain"}))
    server.serve(Script([b"\x89PNG\x00\xff"], headers={"Content-Type": "image/png"}))

    def run() -> list[bytes]:
        first = send(lib, mode, "POST", f"{server.base_url}/a", content=b"\xff\x01upload")
        second = send(lib, mode, "GET", f"{server.base_url}/b")
        return [first.body, second.body]

    with recording_into(path):
        live = run()

    assert rows(path)[0]["body_base64"] == "/wF1cGxvYWQ="
    assert events(path, 0)[1] == {"type": "http_body", "text": "plain tëxt"}
    assert events(path, 1)[1] == {"type": "http_body", "base64": "iVBORwD/"}
    with offline(), replaying(path):
        assert run() == live == [b"plain t\xc3\xabxt", b"\x89PNG\x00\xff"]


def test_a_streamed_request_body_is_read_recorded_and_still_sent_whole(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    network = ScriptedNetworkTransport(
        module, [b"{}"], headers={"content-type": "application/json"}
    )
    upload = b'{"input": "streamed"}'

    def post(transport: Any) -> bytes:
        if mode == "async":

            async def pieces() -> Any:
                yield upload[:5]
                yield upload[5:]

            async def go() -> bytes:
                async with module.AsyncClient(transport=transport) as client:
                    headers = {"content-type": "application/json"}
                    response = await client.post(
                        "http://model.test/", content=pieces(), headers=headers
                    )
                    return bytes(response.content)

            return asyncio.run(go())
        with module.Client(transport=transport) as client:
            headers = {"content-type": "application/json"}
            content = iter([upload[:5], upload[5:]])
            return bytes(
                client.post("http://model.test/", content=content, headers=headers).content
            )

    with recording_into(path):
        assert post(network.transport) == b"{}"

    assert network.requests[0].content == upload
    assert rows(path)[0]["body"] == {"input": "streamed"}
    with offline(), replaying(path) as session:
        assert post(network.transport) == b"{}"
    assert len(network.requests) == 1
    assert session.unconsumed_calls == []


def test_a_multipart_upload_replays_although_its_boundary_is_random(
    lib: str, mode: str, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([b"{}"], headers={"Content-Type": "application/json"}))
    files = {"file": ("a.txt", b"hello")}

    with recording_into(path):
        send(lib, mode, "POST", f"{server.base_url}/upload", files=files)

    assert MULTIPART_BOUNDARY in rows(path)[0]["headers"]["content-type"]
    with offline(), replaying(path) as session:
        assert send(lib, mode, "POST", f"{server.base_url}/upload", files=files).body == b"{}"
    assert session.mismatches == []


def test_each_event_is_on_disk_before_the_bytes_after_it_are_handed_on(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    seen: list[list[str]] = []

    def written_so_far() -> None:
        seen.append([row["event"]["type"] for row in rows(path) if row["type"] == "event"])

    network = ScriptedNetworkTransport(
        library(lib),
        [b"data: 1\n", b"\n", written_so_far, b"data: 2\n\n", written_so_far, b"data: 3"],
    )

    with recording_into(path):
        body = _read_all(lib, mode, network)

    assert body == b"data: 1\n\ndata: 2\n\ndata: 3"
    assert seen == [["http_response", "sse"], ["http_response", "sse", "sse"]]
    assert [event.get("data") for event in events(path)] == [None, "1", "2", None]
    assert events(path)[-1] == {"type": "sse_rest", "raw": "data: 3"}  # never dispatched


def _read_all(lib: str, mode: str, network: ScriptedNetworkTransport) -> bytes:
    module = library(lib)
    if mode == "async":

        async def read() -> bytes:
            async with module.AsyncClient(transport=network.transport) as client:
                response = await client.get("http://model.test/stream")
                return bytes(response.content)

        return asyncio.run(read())
    with module.Client(transport=network.transport) as client:
        return bytes(client.get("http://model.test/stream").content)


def test_a_stream_iterated_again_records_and_replays_the_remainder(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    stream = [b"data: 1\n\n", b"data: [DONE]\n\n", b": trailing comment\n\n"]

    async def drain_twice_async(client: Any) -> list[bytes]:
        # As openai 3.x does: read up to [DONE], then drain the rest of response.stream.
        got: list[bytes] = []
        async with client.stream("GET", "http://model.test/s") as response:
            async for chunk in response.aiter_raw():
                got.append(chunk)
                if b"[DONE]" in chunk:
                    break
            got.extend([chunk async for chunk in response.stream])
        return got

    def drain_twice_sync(client: Any) -> list[bytes]:
        # (iter_raw closes the response when left early: the first pass reads the stream)
        with client.stream("GET", "http://model.test/s") as response:
            got = [next(iter(response.stream))]
            got.extend(response.stream)
        return got

    def run(transport: Any) -> list[bytes]:
        if mode == "async":

            async def go() -> list[bytes]:
                async with module.AsyncClient(transport=transport) as client:
                    return await drain_twice_async(client)

            return asyncio.run(go())
        with module.Client(transport=transport) as client:
            return drain_twice_sync(client)

    with recording_into(path):
        live = run(ScriptedNetworkTransport(module, stream).transport)

    assert live == stream
    assert [event.get("data") for event in events(path)] == [None, "1", "[DONE]", None]
    assert events(path)[-1] == {"type": "sse_rest", "raw": ": trailing comment\n\n"}
    assert call_end(path)["outcome"] == "complete"
    unused = ScriptedNetworkTransport(module, [], status=599)
    with offline(), replaying(path):
        replayed = run(unused.transport)
    assert unused.requests == []
    # replay serves the body as one chunk, the comment after the last event too
    assert replayed == [b"".join(stream)]


def test_a_stream_closed_early_is_abandoned_and_replay_refuses_to_read_further(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    network = ScriptedNetworkTransport(module, [b"data: 1\n\n", b"data: 2\n\n"])

    def first_chunk(transport: Any, *, then_more: bool) -> list[bytes]:
        if mode == "async":

            async def go() -> list[bytes]:
                async with (
                    module.AsyncClient(transport=transport) as client,
                    client.stream("GET", "http://model.test/s") as response,
                ):
                    chunks = response.aiter_raw()
                    got = [await chunks.__anext__()]
                    if then_more:
                        got.append(await chunks.__anext__())
                    return got

            return asyncio.run(go())
        with (
            module.Client(transport=transport) as client,
            client.stream("GET", "http://model.test/s") as response,
        ):
            chunks = response.iter_raw()
            got = [next(chunks)]
            if then_more:
                got.append(next(chunks))
            return got

    with recording_into(path):
        assert first_chunk(network.transport, then_more=False) == [b"data: 1\n\n"]

    assert network.closed
    assert call_end(path)["outcome"] == "abandoned"
    assert call_end(path)["event_count"] == 2
    with offline(), replaying(path):
        assert first_chunk(network.transport, then_more=False) == [b"data: 1\n\n"]
    with offline(), replaying(path) as session, pytest.raises(RecordReplayEscape) as caught:
        first_chunk(network.transport, then_more=True)
    assert isinstance(caught.value.error, ReplayMismatch)
    assert caught.value.error.event_index == 2
    assert session.mismatches == [caught.value.error]
    assert "stopped reading the response after 2 events" in str(caught.value)


def read_until(module: Any, mode: str, transport: Any, enough: Callable[[bytes], bool]) -> bytes:
    """The raw chunks of one streamed GET, read until ``enough`` of what came, then closed
    (the source may hold more)."""
    if mode == "async":

        async def go() -> bytes:
            async with (
                module.AsyncClient(transport=transport) as client,
                client.stream("GET", "http://model.test/s") as response,
            ):
                got = b""
                async for chunk in response.aiter_raw():
                    got += chunk
                    if enough(got):
                        break
                return got

        return asyncio.run(go())
    with (
        module.Client(transport=transport) as client,
        client.stream("GET", "http://model.test/s") as response,
    ):
        got = b""
        for chunk in response.iter_raw():
            got += chunk
            if enough(got):
                break
        return got


@pytest.mark.parametrize(
    ("terminal", "event"),
    [
        pytest.param(sse_event("[DONE]"), {"data": "[DONE]"}, id="done"),
        pytest.param(
            sse_event({"type": "message_stop"}, "message_stop"),
            {"event": "message_stop", "data": {"type": "message_stop"}},
            id="message_stop",
        ),
        pytest.param(
            sse_event({"type": "response.completed"}, "response.completed"),
            {"event": "response.completed", "data": {"type": "response.completed"}},
            id="response_completed",
        ),
    ],
)
def test_a_stream_closed_right_after_its_terminal_event_is_complete(
    lib: str, mode: str, terminal: bytes, event: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    # the source is not exhausted when the client closes: the body's end is never read
    network = ScriptedNetworkTransport(module, [b"data: 1\n\n", b": ping\n\n" + terminal])

    with recording_into(path):
        got = read_until(module, mode, network.transport, lambda got: got.endswith(terminal))

    assert got == b"data: 1\n\n: ping\n\n" + terminal
    assert network.closed
    assert [row.get("data") for row in events(path)][1:] == ["1", event["data"]]
    assert without_raw(events(path)[-1]) == {"type": "sse", **event}
    assert events(path)[-1]["raw"] == (b": ping\n\n" + terminal).decode()  # the comment too
    assert call_end(path)["outcome"] == "complete"
    with offline(), replaying(path) as session:
        replayed = read_until(module, mode, network.transport, lambda got: False)
    assert session.mismatches == []
    assert replayed == got


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(b"data: 1\n\n", id="before"),
        pytest.param(b"data: 1\n\n" + sse_event("[DONE]") + b"data: 2", id="part-after"),
        pytest.param(b"data: 1\n\n" + sse_event("[DONE]") + b"event: x\n", id="field-after"),
        pytest.param(b"data: [DONE]\n", id="undispatched"),
        pytest.param(b"data: 1\n\n" + sse_event("[DONE]") + "é".encode()[:1], id="half-char"),
    ],
)
def test_a_stream_closed_before_or_past_its_terminal_event_is_abandoned(
    lib: str, mode: str, read: bytes, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    network = ScriptedNetworkTransport(module, [read, sse_event("[DONE]")])

    with recording_into(path):
        assert read_until(module, mode, network.transport, lambda got: True) == read

    assert network.closed
    assert call_end(path)["outcome"] == "abandoned"


@pytest.mark.parametrize(("chunks", "outcome"), [(2, "complete"), (1, "abandoned")])
def test_a_body_closed_once_its_content_length_arrived_is_complete(
    lib: str, mode: str, chunks: int, outcome: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    body = json.dumps({"id": "chatcmpl-1", "choices": []}).encode()
    pieces = [body[:10], body[10:]]
    headers = {"content-type": "application/json", "content-length": str(len(body))}
    network = ScriptedNetworkTransport(module, [*pieces, b"never read"], headers=headers)

    with recording_into(path):
        got = read_until(
            module, mode, network.transport, lambda got: got == b"".join(pieces[:chunks])
        )

    assert got == b"".join(pieces[:chunks])
    assert network.closed
    assert call_end(path)["outcome"] == outcome
    if outcome == "complete":
        assert events(path)[1] == {
            "type": "http_body",
            "body": json.loads(body),
            "raw": body.decode(),
        }
        assert events(path)[0]["headers"]["content-length"] == str(len(body))
        with offline(), replaying(path) as session:
            replayed = read_until(module, mode, network.transport, lambda got: False)
        assert replayed == body
        assert session.mismatches == []


def test_a_response_the_transport_already_read_is_recorded_whole_and_complete(
    lib: str, mode: str, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    module = library(lib)
    answer = {"id": "chatcmpl-1", "choices": []}

    class InMemoryNetwork(module.BaseTransport, module.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        """A network-like transport whose response is built in memory, already read."""

        def handle_request(self, request: Any) -> Any:
            return module.Response(200, json=answer)

        async def handle_async_request(self, request: Any) -> Any:
            return module.Response(200, json=answer)

    def get() -> Any:
        if mode == "async":

            async def go() -> Any:
                async with module.AsyncClient(transport=InMemoryNetwork()) as client:
                    return (await client.get("http://model.test/v1/models")).json()

            return asyncio.run(go())
        with module.Client(transport=InMemoryNetwork()) as client:
            return client.get("http://model.test/v1/models").json()

    with recording_into(path):
        assert get() == answer

    assert [event["type"] for event in events(path)] == ["http_response", "http_body"]
    assert events(path)[1] == {"type": "http_body", "body": answer}
    assert call_end(path)["outcome"] == "complete"
    with replaying(path), offline():
        assert get() == answer
