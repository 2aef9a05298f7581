"""The recording proxy with real clients: the official Python SDKs and httpx, pointed at a
server running in a thread of the test, forwarding to the loopback vendor server.

What a program in another language meets is in ``test_node_clients.py``; the command's own
life (its output, signals, a port taken) in ``test_serve_command.py``.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from openprogram.provider_boundary.codec import read_for_replay
from openprogram.store.hashing import transcript_hash
from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received, sse_event
from tests.support.proxy_server import running_proxy
from tests.support.sdk_server import ErrorReply, SdkServer, StallAfter, refused_base_url

KEY = "sk-proj-proxy-0123456789abcdefKEY1"
ANTHROPIC_KEY = "sk-ant-api03-proxy-0123456789abcdefKEY2"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def _session(
    openai_url: str,
    anthropic_url: str,
    prompt: str = "hello",
    headers: dict[str, str] | None = None,
) -> list[Any]:
    """A short agent session on both SDKs (sending ``headers`` too): a streamed chat with a
    tool call, a Responses stream, a whole chat answer and an Anthropic messages stream; what
    the program saw."""
    import anthropic
    import openai

    seen: list[Any] = []
    with (
        openai.OpenAI(base_url=openai_url, api_key=KEY, default_headers=headers) as client,
        anthropic.Anthropic(
            base_url=anthropic_url, api_key=ANTHROPIC_KEY, default_headers=headers
        ) as claude,
    ):
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"weather? {prompt}"}],
            tools=[WEATHER],  # type: ignore[list-item]
            stream=True,
            stream_options={"include_usage": True},
        )
        seen.append([chunk.model_dump() for chunk in stream])
        events = client.responses.create(model="gpt-4o-mini", input=prompt, stream=True)
        seen.append([event.model_dump() for event in events])
        whole = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": prompt}]
        )
        seen.append(whole.model_dump())
        with claude.messages.stream(
            model="claude-3-5-haiku-latest",
            max_tokens=64,
            messages=[{"role": "user", "content": prompt}],
        ) as messages:
            seen.append([event.model_dump() for event in messages])
    return seen


def test_the_proxy_writes_the_recording_the_sdk_writes_in_process(tmp_path: Path) -> None:
    import openprogram

    in_process, proxied = tmp_path / "in-process.jsonl", tmp_path / "proxied.jsonl"
    with SdkServer() as upstream:
        with openprogram.record_replay(in_process, mode="record"):
            _session(upstream.openai_url, upstream.base_url)
        hosts = {"openai": upstream.base_url, "anthropic": upstream.base_url}
        with running_proxy(record=str(proxied), upstreams=hosts) as proxy:
            _session(proxy.openai_url, proxy.anthropic_url)
    assert proxy.stop().exit_status == 0
    direct, through = read_for_replay(in_process), read_for_replay(proxied)
    assert [call.request for call in through.calls] == [call.request for call in direct.calls]
    assert len(through.calls) == 4
    assert transcript_hash(through) == transcript_hash(direct)  # per-run ids and times differ
    text = proxied.read_text()
    assert KEY not in text  # the clients' keys, never stored
    assert ANTHROPIC_KEY not in text
    assert proxied.stat().st_mode & 0o777 == 0o600


def test_a_replay_serves_what_was_recorded_and_a_changed_request_gets_the_report(
    tmp_path: Path,
) -> None:
    import openai

    path = str(tmp_path / "session.jsonl")
    with SdkServer() as upstream:
        hosts = {"openai": upstream.base_url, "anthropic": upstream.base_url}
        with running_proxy(record=path, upstreams=hosts) as proxy:
            live = _session(proxy.openai_url, proxy.anthropic_url)
    # the vendor server is gone: replay opens no upstream connection
    with running_proxy(replay=path, upstreams=hosts) as proxy:
        assert _session(proxy.openai_url, proxy.anthropic_url) == live
    assert proxy.stop().exit_status == 0
    with running_proxy(replay=path, upstreams=hosts) as proxy:
        with pytest.raises(openai.APIStatusError) as caught:
            _session(proxy.openai_url, proxy.anthropic_url, prompt="goodbye", headers=proxy.auth)
        # a client without the token is served the server's own recording, but told where
        # its request differed, never what the recording holds there
        with pytest.raises(openai.APIStatusError) as stranger:
            _session(proxy.openai_url, proxy.anthropic_url, prompt="goodbye")
    error = caught.value
    assert error.status_code == 412
    assert error.response.headers["x-openprogram-error"] == "openprogram_replay_mismatch"
    assert error.message == (  # as the SDK writes any status error, with the report
        "Error code: 412 - replay mismatch at call 0, field body.messages[0].content:\n"
        "recorded 'weather? hello', incoming 'weather? goodbye'"
    )
    assert stranger.value.status_code == 412
    assert stranger.value.message == (
        "Error code: 412 - replay mismatch at call 0, field body.messages[0].content: the "
        "recorded value is in the server's log, and in the answer to a client that sends the "
        "server's token (x-openprogram-token)"
    )
    assert "weather? hello" not in stranger.value.response.text
    outcome = proxy.stop()
    assert outcome.exit_status == 1
    (account,) = outcome.accounts
    assert len(account.mismatches) == 2  # one for each client: no SDK retried it
    assert account.unconsumed == [1, 2, 3]  # call 0 was requested, and differed
    assert account.unconsumed_report is not None
    assert "3 of 4 recorded calls never requested (calls 1..3)" in account.unconsumed_report


def test_concurrent_streams_are_recorded_and_replayed_by_content(tmp_path: Path) -> None:
    path = str(tmp_path / "fifty.jsonl")

    async def fifty(url: str) -> list[bytes]:
        async with httpx.AsyncClient(timeout=30) as client:

            async def one(i: int) -> bytes:
                message = {"role": "user", "content": f"#{i}"}
                body = {"model": "m", "stream": True, "messages": [message]}
                response = await client.post(f"{url}/v1/chat/completions", json=body)
                assert response.status_code == 200
                return response.content

            order = list(range(50))
            if "replay" in path:
                order.reverse()
            answers = await asyncio.gather(*(one(i) for i in order))
            return [answer for _, answer in sorted(zip(order, answers, strict=True))]

    with (
        SdkServer() as upstream,
        running_proxy(record=path, upstreams={"openai": upstream.base_url}) as proxy,
    ):
        live = asyncio.run(fifty(proxy.url))
    assert len(read_for_replay(Path(path)).calls) == 50
    path_replayed = path
    path = path.replace("fifty", "replay")  # the answers asked for in the reverse order
    with running_proxy(replay=path_replayed, upstreams={"openai": upstream.base_url}) as proxy:
        replayed = asyncio.run(fifty(proxy.url))
    assert replayed == live  # byte for byte, whatever order the requests came in
    assert proxy.stop().exit_status == 0


class DrippingServer(LoopbackServer):
    """Streams an SSE event every 20 ms, up to 500, for a client to leave part-way."""

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        http.send_head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        for index in range(500):
            try:
                http.send_chunk(sse_event({"index": index}))
            except OSError:
                self.client_gone.set()
                return
            time.sleep(0.02)
        http.end_chunks()


@pytest.mark.parametrize("upstream_kind", ["streaming", "silent"])
def test_a_client_that_leaves_mid_stream_is_recorded_as_abandoned_and_the_upstream_closed(
    tmp_path: Path, upstream_kind: str
) -> None:
    path = tmp_path / "left.jsonl"
    server: LoopbackServer = DrippingServer() if upstream_kind == "streaming" else SdkServer()
    with server:
        if isinstance(server, SdkServer):
            server.queue(StallAfter(events=2))  # two events, then silence (a model thinking)
        with running_proxy(record=str(path), upstreams={"openai": server.base_url}) as proxy:
            body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
            with httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body) as answer:
                lines = answer.iter_lines()
                assert next(lines).startswith("data: ")
            # the proxy notices, closes the upstream's response; the call is written
            deadline = time.monotonic() + 10
            while not _ended(path) and time.monotonic() < deadline:
                time.sleep(0.02)
        assert server.client_gone.wait(10)  # the upstream's connection was closed
    (call,) = read_for_replay(path).calls
    assert call.outcome == "abandoned"
    # replayed, the client gets what was recorded, then the connection is cut
    received: list[str] = []
    with (
        running_proxy(replay=str(path), upstreams={"openai": server.base_url}) as proxy,
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", f"{proxy.url}/v1/chat/completions", json=body) as answer,
    ):
        received.extend(answer.iter_lines())
    served = [json.loads(line.removeprefix("data: ")) for line in received if line]
    assert served == [row["data"] for row in call.event_rows[1:]]
    assert len(served) >= 1
    assert proxy.stop().exit_status == 0  # not a mismatch: the client decides what it reads


def _ended(path: Path) -> bool:
    try:
        return '"call_end"' in path.read_text()
    except OSError:
        return False


@pytest.mark.parametrize(
    ("fault", "status"),
    [(ErrorReply(400), 400), (ErrorReply(529), 529), (StallAfter(), 504), (None, 502)],
)
def test_upstream_errors_and_failures_replay_as_the_same_status_and_body(
    tmp_path: Path, fault: Any, status: int
) -> None:
    path = str(tmp_path / "failing.jsonl")
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with SdkServer() as upstream:
        base = refused_base_url() if fault is None else upstream.base_url
        if fault is not None:
            upstream.queue(fault)
        options = {"read_timeout": 0.5}
        with running_proxy(record=path, upstreams={"openai": base}, **options) as proxy:
            live = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=30)
    with running_proxy(replay=path, upstreams={"openai": base}) as proxy:
        replayed = httpx.post(f"{proxy.url}/v1/chat/completions", json=body, timeout=30)
    assert (live.status_code, replayed.status_code) == (status, status)
    assert replayed.json() == live.json()
    if fault is None:
        assert "ConnectError" in live.json()["error"]["message"]
        assert replayed.headers["retry-after-ms"] == "1"  # no need to wait out a back-off
    assert proxy.stop().exit_status == 0


def test_what_the_server_answers_itself_reads_in_the_vendor_s_shape(tmp_path: Path) -> None:
    with running_proxy(max_request_size=1024) as proxy:
        no_route = httpx.get(f"{proxy.url}/chat/completions")
        no_recording = httpx.post(f"{proxy.url}/anthropic/v1/messages", json={})
        too_large = httpx.post(
            f"{proxy.url}/openai/v1/chat/completions",
            content=b"x" * 2048,
            headers={
                "x-openprogram-recording": "big",
                "x-openprogram-mode": "record",
                **proxy.auth,
            },
        )
    assert no_route.status_code == 404
    assert "under no vendor's prefix" in no_route.json()["error"]["message"]
    assert no_recording.status_code == 412
    assert no_recording.json()["type"] == "error"  # Anthropic's shape
    assert no_recording.json()["error"]["type"] == "openprogram_no_recording"
    assert no_recording.headers["x-should-retry"] == "false"
    assert too_large.status_code == 413
    assert "over the server's limit of 1024 bytes" in too_large.json()["error"]["message"]
