"""boto3's ``bedrock-runtime`` client (Converse and ConverseStream) recorded against a loopback
stand-in and replayed with no server and no sockets: the same reply dict, the same stream
events; the event stream stored one ``eventstream`` row per message, byte for byte; the SigV4
headers and the credentials never on disk nor compared; a drifted request stopped with
openprogram's report, not botocore's retried ``HTTPClientError``; ``show`` reading the reply
from both forms."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.http_boundary.eventstream import (
    MessageSplitter,
    decode_message,
    encode_eventstream_row,
    eventstream_row,
    rebuilt_message,
)
from openprogram.recording.format import RecordedCall
from openprogram.recording.http_rows import http_event_problem
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.store.scan import scan_recordings
from openprogram.store.show import call_views
from openprogram.vendors import http_call_parts, streamed_blocks
from tests.support.bedrock_server import (
    MODEL_ID,
    TOOL_INPUT,
    WEATHER_TOOL,
    BedrockServer,
    bedrock_client,
    converse_events,
    event_message,
)
from tests.support.offline import offline

eventstream = pytest.importorskip("botocore.eventstream")


def ask(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": [{"text": text}]}]


def converse(client: Any, text: str, **options: Any) -> dict[str, Any]:
    reply: dict[str, Any] = client.converse(modelId=MODEL_ID, messages=ask(text), **options)
    return reply


def converse_stream(client: Any, text: str, **options: Any) -> list[dict[str, Any]]:
    reply = client.converse_stream(modelId=MODEL_ID, messages=ask(text), **options)
    return list(reply["stream"])


def without_headers(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply without ``ResponseMetadata.HTTPHeaders``: replay serves the recorded headers
    but not the wire's ``content-length`` (the client counts the body itself)."""
    metadata = {k: v for k, v in reply["ResponseMetadata"].items() if k != "HTTPHeaders"}
    return {**reply, "ResponseMetadata": metadata}


def event_rows(path: Path) -> list[dict[str, Any]]:
    return [
        row["event"]
        for row in map(json.loads, path.read_text().splitlines())
        if row["type"] == "event" and row["event"]["type"] == "eventstream"
    ]


def parsed_by_botocore(stream: bytes) -> list[tuple[dict[str, Any], bytes]]:
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(stream)
    return [(message.headers, message.payload) for message in buffer]


# --- the encoding ------------------------------------------------------------------------


def test_the_stand_in_writes_messages_botocore_parses_and_openprogram_decodes_alike() -> None:
    events = converse_events({"messages": ask("hi"), "toolConfig": WEATHER_TOOL})
    messages = [
        event_message(
            {":event-type": kind, ":content-type": "application/json", ":message-type": "event"},
            json.dumps(payload).encode(),
        )
        for kind, payload in events
    ]
    parsed = parsed_by_botocore(b"".join(messages))
    assert [headers[":event-type"] for headers, _ in parsed] == [kind for kind, _ in events]
    assert [json.loads(payload) for _, payload in parsed] == [payload for _, payload in events]
    for message, (headers, payload) in zip(messages, parsed, strict=True):
        decoded = decode_message(message)
        assert decoded is not None
        assert (decoded.headers, decoded.payload) == (headers, payload)
        rebuilt = rebuilt_message(message, decoded, b'{"other":1}')
        assert parsed_by_botocore(rebuilt) == [(headers, b'{"other":1}')]


def test_a_message_is_decoded_only_when_its_lengths_and_checksums_hold() -> None:
    message = event_message({":event-type": "messageStop"}, b'{"stopReason":"end_turn"}')
    assert decode_message(message) is not None
    corrupted = message[:-1] + bytes([message[-1] ^ 1])
    assert decode_message(corrupted) is None
    assert decode_message(message[:-3]) is None
    with pytest.raises(eventstream.ChecksumMismatch):
        parsed_by_botocore(corrupted)


def test_the_splitter_cuts_by_the_prelude_however_the_bytes_arrive() -> None:
    messages = [event_message({":event-type": f"e{n}"}, b"x" * n) for n in range(5)]
    stream = b"".join(messages)
    for size in (1, 3, 16, len(stream)):
        splitter = MessageSplitter()
        found = [
            m for at in range(0, len(stream), size) for m in splitter.feed(stream[at : at + size])
        ]
        assert found == messages
        assert splitter.rest() == b""
    splitter = MessageSplitter()
    assert splitter.feed(stream[:-2]) == messages[:-1]
    assert splitter.rest() == messages[-1][:-2]
    splitter = MessageSplitter()
    assert splitter.feed(b"\x00\x00\x00\x01 not an event stream") == []
    assert splitter.rest() == b"\x00\x00\x00\x01 not an event stream"


# --- record and replay -------------------------------------------------------------------


def test_converse_replays_the_same_reply_offline(tmp_path: Path) -> None:
    path = tmp_path / "converse.jsonl"
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        live = converse(client, "hello")
        live_tool = converse(client, "weather?", toolConfig=WEATHER_TOOL)
    server.stop()
    assert live["output"]["message"]["content"] == [{"text": "echo: hello"}]
    assert live_tool["stopReason"] == "tool_use"
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = converse(client, "hello")
        replayed_tool = converse(client, "weather?", toolConfig=WEATHER_TOOL)
    assert without_headers(replayed) == without_headers(live)
    assert without_headers(replayed_tool) == without_headers(live_tool)
    assert replayed_tool["output"]["message"]["content"][1]["toolUse"]["input"] == TOOL_INPUT
    request = read_recording(path).calls[0].request
    assert request["body"] == {"messages": ask("hello")}, "the JSON body is stored parsed"


@pytest.mark.parametrize(
    "sending",
    [{}, {"piece_size": 5}, {"whole": True}],
    ids=["a chunk a message", "5-byte chunks", "one body with a content-length"],
)
def test_converse_stream_is_stored_one_row_a_message_byte_exact_and_replayed(
    tmp_path: Path, sending: dict[str, Any]
) -> None:
    path = tmp_path / "stream.jsonl"
    server = BedrockServer(**sending)
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        live = converse_stream(client, "hello there", toolConfig=WEATHER_TOOL)
    server.stop()
    (sent,) = server.streams
    rows = event_rows(path)
    messages = [base64.b64decode(row["base64"]) for row in rows]
    assert b"".join(messages) == sent
    assert len(rows) == len(parsed_by_botocore(sent)) == len(live)
    assert rows[0]["headers"] == {
        ":event-type": "messageStart",
        ":content-type": "application/json",
        ":message-type": "event",
    }
    assert [{row["headers"][":event-type"]: row["data"]} for row in rows] == live
    assert read_recording(path).calls[0].outcome == "complete"

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = converse_stream(client, "hello there", toolConfig=WEATHER_TOOL)
    assert replayed == live
    assert "".join(
        e["contentBlockDelta"]["delta"]["toolUse"]["input"]
        for e in live
        if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
    ) == json.dumps(TOOL_INPUT)


def read_stream(client: Any, text: str) -> tuple[list[dict[str, Any]], str | None]:
    """The events a stream yields, and the error it ends with (``module.Type: message``)."""
    events: list[dict[str, Any]] = []
    try:
        reply = client.converse_stream(modelId=MODEL_ID, messages=ask(text))
        for event in reply["stream"]:
            events.append(event)
    except Exception as exc:
        return events, f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
    return events, None


def test_a_stream_cut_mid_message_keeps_its_bytes_and_replays_the_same_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cut.jsonl"
    server = BedrockServer(cut_at=200)  # inside the second message
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        live = read_stream(client, "hello")
    server.stop()
    assert live == (
        [{"messageStart": {"role": "assistant"}}],
        "urllib3.exceptions.ProtocolError: Response ended prematurely",
    )
    rows = event_rows(path)
    assert [sorted(row) for row in rows] == [
        ["base64", "data", "headers", "type"],
        ["base64", "type"],
    ]
    (sent,) = server.streams
    assert b"".join(base64.b64decode(row["base64"]) for row in rows) == sent[:200]
    (call,) = read_recording(path).calls
    assert call.outcome == "error"
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert read_stream(client, "hello") == live


# --- credentials -------------------------------------------------------------------------

SIGNING = ("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256")


def test_sigv4_headers_and_the_credentials_never_reach_disk_nor_the_comparison(
    tmp_path: Path,
) -> None:
    path = tmp_path / "signed.jsonl"
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    # even named to be stored, the signature's headers are not
    with openprogram.record_replay(path, mode="record", http_headers=SIGNING):
        live = converse(client, "hello")
        converse_stream(client, "hello")
    server.stop()
    sent = server.received[0].headers
    assert sent["x-amz-security-token"] == "faketoken"
    assert "AKIATESTFAKE" in sent["authorization"]
    text = path.read_text()
    assert "AKIATESTFAKE" not in text
    assert "faketoken" not in text
    for call in read_recording(path).calls:
        assert call.request["headers"] == {"content-type": "application/json"}
    # other credentials: another signature, and the replay matches
    other = bedrock_client(server.base_url, access_key_id="AKIAOTHERKEY", session_token="other")
    with offline(), openprogram.record_replay(path, mode="replay", http_headers=SIGNING):
        assert without_headers(converse(other, "hello")) == without_headers(live)
        converse_stream(other, "hello")


@pytest.mark.parametrize("secret", ["faketoken", "AKIATESTFAKE"], ids=["token", "key id"])
def test_a_credential_in_a_streamed_payload_is_removed_from_its_bytes_too(
    tmp_path: Path, secret: str
) -> None:
    path = tmp_path / "secret.jsonl"
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    # the session token and the access key id are the call's credentials: removed wherever
    # the reply holds them (whole in the second of the two text deltas)
    prompt = f"please repeat this back to me, it is {secret}"
    with openprogram.record_replay(path, mode="record"):
        live = converse_stream(client, prompt)
    server.stop()
    assert any(secret in json.dumps(event) for event in live)
    rows = event_rows(path)
    for row in rows:
        message = base64.b64decode(row["base64"])
        assert secret.encode() not in message
        ((_, payload),) = parsed_by_botocore(message)  # checksums still hold
        assert json.loads(payload) == row["data"]
    assert secret not in path.read_text()
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = converse_stream(client, prompt)
    assert replayed == [{row["headers"][":event-type"]: row["data"]} for row in rows]
    assert "[secret removed]" in json.dumps(replayed)


def test_scan_fix_removes_a_key_cut_across_deltas_from_the_data_and_the_bytes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "cut-key.jsonl"
    key = "AKIAIOSFODNN7EXAMPLE"  # an access key id's shape, not the call's own
    prompt = f"abc {key}"  # the reply's two deltas: 'echo: abc AKIAI', 'OSFODNN7EXAMPLE'
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        converse_stream(client, prompt)
    server.stop()
    assert key[5:] in path.read_text(), "whole in no delta, the key is not removed when recorded"
    report = scan_recordings([path], fix=True)
    assert [finding.kind for finding in report.findings] == ["aws-access-key-id"]
    for row in event_rows(path):
        message = base64.b64decode(row["base64"])
        assert key[:5].encode() not in message
        assert key[5:].encode() not in message
    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = converse_stream(client, prompt)
    texts = [e["contentBlockDelta"]["delta"]["text"] for e in replayed if "contentBlockDelta" in e]
    assert "".join(texts) == "echo: abc [secret removed]"


def test_replay_serves_a_message_rebuilt_when_a_rewrite_changed_its_data() -> None:
    message = event_message(
        {":event-type": "contentBlockDelta"},
        b'{"delta":{"text":"my key sk-live"},"contentBlockIndex":0}',
    )
    row = {
        "type": "eventstream",
        "headers": {":event-type": "contentBlockDelta"},
        "data": {"delta": {"text": "my key [REDACTED]"}, "contentBlockIndex": 0},
        "base64": base64.b64encode(message).decode(),
    }
    ((_, payload),) = parsed_by_botocore(encode_eventstream_row(row))
    assert json.loads(payload) == row["data"]
    decoded = decode_message(message)
    assert decoded is not None
    assert encode_eventstream_row({**row, "data": json.loads(decoded.payload)}) == message


# --- drift -------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
def test_a_drifted_request_raises_the_mismatch_not_a_retried_http_client_error(
    tmp_path: Path, stream: bool
) -> None:
    path = tmp_path / "drift.jsonl"
    call = converse_stream if stream else converse
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        call(client, "hello")
    server.stop()
    sends: list[object] = []
    client.meta.events.register("before-send.bedrock-runtime.*", lambda **kw: sends.append(kw))
    replaying = openprogram.record_replay(path, mode="replay")
    with offline(), pytest.raises(ReplayMismatch) as caught, replaying:
        try:
            call(client, "goodbye")
        except Exception as exc:  # what a program catching everything would see
            pytest.fail(f"botocore raised {type(exc).__name__}: {exc}")
    assert len(sends) == 1, "botocore did not retry"
    assert caught.value.difference.field_path == "body.messages[0].content[0].text"
    assert str(caught.value).splitlines()[1] == "recorded 'hello', incoming 'goodbye'"


# --- the rows ----------------------------------------------------------------------------


def test_the_reader_checks_eventstream_rows() -> None:
    head = [{"type": "http_response", "status": 200, "headers": {}}]
    assert http_event_problem({"type": "eventstream", "base64": "AAAA"}, head) is None
    assert "base64 is required" in str(http_event_problem({"type": "eventstream"}, head))
    bad_headers = {"type": "eventstream", "base64": "AAAA", "headers": []}
    assert "headers must be an object" in str(http_event_problem(bad_headers, head))
    assert "before the call's http_response" in str(
        http_event_problem({"type": "eventstream", "base64": "AAAA"}, [])
    )


def test_a_file_without_the_feature_gets_the_stream_as_one_body(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = {
        "type": "header",
        "format_version": 2,
        "created_at": "2026-01-01T00:00:00Z",
        "features": ["http", "tapes", "request_deltas"],
    }
    path.write_text(json.dumps(header) + "\n")
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        live = converse_stream(client, "hello")
    server.stop()
    (call,) = read_recording(path).calls
    assert [row["type"] for row in call.event_rows] == ["http_response", "http_body"]
    with offline(), openprogram.record_replay(path, mode="replay"):
        assert converse_stream(client, "hello") == live


# --- show --------------------------------------------------------------------------------


def test_show_reads_the_reply_from_the_json_and_the_event_stream(tmp_path: Path) -> None:
    path = tmp_path / "show.jsonl"
    server = BedrockServer()
    client = bedrock_client(server.base_url)
    with openprogram.record_replay(path, mode="record"):
        converse(client, "weather?", toolConfig=WEATHER_TOOL)
        converse_stream(client, "weather?", toolConfig=WEATHER_TOOL)
    server.stop()
    whole, streamed = call_views(path)
    for view, body in ((whole, "json"), (streamed, "eventstream")):
        assert view.http is not None
        assert (view.http.api, view.http.body) == ("bedrock-converse", body)
        assert view.input_text == "weather?"
        assert view.reply_text == "echo: weather?"
        assert view.tool_calls == [("get_weather", TOOL_INPUT)]
        assert view.stop_reason == "tool_use"
        assert view.tokens == (12, 7)


def stream_call(url: str, events: list[tuple[str, str, Any]]) -> RecordedCall:
    """An HTTP call streaming ``events`` (message type, event type, payload) as
    ``eventstream`` rows."""
    rows: list[dict[str, Any]] = [
        {
            "type": "http_response",
            "status": 200,
            "headers": {"content-type": "application/vnd.amazon.eventstream"},
        }
    ]
    for message_type, kind, payload in events:
        type_header = ":exception-type" if message_type == "exception" else ":event-type"
        headers = {type_header: kind, ":message-type": message_type}
        message = event_message(headers, json.dumps(payload).encode())
        rows.append(eventstream_row(message, SecretRedactor(frozenset())))
    body = {"messages": ask("think first")}
    request = {"method": "POST", "url": url, "headers": {}, "body": body}
    return RecordedCall(0, 1, request, rows, outcome="complete", boundary="http")


def test_the_vendor_view_reads_reasoning_and_an_exception_in_the_stream() -> None:
    events: list[tuple[str, str, Any]] = [
        ("event", "messageStart", {"role": "assistant"}),
        (
            "event",
            "contentBlockDelta",
            {"delta": {"reasoningContent": {"text": "hm"}}, "contentBlockIndex": 0},
        ),
        ("event", "contentBlockDelta", {"delta": {"text": "It is "}, "contentBlockIndex": 1}),
        ("event", "contentBlockDelta", {"delta": {"text": "sunny."}, "contentBlockIndex": 1}),
        ("exception", "throttlingException", {"message": "Too many requests"}),
    ]
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse-stream"
    exchange, reply = http_call_parts(stream_call(url, events))
    assert (exchange.api, exchange.body, exchange.sse_events) == (
        "bedrock-converse",
        "eventstream",
        5,
    )
    assert (reply.input_text, reply.thinking_text, reply.reply_text) == (
        "think first",
        "hm",
        "It is sunny.",
    )
    assert reply.error == "throttlingException: Too many requests"
    # another path: claimed by its first event's shape
    (_, by_shape) = http_call_parts(stream_call("http://127.0.0.1:1/proxy", events))
    assert by_shape.reply_text == "It is sunny."
    pieces = streamed_blocks(stream_call(url, events))
    assert [[(p.event, p.path, p.text) for p in block] for block in pieces] == [
        [(3, ("data", "delta", "text"), "It is "), (4, ("data", "delta", "text"), "sunny.")]
    ]


def test_the_vendor_view_reads_an_error_response() -> None:
    rows: list[dict[str, Any]] = [
        {"type": "http_response", "status": 400, "headers": {"content-type": "application/json"}},
        {"type": "http_body", "body": {"message": "The provided model identifier is invalid."}},
    ]
    url = "https://bedrock-runtime.us-east-1.amazonaws.com/model/nope/converse"
    request = {"method": "POST", "url": url, "headers": {}, "body": {"messages": ask("hi")}}
    call = RecordedCall(0, 1, request, rows, outcome="complete", boundary="http")
    exchange, reply = http_call_parts(call)
    assert exchange.api == "bedrock-converse"
    assert reply.error == "HTTP 400: The provided model identifier is invalid."
