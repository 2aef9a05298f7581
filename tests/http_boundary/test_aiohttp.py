"""A real ``aiohttp.ClientSession`` against a loopback server: each request recorded as sent
and replayed from the recording with no socket at all (aiohttp's client middleware seam)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import aiohttp
import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.recording.mismatch import RecordReplayEscape
from tests.http_boundary.boundaries import call_end, events, rows, without_raw
from tests.support.offline import offline
from tests.support.sse_server import (
    Script,
    ScriptedServer,
    cut,
    error_script,
    sse_event,
    unused_port,
)

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
REPLY = {"id": "chatcmpl-1", "choices": [{"message": {"content": "héllo"}}]}
CHUNK = {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"content": "héllo\nwörld"}}]}
SECRET = "sk-aiohttp-secret-0123456789"
GOOGLE_KEY = "AIza-aiohttp-google-key-987654321"


def sse_stream() -> bytes:
    return (
        b": keep-alive\n\n"
        + sse_event(CHUNK)
        + b"event: tick\r\nid: 3\r\ndata: line one\r\ndata: line two\r\n\r\n"
        + sse_event("[DONE]")
    )


def json_script(body: object, status: int = 200) -> Script:
    return Script(
        [json.dumps(body).encode()], status=status, headers={"Content-Type": "application/json"}
    )


async def post_json(url: str, body: object) -> tuple[int, str, object]:
    headers = {"Authorization": f"Bearer {SECRET}", "x-goog-api-key": GOOGLE_KEY}
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers) as response,
    ):
        return response.status, response.headers["content-type"], await response.json()


async def test_a_json_post_is_recorded_and_replayed_offline(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions?x=1"

    with openprogram.record_replay(path, mode="record") as recorded_block:
        live = await post_json(url, BODY)

    assert live == (200, "application/json", REPLY)
    assert recorded_block.not_recorded == []  # its connection was the recorded request's
    assert '"type":"not_recorded"' not in path.read_text()
    request, *_ = rows(path)
    assert request == {
        "type": "request",
        "call_index": 0,
        "boundary": "http",
        "method": "POST",
        "url": url,
        "headers": {"content-type": "application/json"},
        "body": BODY,
    }
    recorded = events(path)
    assert [event["type"] for event in recorded] == ["http_response", "http_body"]
    assert recorded[0]["status"] == 200
    assert recorded[1]["body"] == REPLY
    assert call_end(path)["outcome"] == "complete"
    text = path.read_text()
    assert SECRET not in text
    assert GOOGLE_KEY not in text

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await post_json(url, BODY)
    assert replayed == live
    assert len(server.received) == 1


async def test_an_sse_stream_read_line_by_line_is_one_event_per_row_and_replays(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script(cut(sse_stream(), every=7, inside=["ö"])))
    url = f"{server.base_url}/v1/chat/completions"

    async def read_lines() -> list[bytes]:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, json={**BODY, "stream": True}) as response,
        ):
            assert response.headers["Content-Type"] == "text/event-stream"
            return [line async for line in response.content]

    with openprogram.record_replay(path, mode="record"):
        live = await read_lines()

    assert [without_raw(event) for event in events(path)[1:]] == [
        {"type": "sse", "data": CHUNK},
        {"type": "sse", "event": "tick", "data": "line one\nline two", "id": "3"},
        {"type": "sse", "data": "[DONE]"},
    ]
    assert call_end(path)["outcome"] == "complete"

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await read_lines()

    assert replayed == live
    assert len(server.received) == 1


async def test_an_sse_stream_read_by_chunk_is_recorded_event_by_event(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script(cut(sse_stream(), every=5)))
    url = f"{server.base_url}/stream"

    async def read_chunks() -> bytes:
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            return b"".join([chunk async for chunk in response.content.iter_chunked(3)])

    with openprogram.record_replay(path, mode="record"):
        live = await read_chunks()
    assert [event["type"] for event in events(path)] == ["http_response", "sse", "sse", "sse"]

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await read_chunks()
    assert replayed == live


async def test_an_error_status_replays_with_its_status_and_body(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    error = {"error": {"message": "bad request", "type": "invalid_request_error"}}
    server.serve(error_script(400, error))
    url = f"{server.base_url}/v1/chat/completions"

    async def failing() -> tuple[int, object, int]:
        async with aiohttp.ClientSession() as session, session.post(url, json=BODY) as response:
            body = await response.json()
            with pytest.raises(aiohttp.ClientResponseError) as raised:
                response.raise_for_status()
            return response.status, body, raised.value.status

    with openprogram.record_replay(path, mode="record"):
        live = await failing()
    assert live == (400, error, 400)

    with offline(), openprogram.record_replay(path, mode="replay"):
        assert await failing() == live
    assert len(server.received) == 1


async def test_a_changed_request_body_is_a_two_line_mismatch(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions"
    with openprogram.record_replay(path, mode="record"):
        await post_json(url, BODY)

    changed = {**BODY, "model": "other"}
    with (
        offline(),
        pytest.raises(ReplayMismatch) as caught,
        openprogram.record_replay(path, mode="replay"),
        pytest.raises(RecordReplayEscape),  # no handler of aiohttp's errors catches it
    ):
        await post_json(url, changed)
    message = str(caught.value)
    assert message.startswith("replay mismatch at call 0, field body.model:\n")
    assert len(message.splitlines()) == 2
    assert len(server.received) == 1


async def test_a_refused_connection_is_recorded_and_replays_as_client_connector_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    url = f"http://127.0.0.1:{unused_port()}/v1/models"

    async def connect() -> str:
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientConnectorError) as refused:
                await session.get(url)
            return str(refused.value)

    with openprogram.record_replay(path, mode="record"):
        live = await connect()
    end = call_end(path)
    assert end["outcome"] == "error"
    assert end["error"]["type"] == "aiohttp.client_exceptions.ClientConnectorError"
    assert events(path) == []

    with offline(), openprogram.record_replay(path, mode="replay"):
        assert await connect() == live


async def test_a_passthrough_host_is_sent_live_and_not_recorded(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY), json_script(REPLY))
    url = f"{server.base_url}/telemetry"
    with openprogram.record_replay(path, mode="record", passthrough_hosts=["127.0.0.1"]):
        assert (await post_json(url, BODY))[2] == REPLY
    assert [row for row in rows(path) if row["type"] == "request"] == []
    with openprogram.record_replay(path, mode="replay", passthrough_hosts=["127.0.0.1"]):
        assert (await post_json(url, BODY))[2] == REPLY
    assert len(server.received) == 2


async def test_a_redirect_is_one_exchange_per_hop(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(
        Script(
            [b"moved"], status=307, headers={"Location": "/there", "Content-Type": "text/plain"}
        ),
        json_script(REPLY),
    )
    url = f"{server.base_url}/here"
    with openprogram.record_replay(path, mode="record"):
        live = await post_json(url, BODY)
    requests = [row["url"] for row in rows(path) if row["type"] == "request"]
    assert requests == [url, f"{server.base_url}/there"]
    # aiohttp releases a redirect unread: that hop is complete only if its end had arrived
    assert call_end(path, 0)["outcome"] in ("complete", "abandoned")
    assert call_end(path, 1)["outcome"] == "complete"

    with offline(), openprogram.record_replay(path, mode="replay"):
        assert await post_json(url, BODY) == live
    assert len(server.received) == 2


async def test_a_gzip_body_is_stored_decoded_and_a_cut_stream_replays_its_error(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    packed = gzip.compress(json.dumps(REPLY).encode())
    server.serve(
        Script(
            [packed[:5], packed[5:]],
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ),
        Script([sse_event(CHUNK), b"data: par"], ending="drop"),
    )
    url = f"{server.base_url}/v1/chat/completions"

    async def run() -> tuple[object, list[bytes], str]:
        lines: list[bytes] = []
        async with aiohttp.ClientSession() as session:
            async with session.get(url) as response:
                text = await response.text()
            async with session.get(url) as response:
                with pytest.raises(aiohttp.ClientPayloadError) as cut_off:
                    async for line in response.content:
                        lines.append(line)
        return json.loads(text), lines, str(cut_off.value)

    with openprogram.record_replay(path, mode="record"):
        live = await run()
    assert live[0] == REPLY
    assert without_raw(events(path, 0)[1]) == {"type": "http_body", "body": REPLY}
    assert [without_raw(event) for event in events(path, 1)[1:]] == [
        {"type": "sse", "data": CHUNK},
        {"type": "sse_rest"},  # the event the cut stopped
    ]
    assert call_end(path, 1)["outcome"] == "error"

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await run()
    assert replayed[0] == live[0]
    assert replayed[1] == live[1]
    assert replayed[2] == live[2]
    assert len(server.received) == 2
