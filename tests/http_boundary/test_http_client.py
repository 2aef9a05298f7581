"""Record exchanges sent with ``urllib.request`` and with ``http.client`` itself against a
real loopback server under ``openprogram.record_replay``, then replay them with the server
stopped and no socket at all: the same status, headers and bytes, read whole, line by line
or by iteration; the errors at the same point as the same exception; a mismatch, a
passthrough host and the secrets handled as for httpx; a ``requests`` call recorded once."""

from __future__ import annotations

import gzip
import http.client
import json
import sys
import urllib.error
import urllib.request
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.activation.connection_guard import REPLAY_GUARD
from openprogram.errors import ReplayConnectionRefusedError, ReplayMismatch
from openprogram.http_boundary.clients.http_client import HttpClientLibrary, HttpClientRequest
from tests.http_boundary.boundaries import call_end, events, rows, without_raw
from tests.support.child_processes import openprogram_process, user_environment
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

REPLY = {"id": "chatcmpl-1", "choices": [{"message": {"content": "héllo"}}]}
BEARER = "sk-proj-Zq81xLmN0pQrStUvWxYz1234567890"


def compact(value: Any) -> bytes:
    """JSON written compactly (UTF-8), as the OpenAI API writes its events."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def spaced(value: Any) -> bytes:
    """JSON as the test server writes it (and replay serves it back)."""
    return json.dumps(value).encode()


def json_script(value: Any, status: int = 200, **headers: str) -> Script:
    return Script(
        cut(json.dumps(value).encode(), every=9),
        status=status,
        headers={"Content-Type": "application/json", **headers},
    )


def test_a_json_post_with_urlopen_replays_offline_and_keeps_no_key(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    def ask() -> tuple[int, str, str | None, bytes]:
        request = urllib.request.Request(
            url,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {BEARER}"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert isinstance(response, http.client.HTTPResponse)
            content_type = response.headers["content-type"]
            return response.status, response.reason, content_type, response.read()

    with openprogram.record_replay(path, mode="record") as active:
        live = ask()

    assert active.not_recorded == []
    assert server.received[0].headers["authorization"] == f"Bearer {BEARER}"
    assert BEARER not in path.read_text()
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
    assert events(path)[1] == {"type": "http_body", "body": REPLY, "raw": spaced(REPLY).decode()}
    assert without_digest(call_end(path))["outcome"] == "complete"
    server.stop()

    refusals = len(REPLAY_GUARD.refusals)
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = ask()
    assert len(REPLAY_GUARD.refusals) == refusals
    assert replayed == (200, "OK", "application/json", spaced(REPLY))
    assert live[:3] == replayed[:3]
    assert json.loads(live[3]) == REPLY


def test_an_sse_stream_read_line_by_line_and_by_iteration(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    chunk = {"choices": [{"delta": {"content": "wörld"}}]}
    stream = sse_event(chunk, separators=(",", ":")) + sse_event("[DONE]")
    server.serve(*[Script([stream[:5], stream[5:20], stream[20:]]) for _ in range(2)])

    def run() -> tuple[list[bytes], list[bytes]]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.request("POST", "/v1/stream", body=b'{"stream": true}')
        response = connection.getresponse()
        by_line = []
        while line := response.readline():
            by_line.append(line)
        connection.close()
        with urllib.request.urlopen(f"{server.base_url}/v1/stream", timeout=10) as streamed:
            return by_line, list(streamed)

    with openprogram.record_replay(path, mode="record"):
        live = run()

    for index in (0, 1):
        assert events(path, index)[1:] == [
            {"type": "sse", "data": chunk},
            {"type": "sse", "data": "[DONE]"},
        ]
        assert without_digest(call_end(path, index))["outcome"] == "complete"
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == live
    assert (
        live[0] == live[1] == [b"data: " + compact(chunk) + b"\n", b"\n", b"data: [DONE]\n", b"\n"]
    )


def test_a_gzip_body_and_an_error_response_replay_with_their_status_and_text(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    limited = {"error": {"message": "rate limited"}}
    server.serve(
        Script(
            [gzip.compress(json.dumps(limited).encode())],
            status=429,
            headers={"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ),
        error_script(500, "boom"),
    )

    def run() -> list[tuple[int, bytes]]:
        answers = []
        for name in ("a", "b"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(f"{server.base_url}/{name}", timeout=10)
            body = caught.value.read()
            if caught.value.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)  # the program decodes by the header
            answers.append((caught.value.code, body))
            caught.value.close()
        return answers

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert without_raw(events(path, 0)[1]) == {"type": "http_body", "body": limited}
    assert events(path, 1)[1] == {"type": "http_body", "text": "boom"}
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = run()
    assert replayed == [(429, spaced(limited)), (500, b"boom")]
    assert [json.loads(live[0][1]), live[1]] == [limited, (500, b"boom")]


def test_a_changed_body_is_a_mismatch_even_when_the_code_catches_exception(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script(REPLY))
    url = f"{server.base_url}/v1/chat/completions"

    def ask(question: str) -> str:
        data = json.dumps({"messages": [{"content": question}]}).encode()
        request = urllib.request.Request(
            url, data=data, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as reply:
                return str(json.load(reply)["choices"][0]["message"]["content"])
        except Exception:  # what an agent's retry loop does
            return "swallowed"

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


def test_transport_errors_replay_as_the_same_exception_at_the_same_point(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    refused = f"http://127.0.0.1:{unused_port()}/v1/models"
    cut_stream = Script([sse_event({"n": 1}), b'data: {"n"'], ending="drop")
    server.serve(cut_stream, cut_stream, Script(answer="close"))

    def run() -> list[object]:
        seen: list[object] = []
        with pytest.raises(urllib.error.URLError) as caught:
            urllib.request.urlopen(refused, timeout=10)  # raised by request(): wrapped
        seen.append((type(caught.value.reason), str(caught.value.reason)))
        with (
            urllib.request.urlopen(f"{server.base_url}/read", timeout=10) as response,
            pytest.raises(http.client.IncompleteRead) as incomplete,
        ):
            response.read()
        seen.append(incomplete.value.partial)
        with urllib.request.urlopen(f"{server.base_url}/lines", timeout=10) as response:
            seen.append(list(response))  # http.client ends the iteration at the cut
        with pytest.raises(http.client.RemoteDisconnected) as gone:
            urllib.request.urlopen(f"{server.base_url}/gone", timeout=10)  # by getresponse()
        seen.append(str(gone.value))
        return seen

    with openprogram.record_replay(path, mode="record"):
        live = run()

    assert live[0] == (ConnectionRefusedError, "[Errno 111] Connection refused")
    assert live[1] == b'data: {"n": 1}\n\ndata: {"n"'
    assert live[2] == [b'data: {"n": 1}\n', b"\n", b'data: {"n"']
    assert [without_digest(call_end(path, index))["error"]["type"] for index in range(4)] == [
        "ConnectionRefusedError",
        "http.client.IncompleteRead",
        "http.client.IncompleteRead",
        "http.client.RemoteDisconnected",
    ]
    assert events(path, 1)[1:] == events(path, 2)[1:]
    assert [without_raw(event) for event in events(path, 1)[1:]] == [
        {"type": "sse", "data": {"n": 1}},
        {"type": "sse_rest"},  # the text of the event the cut stopped: 'data: {"n"'
    ]
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = run()
    # the bytes recorded, half an event too, then the cut where it was
    assert replayed == live


def test_requests_is_recorded_once_by_urllib3_not_again_by_http_client(
    server: ScriptedServer, tmp_path: Path
) -> None:
    requests = pytest.importorskip("requests")
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}))

    with openprogram.record_replay(path, mode="record"):
        assert requests.get(f"{server.base_url}/once", timeout=10).json() == {"a": 1}

    assert [row["url"] for row in rows(path) if row["type"] == "request"] == [
        f"{server.base_url}/once"
    ]
    assert [row["call_index"] for row in rows(path) if row["type"] == "call_end"] == [0]
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert requests.get(f"{server.base_url}/once", timeout=10).json() == {"a": 1}


def test_requests_from_threads_replay_by_content(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(*[json_script({"ok": True}) for _ in range(4)])

    def fetch(name: str) -> tuple[str, bytes]:
        with urllib.request.urlopen(f"{server.base_url}/{name}", timeout=10) as response:
            return name, response.read()

    names = ["a", "b", "c", "d"]
    with openprogram.record_replay(path, mode="record"), ThreadPoolExecutor(4) as pool:
        live = list(pool.map(fetch, names))
    assert sorted(row["url"] for row in rows(path) if row["type"] == "request") == [
        f"{server.base_url}/{name}" for name in names
    ]
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"), ThreadPoolExecutor(4) as pool:
        replayed = list(pool.map(fetch, reversed(names)))
    assert sorted(replayed) == [(name, spaced({"ok": True})) for name in names]
    assert [name for name, _ in live] == names


def test_a_passthrough_host_is_sent_uncaptured(server: ScriptedServer, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}), json_script({"a": 2}))
    host = f"127.0.0.1:{server.port}"

    def fetch() -> Any:
        with urllib.request.urlopen(server.base_url, timeout=10) as response:
            return json.load(response)

    with openprogram.record_replay(path, mode="record", passthrough_hosts=[host]) as active:
        assert fetch() == {"a": 1}
    assert rows(path) == []
    assert active.not_recorded == []
    with openprogram.record_replay(path, mode="replay", passthrough_hosts=[host]):
        assert fetch() == {"a": 2}
    assert len(server.received) == 2


def test_the_url_of_a_request_names_the_scheme_host_and_port_it_reaches() -> None:
    def url(connection: http.client.HTTPConnection, target: str) -> str:
        request = HttpClientRequest(
            connection, "GET", target, None, {}, encode_chunked=False, send=lambda *a, **k: None
        )
        return str(request.url)

    assert url(http.client.HTTPConnection("example.com"), "/v1?a=1") == "http://example.com/v1?a=1"
    assert url(http.client.HTTPSConnection("Example.com", 8443), "/") == "https://Example.com:8443/"
    assert url(http.client.HTTPSConnection("example.com", 443), "/x") == "https://example.com/x"
    tunnelled = http.client.HTTPSConnection("proxy.internal", 3128)
    tunnelled.set_tunnel("api.example.com", 443)
    assert url(tunnelled, "/v1/models") == "https://api.example.com/v1/models"
    proxied = http.client.HTTPConnection("proxy.internal", 3128)
    assert url(proxied, "http://api.example.com/v1") == "http://api.example.com/v1"


PROGRAM = """\
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], data=b'{"q": 1}', timeout=10) as response:
    print(response.status, response.read().decode())
"""


def test_urlopen_under_exec_record_then_replay_offline(
    server: ScriptedServer, tmp_path: Path
) -> None:
    env = user_environment(tmp_path / "exec-home")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    program = tmp_path / "fetch.py"
    program.write_text(PROGRAM)
    server.serve(json_script({"a": 1}))
    url = f"{server.base_url}/v1/x"
    recorded = openprogram_process(
        "exec", "--record", "urlopen", "--", sys.executable, str(program), url, env=env
    )
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == '200 {"a": 1}\n'
    assert "not recorded" not in recorded.stderr
    server.stop()
    replayed = openprogram_process(
        "exec", "--replay", "urlopen", "--", sys.executable, str(program), url, env=env
    )
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == '200 {"a": 1}\n'
    assert len(server.received) == 1


def test_a_request_written_by_hand_is_left_to_the_connection_guard(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    with openprogram.record_replay(path, mode="record"):
        pass
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(path, mode="replay"),
    ):
        connection.putrequest("GET", "/by-hand")  # no request(): nothing the capture reads
        connection.endheaders()
    assert f"127.0.0.1:{server.port} (http.client)" in str(refused.value)
    assert server.received == []


def test_a_response_never_asked_for_ends_its_call_abandoned(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(json_script({"a": 1}))
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    with openprogram.record_replay(path, mode="record"):
        connection.request("GET", "/first")
        with pytest.raises(http.client.CannotSendRequest):
            connection.request("GET", "/second")  # as http.client refuses it live
    connection.close()
    assert without_digest(call_end(path, 0))["outcome"] == "abandoned"
    assert without_digest(call_end(path, 1))["error"]["type"] == "http.client.CannotSendRequest"


def test_a_response_with_no_body_ends_its_call_before_it_is_read(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(Script([], status=204, headers={}))

    def status() -> int:
        with urllib.request.urlopen(f"{server.base_url}/empty", timeout=10) as response:
            return int(response.status)  # closed, its body never read

    with openprogram.record_replay(path, mode="record"):
        assert status() == 204
    assert without_digest(call_end(path))["outcome"] == "complete"
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert status() == 204


@pytest.mark.parametrize(
    ("encoding", "encoded"),
    [
        # Fixed bytes (no time in the gzip header): every xdist worker collects the same ids.
        ("gzip", gzip.compress(b"plain text", mtime=0)),
        ("deflate", zlib.compress(b"plain text")),
        ("deflate", zlib.compress(b"plain text")[2:-4]),  # raw deflate, as some servers send
        ("br", b"kept as it came"),
    ],
    ids=["gzip", "deflate", "raw-deflate", "br"],
)
def test_the_body_is_decoded_as_it_is_recorded(encoding: str, encoded: bytes) -> None:
    decoder = HttpClientLibrary().content_decoder(encoding)
    decoded = b"".join(decoder.decode(encoded[i : i + 3]) for i in range(0, len(encoded), 3))
    assert decoded + decoder.flush() == (b"kept as it came" if encoding == "br" else b"plain text")


def test_each_redirect_hop_urlopen_follows_is_one_call(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    server.serve(
        Script([b"see /moved"], status=302, headers={"Location": "/moved"}),
        json_script({"done": True}),
    )

    def run() -> tuple[str, Any]:
        with urllib.request.urlopen(f"{server.base_url}/start", timeout=10) as response:
            return response.url, json.load(response)

    with openprogram.record_replay(path, mode="record"):
        assert run() == (f"{server.base_url}/moved", {"done": True})

    assert [row["url"] for row in rows(path) if row["type"] == "request"] == [
        f"{server.base_url}/start",
        f"{server.base_url}/moved",
    ]
    assert [without_digest(call_end(path, index))["outcome"] for index in (0, 1)] == [
        "complete",
        "complete",
    ]
    server.stop()
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert run() == (f"{server.base_url}/moved", {"done": True})
