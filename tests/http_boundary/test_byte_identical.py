"""Replay serves the bytes the client read live, for every client library the HTTP boundary
captures: a real loopback server writes an event stream the way some servers do — JSON with
spaces, ``\\r\\n`` line ends, a byte order mark, comments, ``event:``/``id:``/``retry:`` fields,
a field the SSE rules ignore, data on several lines — and a spaced JSON body with a trailing
newline; the session is recorded, the server stopped, and the replay, with no socket at all,
reads the same bytes through each library's raw interface (``iter_raw``, ``iter_bytes``,
``content``, ``requests``' ``iter_content``, urllib3's ``stream``, aiohttp's
``content.read()``, ``urllib.request``'s ``read()``) and the same headers, but those of the
connection. The raw text takes no part in the hash, and redaction leaves no secret in it."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

import openprogram
from openprogram.http_boundary.codec import (
    body_event,
    encode_body_row,
    encode_sse_row,
    replayed_headers,
    response_event,
    sse_event_row,
    without_stale_raw,
)
from openprogram.http_boundary.sse import SseParser
from openprogram.recording.call_digest import deterministic_event
from openprogram.recording.http_rows import RAW_TEXT_FEATURE, http_event_problem
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.store.hashing import transcript_hash
from openprogram.store.scan import scan_recording
from tests.http_boundary.boundaries import events, without_raw
from tests.support.loopback_server import LoopbackHandler, Received
from tests.support.offline import offline
from tests.support.sdk_clients import ClientKind
from tests.support.sdk_server import SdkServer
from tests.support.sse_server import Script, ScriptedServer, cut

REDACTOR = SecretRedactor(frozenset())

START = {"type": "message_start", "message": {"id": "msg_1", "content": []}}


def delta(index: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": f"wörd {index} "}}],
    }


def spaced_stream(deltas: int = 5, *, line_end: bytes = b"\r\n", tail: bool = True) -> bytes:
    """An event stream as a server that writes spaced JSON and ``\\r\\n`` writes it."""
    end = line_end
    parts = [
        "\ufeff: ping".encode() + end + end,
        b"event: message_start" + end + b"id: 1" + end + b"retry: 10" + end,
        b"data: " + json.dumps(START).encode() + end + end,
    ]
    for index in range(deltas):
        parts.append(b"data: " + json.dumps(delta(index), ensure_ascii=False).encode() + end + end)
    parts.append(b": keep-alive" + end + end)
    parts.append(b'data: {"a": 1,' + end + b"x-ignored: field" + end + b'data:  "b": [1, 2]}' + end)
    parts.append(end)
    parts.append(b"data: [DONE]" + end + end)
    if tail:  # the text after the last event
        parts.append(b": bye" + end + b"data: never dispatched")
    return b"".join(parts)


BODY = {"id": "chatcmpl-2", "choices": [{"message": {"content": "héllo"}}]}
SPACED_BODY = json.dumps(BODY).encode() + b"\n"  # escaped non-ASCII, spaces, a newline
CONNECTION_HEADERS = frozenset({"connection", "keep-alive", "transfer-encoding"})


def scripts() -> list[Script]:
    stream = spaced_stream()
    return [
        Script(cut(stream, every=23, inside=["ö"]), headers={"Content-Type": "text/event-stream"}),
        Script(cut(SPACED_BODY, every=11), headers={"Content-Type": "application/json"}),
        Script([SPACED_BODY], headers={"Content-Type": "application/json", "Content-Length": ""}),
    ]


class LengthServer(ScriptedServer):
    """A :class:`ScriptedServer` whose scripts naming a ``Content-Length`` are sent whole
    with that length (the length filled in), not chunked."""

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        script = self.next_script()
        if "Content-Length" not in script.headers:
            with self.lock:
                self.scripts.appendleft(script)
            super().answer(http, received)
            return
        body = b"".join(script.pieces)
        http.send_head(script.status, {**script.headers, "Content-Length": str(len(body))})
        http.send_body(body)


Seen = list[tuple[int, dict[str, str], bytes]]
"""Of each response: its status, its headers (lower-case names) and the bytes read."""


def _headers(items: Any) -> dict[str, str]:
    return {name.lower(): value for name, value in items}


def with_httpx(name: str, *, asynchronous: bool, raw: bool) -> Callable[[str], Seen]:
    def fetch(base_url: str) -> Seen:
        module = __import__(name)
        seen: Seen = []
        if asynchronous:

            async def run() -> None:
                async with module.AsyncClient(timeout=10) as client:
                    for path in ("/stream", "/body", "/whole"):
                        async with client.stream("GET", base_url + path) as response:
                            chunks = response.aiter_raw() if raw else response.aiter_bytes()
                            body = b"".join([chunk async for chunk in chunks])
                            headers = _headers(response.headers.multi_items())
                            seen.append((response.status_code, headers, body))

            asyncio.run(run())
            return seen
        with module.Client(timeout=10) as client:
            for path in ("/stream", "/body"):
                with client.stream("GET", base_url + path) as response:
                    chunks = response.iter_raw() if raw else response.iter_bytes()
                    body = b"".join(chunks)
                    headers = _headers(response.headers.multi_items())
                    seen.append((response.status_code, headers, body))
            response = client.get(base_url + "/whole")
            headers = _headers(response.headers.multi_items())
            seen.append((response.status_code, headers, response.content))
        return seen

    return fetch


def with_requests(base_url: str) -> Seen:
    import requests

    seen: Seen = []
    with requests.Session() as session:
        for path in ("/stream", "/body"):
            with session.get(base_url + path, stream=True, timeout=10) as response:
                body = b"".join(response.iter_content(chunk_size=None))
                seen.append((response.status_code, _headers(response.headers.items()), body))
        response = session.get(base_url + "/whole", timeout=10)
        seen.append((response.status_code, _headers(response.headers.items()), response.content))
    return seen


def with_urllib3(base_url: str) -> Seen:
    import urllib3

    seen: Seen = []
    with urllib3.PoolManager() as pool:
        for path in ("/stream", "/body", "/whole"):
            response = pool.request("GET", base_url + path, preload_content=False)
            body = b"".join(response.stream(7))
            seen.append((response.status, _headers(response.headers.items()), body))
            response.release_conn()
    return seen


def with_aiohttp(base_url: str) -> Seen:
    import aiohttp

    async def run() -> Seen:
        seen: Seen = []
        async with aiohttp.ClientSession() as session:
            for path in ("/stream", "/body", "/whole"):
                async with session.get(base_url + path) as response:
                    body = await response.content.read()
                    seen.append((response.status, _headers(response.headers.items()), body))
        return seen

    return asyncio.run(run())


def with_urlopen(base_url: str) -> Seen:
    seen: Seen = []
    for path in ("/stream", "/body", "/whole"):
        with urllib.request.urlopen(base_url + path, timeout=10) as response:
            body = response.read()
            seen.append((response.status, _headers(response.headers.items()), body))
    return seen


READERS = {
    "httpx-iter_raw": with_httpx("httpx", asynchronous=False, raw=True),
    "httpx-iter_bytes": with_httpx("httpx", asynchronous=False, raw=False),
    "httpx-aiter_raw": with_httpx("httpx", asynchronous=True, raw=True),
    "httpx2-iter_raw": with_httpx("httpx2", asynchronous=False, raw=True),
    "httpx2-aiter_bytes": with_httpx("httpx2", asynchronous=True, raw=False),
    "requests-iter_content": with_requests,
    "urllib3-stream": with_urllib3,
    "aiohttp-content.read": with_aiohttp,
    "urllib.request-read": with_urlopen,
}


def without_connection(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if name not in CONNECTION_HEADERS}


@pytest.mark.parametrize("reader", list(READERS))
def test_replay_serves_the_bytes_and_headers_read_live(reader: str, tmp_path: Path) -> None:
    fetch = READERS[reader]
    path = tmp_path / "r.jsonl"
    with LengthServer() as server:
        server.serve(*scripts())
        with openprogram.record_replay(path, mode="record"):
            live = fetch(server.base_url)
        base_url = server.base_url
    assert [body for _, _, body in live] == [spaced_stream(), SPACED_BODY, SPACED_BODY]
    assert live[2][1]["content-length"] == str(len(SPACED_BODY))

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = fetch(base_url)

    assert [body for _, _, body in replayed] == [body for _, _, body in live]
    assert [status for status, _, _ in replayed] == [200, 200, 200]
    for (_, live_headers, _), (_, replayed_headers_, _) in zip(live, replayed, strict=True):
        assert without_connection(replayed_headers_) == without_connection(live_headers)
    assert replayed[2][1]["content-length"] == str(len(SPACED_BODY))


def test_the_rows_keep_the_parsed_values_and_the_raw_text_beside_them(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with LengthServer() as server:
        server.serve(*scripts())
        with openprogram.record_replay(path, mode="record"):
            with_urlopen(server.base_url)

    assert RAW_TEXT_FEATURE in orjson.loads(path.read_bytes().splitlines()[0])["features"]
    stream = events(path, 0)
    assert [without_raw(event) for event in stream[1:]] == [
        {"type": "sse", "event": "message_start", "data": START, "id": "1", "retry": 10},
        *({"type": "sse", "data": delta(index)} for index in range(5)),
        {"type": "sse", "data": {"a": 1, "b": [1, 2]}},
        {"type": "sse", "data": "[DONE]"},
        {"type": "sse_rest"},
    ]
    assert stream[-1]["raw"] == ": bye\r\ndata: never dispatched"
    # each event's text as it came: together, the stream (its byte order mark included)
    assert "".join(event["raw"] for event in stream[1:]) == spaced_stream().decode()
    assert events(path, 1)[1] == {"type": "http_body", "body": BODY, "raw": SPACED_BODY.decode()}


def test_a_server_writing_compact_json_needs_no_raw_text(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    compact = b"".join(b"data: " + orjson.dumps(delta(index)) + b"\n\n" for index in range(3)) + (
        b"event: done\ndata: [DONE]\n\n"
    )
    with ScriptedServer() as server:
        server.serve(
            Script(cut(compact, every=13)),
            Script([orjson.dumps(BODY)], headers={"Content-Type": "application/json"}),
        )
        with openprogram.record_replay(path, mode="record"):
            live = with_urlopen_two(server.base_url)
        base_url = server.base_url

    assert all("raw" not in event for call in (0, 1) for event in events(path, call))
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert with_urlopen_two(base_url) == live == [compact, orjson.dumps(BODY)]


def read(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as response:
        body: bytes = response.read()
        return body


def with_urlopen_two(base_url: str) -> list[bytes]:
    read: list[bytes] = []
    for path in ("/stream", "/body"):
        with urllib.request.urlopen(base_url + path, timeout=10) as response:
            read.append(response.read())
    return read


def test_the_same_content_with_other_white_space_hashes_equal(tmp_path: Path) -> None:
    paths = []
    with ScriptedServer() as server:  # one server: the same URLs
        for name, line_end in (("crlf", b"\r\n"), ("lf", b"\n")):
            path = tmp_path / f"{name}.jsonl"
            server.serve(Script([spaced_stream(line_end=line_end)]))
            with openprogram.record_replay(path, mode="record"):
                assert read(server.base_url + "/stream") == spaced_stream(line_end=line_end)
            paths.append(path)
    first, second = (read_recording(path) for path in paths)
    # the raw texts differ, the events do not
    assert [e.get("raw") for e in first.calls[0].event_rows] != [
        e.get("raw") for e in second.calls[0].event_rows
    ]
    assert transcript_hash(first) == transcript_hash(second)
    row = {"type": "sse", "data": {"a": 1}, "raw": 'data: {"a": 1}\n\n'}
    assert deterministic_event("http", row) == {"type": "sse", "data": {"a": 1}}
    body = {"type": "http_body", "body": {"a": 1}, "raw": '{"a": 1}'}
    assert deterministic_event("http", body) == {"type": "http_body", "body": {"a": 1}}


SECRET = "sk-proj-" + "Zq8" * 10


def test_a_secret_redaction_removed_from_the_data_is_not_in_the_raw_text(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    leaked = {"choices": [{"delta": {"content": f"the key is {SECRET}"}}]}
    stream = (
        b"data: " + json.dumps(delta(0)).encode() + b"\r\n\r\n"
        b"data: " + json.dumps(leaked).encode() + b"\r\n\r\n"
        b": " + SECRET.encode() + b"\r\n"  # in a comment only
        b"data: " + json.dumps(delta(1)).encode() + b"\r\n\r\n"
    )
    body = json.dumps({"error": {"message": f"bad key {SECRET}"}}).encode()
    with ScriptedServer() as server:
        server.serve(Script([stream]), Script([body], headers={"Content-Type": "application/json"}))
        with openprogram.record_replay(path, mode="record"):
            live = with_urlopen_two(server.base_url)
        base_url = server.base_url
    assert live == [stream, body]

    assert SECRET not in path.read_text()
    recorded = events(path, 0)
    assert "raw" in recorded[1]  # nothing redacted: the text as it came
    assert "raw" not in recorded[2]  # the secret was in its data
    assert "raw" not in recorded[3]  # in its comment
    assert "raw" not in events(path, 1)[1]
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = with_urlopen_two(base_url)
    assert SECRET.encode() not in b"".join(replayed)
    assert replayed[0].startswith(b"data: " + json.dumps(delta(0)).encode() + b"\r\n\r\n")
    assert [b"[secret removed]" in body for body in replayed] == [True, True]


def test_scan_fix_drops_a_raw_text_whose_event_it_redacts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    known = "loopback-credential-0123456789"  # a secret only the scan knows
    leaked = {"choices": [{"delta": {"content": f"the key is {known}"}}]}
    stream = (
        b"data: " + json.dumps(delta(0)).encode() + b"\r\n\r\n"
        b"data: " + json.dumps(leaked).encode() + b"\r\n\r\n"
    )
    with ScriptedServer() as server:
        server.serve(Script([stream]))
        with openprogram.record_replay(path, mode="record"):
            read(server.base_url + "/stream")
    assert known in path.read_text()
    assert all("raw" in event for event in events(path)[1:])

    monkeypatch.setenv("LOOPBACK_API_KEY", known)
    report = scan_recording(path, fix=True)
    assert report.findings
    assert known not in path.read_text()
    fixed = events(path)
    assert "raw" in fixed[1]  # untouched
    assert "raw" not in fixed[2]
    assert fixed[2]["data"]["choices"][0]["delta"]["content"] == "the key is [secret removed]"


def test_an_older_recording_without_raw_text_replays_as_before(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ScriptedServer() as server:
        server.serve(Script([spaced_stream(2, tail=False)]))
        with openprogram.record_replay(path, mode="record"):
            read(server.base_url + "/stream")
        base_url = server.base_url
    # as an openprogram before the feature wrote it: no raw, no feature, no content-length
    lines = path.read_bytes().splitlines()
    header = orjson.loads(lines[0])
    header["features"] = [name for name in header["features"] if name != RAW_TEXT_FEATURE]
    older = [orjson.dumps(header)]
    for line in lines[1:]:
        row = orjson.loads(line)
        if row["type"] == "event":
            row["event"].pop("raw", None)
            row["event"].get("headers", {}).pop("content-length", None)
        older.append(orjson.dumps(row))
    path.write_bytes(b"\n".join(older) + b"\n")

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = read(base_url + "/stream")
    assert replayed == b"".join(encode_sse_row(without_raw(event)) for event in events(path)[1:])
    assert replayed.startswith(b"event: message_start\nid: 1\nretry: 10\ndata: {")


def test_a_file_without_the_feature_is_appended_to_without_raw_text(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ScriptedServer() as server:
        server.serve(Script([spaced_stream(1)]), Script([spaced_stream(1)]))
        with openprogram.record_replay(path, mode="record"):
            read(server.base_url + "/stream")
        lines = path.read_bytes().splitlines()
        header = orjson.loads(lines[0])
        header["features"].remove(RAW_TEXT_FEATURE)
        path.write_bytes(orjson.dumps(header) + b"\n")  # an empty file of an older writer
        with openprogram.record_replay(path, mode="record"):
            read(server.base_url + "/stream")
    assert RAW_TEXT_FEATURE not in orjson.loads(path.read_bytes().splitlines()[0])["features"]
    assert all("raw" not in event for event in events(path))
    assert "sse_rest" not in [event["type"] for event in events(path)]


# --- the codec, row by row ---------------------------------------------------------------


def parsed_events(text: str) -> list[dict[str, Any]]:
    parser = SseParser(keep_raw=True)
    return [*parser.feed(text), *parser.finish()]


def test_the_parser_gives_each_event_the_text_since_the_last_one() -> None:
    text = '\ufeff: hi\r\nevent: x\r\n\r\nid: 7\rdata: {"a": 1}\r\rdata: 2\n\n: tail\n'
    found = parsed_events(text)
    assert [event["raw"] for event in found] == [
        '\ufeff: hi\r\nevent: x\r\n\r\nid: 7\rdata: {"a": 1}\r\r',
        "data: 2\n\n",
    ]
    assert [event["data"] for event in found] == ['{"a": 1}', "2"]
    parser = SseParser(keep_raw=True)
    parser.feed(text[:-3])
    parser.finish()
    assert parser.rest() == ": ta"
    assert "raw" not in SseParser().feed("data: 1\n\n")[0]


def test_a_row_holds_raw_text_only_when_re_serializing_would_not_give_it_back() -> None:
    for text in ('data: {"a":1}\n\n', "data: [DONE]\n\n", "event: e\nid: 1\ndata: x\n\n"):
        (event,) = parsed_events(text)
        assert "raw" not in sse_event_row(event, REDACTOR, keep_raw=True)
    for text in ('data: {"a": 1}\n\n', "data: x\r\n\r\n", ": c\ndata: x\n\n", "data:x\n\n"):
        (event,) = parsed_events(text)
        row = sse_event_row(event, REDACTOR, keep_raw=True)
        assert row["raw"] == text
        assert encode_sse_row(row) == text.encode()
        assert "raw" not in sse_event_row(event, REDACTOR)  # a file without the feature
    assert "raw" not in body_event("application/json", b'{"a":1}', REDACTOR, keep_raw=True)  # type: ignore[operator]
    spaced = body_event("application/json", b'{"a": 1}\n', REDACTOR, keep_raw=True)
    assert spaced == {"type": "http_body", "body": {"a": 1}, "raw": '{"a": 1}\n'}
    assert encode_body_row(spaced) == b'{"a": 1}\n'


def test_a_raw_text_that_no_longer_holds_the_row_is_not_served() -> None:
    (event,) = parsed_events('data: {"text": "old"}\r\n\r\n')
    row = sse_event_row(event, REDACTOR, keep_raw=True)
    edited = {**row, "data": {"text": "new"}}
    assert encode_sse_row(edited) == b'data: {"text":"new"}\n\n'
    body = {"type": "http_body", "body": {"text": "new"}, "raw": '{"text": "old"}'}
    assert encode_body_row(body) == b'{"text":"new"}'
    assert without_stale_raw(row, edited) == {"type": "sse", "data": {"text": "new"}}
    assert without_stale_raw(row, dict(row)) == row


def test_the_reader_checks_the_raw_field() -> None:
    head = [{"type": "http_response", "status": 200, "headers": {}}]
    assert http_event_problem({"type": "sse", "data": "x", "raw": "data: x\r\n\r\n"}, head) is None
    assert "raw must be a string" in str(
        http_event_problem({"type": "sse", "data": 1, "raw": 1}, head)
    )
    good = {"type": "http_body", "body": {}, "raw": "{ }"}
    assert http_event_problem(good, head) is None
    text_raw = {"type": "http_body", "text": "x", "raw": "x"}
    assert "needs body beside it" in str(http_event_problem(text_raw, head))
    bad = {"type": "http_body", "body": {}, "raw": ["{}"]}
    assert "raw must be a string" in str(http_event_problem(bad, head))


def test_the_reader_checks_the_sse_rest_event() -> None:
    head: list[dict[str, Any]] = [{"type": "http_response", "status": 200, "headers": {}}]
    rest = {"type": "sse_rest", "raw": ": bye\n"}
    assert http_event_problem(rest, head) is None
    assert "raw is required" in str(http_event_problem({"type": "sse_rest"}, head))
    after = http_event_problem({"type": "sse", "data": "x"}, [*head, rest])
    assert "after the call's sse_rest event" in str(after)


def test_a_secret_in_the_text_after_the_last_event_is_redacted(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    stream = b"data: 1\n\n: the key is " + SECRET.encode() + b"\n"
    with ScriptedServer() as server:
        server.serve(Script([stream]))
        with openprogram.record_replay(path, mode="record"):
            assert read(server.base_url + "/stream") == stream
        base_url = server.base_url
    assert SECRET not in path.read_text()
    assert events(path)[-1] == {"type": "sse_rest", "raw": ": the key is [secret removed]\n"}
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert read(base_url + "/stream") == b"data: 1\n\n: the key is [secret removed]\n"


def test_content_length_is_served_for_a_complete_body_only() -> None:
    headers = {"content-type": "application/json", "content-length": "9", "date": "d"}
    assert replayed_headers(200, headers, b"123456789", method="GET", complete=True) == [
        ("content-type", "application/json"),
        ("content-length", "9"),
        ("date", "d"),
    ]
    # redaction made the body shorter: the length of the bytes served
    assert ("content-length", "4") in replayed_headers(
        200, headers, b"1234", method="GET", complete=True
    )
    # a body cut short, or abandoned: served chunked, so its ending reaches the client
    cut_short = replayed_headers(200, headers, b"1234", method="GET", complete=False)
    assert "content-length" not in dict(cut_short)
    assert ("content-length", "9") in replayed_headers(
        200, headers, b"", method="HEAD", complete=True
    )
    empty = {"content-length": "0"}
    assert replayed_headers(204, empty, b"", method="GET", complete=True) == [
        ("content-length", "0")
    ]
    assert replayed_headers(304, headers, b"", method="GET", complete=True)[-1] == ("date", "d")


# --- the official OpenAI SDK -------------------------------------------------------------


def stream_raw_lines(base_url: str) -> tuple[list[str], bytes]:
    """A streamed chat completion read line by line through ``with_streaming_response``,
    then a whole one's bytes."""
    client = ClientKind("openai", asynchronous=False).make(base_url)
    ask = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}
    try:
        completions = client.chat.completions.with_streaming_response
        with completions.create(**ask, stream=True) as streamed:
            lines = list(streamed.iter_lines())
        with completions.create(**ask) as whole:
            body = whole.read()
    finally:
        client.close()
    return lines, body


def test_the_openai_sdk_reads_the_raw_lines_it_read_live(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with SdkServer() as server:
        with openprogram.record_replay(path, mode="record"):
            live = stream_raw_lines(server.base_url)
        base_url = server.base_url

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = stream_raw_lines(base_url)

    assert replayed == live
    assert live[0][-2:] == ["data: [DONE]", ""]
    assert json.loads(live[1])["object"] == "chat.completion"


def test_the_openai_sdk_reads_a_spaced_stream_line_for_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    chunks = b"".join(
        b"data: " + json.dumps(delta(index), ensure_ascii=False).encode() + b"\r\n\r\n"
        for index in range(3)
    )
    stream = b": ping\r\n\r\n" + chunks + b"data: [DONE]\r\n\r\n"
    with ScriptedServer() as server:
        server.serve(
            Script(cut(stream, every=17, inside=["ö"])),
            Script([SPACED_BODY], headers={"Content-Type": "application/json"}),
        )
        with openprogram.record_replay(path, mode="record"):
            live = stream_raw_lines(server.base_url)
        base_url = server.base_url
    assert live[1] == SPACED_BODY

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = stream_raw_lines(base_url)

    assert replayed == live
    assert live[0][:2] == [": ping", ""]


def test_content_length_is_stored_unless_the_body_was_encoded() -> None:
    plain = [("content-type", "application/json"), ("content-length", "12"), ("connection", "x")]
    assert response_event(200, plain, REDACTOR)["headers"] == {
        "content-type": "application/json",
        "content-length": "12",
    }
    gzipped = [*plain, ("content-encoding", "gzip")]
    assert response_event(200, gzipped, REDACTOR)["headers"] == {"content-type": "application/json"}
    identity = [*plain, ("content-encoding", "identity")]
    assert "content-length" in response_event(200, identity, REDACTOR)["headers"]
