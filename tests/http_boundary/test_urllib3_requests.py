"""Record exchanges sent with ``requests`` and with urllib3's own ``PoolManager`` against a
real loopback server under ``openprogram.record_replay``, then replay them with the server
stopped and no socket at all: the same status, headers and bytes; the retries and redirects
urllib3 follows recorded as it made them; a mismatch, a refused connection and the secrets
handled as for httpx."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.activation.connection_guard import REPLAY_GUARD
from openprogram.errors import ReplayMismatch
from tests.http_boundary.boundaries import call_end, events, rows, without_raw
from tests.support.offline import offline
from tests.support.recording_rows import without_digest
from tests.support.sse_server import (
    Script,
    ScriptedServer,
    cut,
    error_script,
    sse_event,
    unused_port,
)

requests = pytest.importorskip("requests")
urllib3 = pytest.importorskip("urllib3")

REPLY = {"id": "chatcmpl-1", "choices": [{"message": {"content": "héllo"}}]}


def compact(value: Any) -> bytes:
    """JSON as replay serves it (compact, UTF-8)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def json_script(value: Any, status: int = 200, **headers: str) -> Script:
    return Script(
        cut(compact(value), every=9),
        status=status,
        headers={"Content-Type": "application/json", **headers},
    )


def test_a_json_post_with_requests_replays_byte_identical_offline(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    with openprogram.record_replay(path, mode="record"):
        live = requests.post(url, json=body, timeout=10)

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
    assert events(path)[0]["status"] == 200
    assert events(path)[1] == {"type": "http_body", "body": REPLY}
    assert without_digest(call_end(path))["outcome"] == "complete"
    server.stop()

    refusals = len(REPLAY_GUARD.refusals)
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = requests.post(url, json=body, timeout=10)

    assert len(REPLAY_GUARD.refusals) == refusals
    assert len(server.received) == 1
    assert replayed.content == live.content == compact(REPLY)
    assert (replayed.status_code, replayed.reason) == (live.status_code, live.reason)
    assert replayed.headers["content-type"] == live.headers["content-type"]
    assert replayed.json() == REPLY


def test_urllib3_pool_manager_preloaded_and_streamed(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}), Script([b"plain ", b"text"], headers={}))

    def run() -> list[bytes]:
        pool = urllib3.PoolManager()
        preloaded = pool.request("POST", f"{server.base_url}/a", body=b'{"q":1}')
        streamed = pool.request("GET", f"{server.base_url}/b", preload_content=False)
        pieces = b"".join(streamed.stream(4))
        streamed.release_conn()
        return [preloaded.data, pieces]

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert events(path, 1)[1] == {"type": "http_body", "text": "plain text"}
    assert without_digest(call_end(path, 1))["outcome"] == "complete"
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == live == [b'{"a":1}', b"plain text"]


def test_an_sse_stream_read_with_iter_lines_is_recorded_event_by_event(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    chunk = {"choices": [{"delta": {"content": "wörld"}}]}
    stream = sse_event(chunk, separators=(",", ":")) + sse_event("[DONE]")
    server.serve(Script([stream[:5], stream[5:20], stream[20:]]))
    url = f"{server.base_url}/v1/chat/completions"

    def run() -> list[bytes]:
        with requests.post(url, json={"stream": True}, stream=True, timeout=10) as response:
            return list(response.iter_lines())

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert events(path)[1:] == [{"type": "sse", "data": chunk}, {"type": "sse", "data": "[DONE]"}]
    assert without_digest(call_end(path))["outcome"] == "complete"
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == live
    assert live[0] == b"data: " + compact(chunk)


def test_error_responses_replay_with_status_and_body(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    limited = {"error": {"message": "rate limited"}}
    server.serve(
        Script(
            [gzip.compress(compact(limited))],
            status=429,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ),
        error_script(500, "boom"),
    )

    def run() -> list[tuple[int, bytes]]:
        first = requests.get(f"{server.base_url}/a", timeout=10)
        second = requests.get(f"{server.base_url}/b", timeout=10)
        return [(first.status_code, first.content), (second.status_code, second.content)]

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert events(path, 0)[1] == {"type": "http_body", "body": limited}
    assert events(path, 1)[1] == {"type": "http_body", "text": "boom"}
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == live == [(429, compact(limited)), (500, b"boom")]


def test_a_changed_body_is_a_mismatch_even_when_the_code_catches_exception(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions"

    def ask(question: str) -> str:
        try:
            reply = requests.post(url, json={"messages": [{"content": question}]}, timeout=10)
        except Exception:  # what an agent's retry loop does
            return "swallowed"
        return str(reply.json()["choices"][0]["message"]["content"])

    with openprogram.record_replay(path, mode="record"):
        assert ask("hello") == "héllo"
    server.stop()

    with (
        offline(),
        pytest.raises(ReplayMismatch) as caught,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask("goodbye")
    assert str(caught.value) == (
        "replay mismatch at call 0, field body.messages[0].content:\n"
        "recorded 'hello', incoming 'goodbye'"
    )


def test_a_refused_connection_replays_as_the_same_exception(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    url = f"http://127.0.0.1:{unused_port()}/v1/models"

    def failure() -> BaseException:
        with pytest.raises(requests.ConnectionError) as caught:
            requests.get(url, timeout=10)
        reason: BaseException = caught.value.args[0].reason
        return reason

    with openprogram.record_replay(path, mode="record"):
        live = failure()

    assert type(live) is urllib3.exceptions.NewConnectionError
    assert without_digest(call_end(path))["error"]["type"] == (
        "urllib3.exceptions.NewConnectionError"
    )
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = failure()
    assert type(replayed) is type(live)
    assert str(replayed) == str(live)


def test_retries_and_redirects_urllib3_follows_are_each_one_call(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(
        error_script(503, "busy"),
        Script([], status=302, headers={"Location": "/moved"}),
        json_script({"done": True}),
    )

    def run() -> bytes:
        pool = urllib3.PoolManager(retries=urllib3.Retry(total=3, status_forcelist=[503]))
        response = pool.request("GET", f"{server.base_url}/start")
        return bytes(response.data)

    with openprogram.record_replay(path, mode="record"):
        assert run() == compact({"done": True})

    requests_rows = [row for row in rows(path) if row["type"] == "request"]
    assert [(row["method"], row["url"]) for row in requests_rows] == [
        ("GET", f"{server.base_url}/start"),
        ("GET", f"{server.base_url}/start"),
        ("GET", f"{server.base_url}/moved"),
    ]
    assert [events(path, index)[0]["status"] for index in range(3)] == [503, 302, 200]
    assert len(server.received) == 3
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == compact({"done": True})


def test_a_passthrough_host_is_sent_uncaptured(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}), json_script({"a": 2}))
    host = f"127.0.0.1:{server.port}"

    with openprogram.record_replay(path, mode="record", passthrough_hosts=[host]):
        assert requests.get(server.base_url, timeout=10).json() == {"a": 1}
    assert rows(path) == []
    with openprogram.record_replay(path, mode="replay", passthrough_hosts=[host]):
        assert requests.get(server.base_url, timeout=10).json() == {"a": 2}
    assert len(server.received) == 2


def test_credentials_never_reach_the_recording(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    bearer = "sk-proj-Zq81xLmN0pQrStUvWxYz1234567890"
    signature = (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request"
    )
    token = "FwoGZXIvYXdzEJr//////////wEaDOpenProgramSessionToken0123456789"
    server.serve(json_script({"echo": bearer}), json_script({"ok": True}))

    with openprogram.record_replay(path, mode="record"):
        requests.get(
            f"{server.base_url}/a", headers={"Authorization": f"Bearer {bearer}"}, timeout=10
        )
        requests.post(
            f"{server.base_url}/b",
            data=b"{}",
            headers={"authorization": signature, "x-amz-security-token": token},
            timeout=10,
        )

    text = path.read_text()
    assert server.received[0].headers["authorization"] == f"Bearer {bearer}"
    for secret in (bearer, "AKIAIOSFODNN7EXAMPLE", token):
        assert secret not in text


def test_botocore_is_recorded_and_replayed(server: ScriptedServer, tmp_path: Path) -> None:
    session_module = pytest.importorskip("botocore.session")
    path = tmp_path / "r.jsonl"
    listing = (
        b'<?xml version="1.0" encoding="UTF-8"?>'
        b'<ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        b"<Owner><ID>me</ID></Owner><Buckets><Bucket><Name>reports</Name>"
        b"<CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets>"
        b"</ListAllMyBucketsResult>"
    )
    server.serve(Script([listing], headers={"Content-Type": "application/xml"}))
    secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
    token = "FwoGZXIvYXdzEJr//////////wEaDBotocoreSessionToken9876543210"

    def buckets() -> list[str]:
        client = session_module.get_session().create_client(
            "s3",
            region_name="us-east-1",
            endpoint_url=server.base_url,
            aws_access_key_id="AKIAIOSFODNN7EXAMPLE",
            aws_secret_access_key=secret,
            aws_session_token=token,
        )
        return [bucket["Name"] for bucket in client.list_buckets()["Buckets"]]

    with openprogram.record_replay(path, mode="record"):
        assert buckets() == ["reports"]
    text = path.read_text()
    for value in (secret, token, "AKIAIOSFODNN7EXAMPLE"):
        assert value not in text
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert buckets() == ["reports"]


def test_urllib3_is_hooked_once_imported_after_activation_and_never_early(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}))
    script = (
        "import sys\n"
        "from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary\n"
        "from openprogram.recording.writer import writer_for\n"
        "import openprogram.http_boundary.clients.urllib3_client\n"
        "activate_http_boundary(HttpBoundary('record', writer=writer_for(sys.argv[1])))\n"
        "assert 'urllib3' not in sys.modules\n"
        "import requests\n"
        "print(requests.get(sys.argv[2], timeout=10).json())\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path), f"{server.base_url}/late"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "{'a': 1}"
    assert [row["url"] for row in rows(path) if row["type"] == "request"] == [
        f"{server.base_url}/late"
    ]


def test_a_stream_cut_mid_way_replays_as_the_same_error_at_the_same_point(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([sse_event({"n": 1}), b'data: {"n"'], ending="drop"))

    def run() -> tuple[list[bytes], str]:
        lines: list[bytes] = []
        with requests.get(f"{server.base_url}/s", stream=True, timeout=10) as response:
            try:
                for line in response.iter_lines():
                    lines.append(line)
            except requests.exceptions.ChunkedEncodingError as error:
                return lines, type(error.args[0]).__name__
        return lines, "no error"

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert live == ([b'data: {"n": 1}', b""], "ProtocolError")
    assert [without_raw(event) for event in events(path)[1:]] == [
        {"type": "sse", "data": {"n": 1}},
        {"type": "sse_rest"},  # the event the cut stopped
    ]
    assert without_digest(call_end(path))["error"]["type"] == "urllib3.exceptions.ProtocolError"
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == live
