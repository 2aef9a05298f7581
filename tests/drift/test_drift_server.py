"""The drift server serves a recording's HTTP responses back on the wire: unchanged, the real
SDKs read what was recorded; each change visibly changes what is served; requests are
matched to recorded calls by method and path, in order, and one nothing is left for gets a
404 saying so."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from httpx_sse import ServerSentEvent, connect_sse

import openprogram
from openprogram.recording import read_recording
from tests.support.bedrock_server import converse_events, event_message
from tests.support.drift_server import (
    Add,
    Change,
    DriftServer,
    ErrorBody,
    NewEvent,
    Rechunk,
    Rename,
    Replace,
    ServedEvent,
    VaryContent,
    body_pieces,
    other_id,
    other_text,
    parse_path,
    served_response,
)
from tests.support.http_call_rows import provider_call, write_calls
from tests.support.recording_rows import Row
from tests.support.sdk_server import SdkServer
from tests.support.vendor_http_rows import (
    chat_chunk,
    chat_completion_call,
    chat_stream_call,
    connect_error_call,
    cut_stream_call,
    http_call,
    messages_stream_call,
    other_api_call,
    response,
    responses_stream_call,
    sse,
)

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
RESPONSES = "/v1/responses"
CONVERSE_STREAM = "/model/anthropic.claude-3-haiku-20240307-v1:0/converse-stream"
GEMINI_STREAM = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"


def recording(tmp_path: Path, *calls: list[Row]) -> Path:
    return write_calls(tmp_path / "recorded.jsonl", *calls)


def events(server: DriftServer, path: str, method: str = "POST") -> list[ServerSentEvent]:
    with (
        httpx.Client(base_url=server.base_url) as client,
        connect_sse(client, method, path, json={}) as source,
    ):
        return list(source.iter_sse())


def datas(server: DriftServer, path: str) -> list[Any]:
    return [
        event.data if event.data == "[DONE]" else json.loads(event.data)
        for event in events(server, path)
    ]


def post(server: DriftServer, path: str) -> httpx.Response:
    return httpx.post(server.base_url + path, json={})


def chat_texts(chunks: list[Any]) -> list[str]:
    return [
        choice["delta"]["content"]
        for chunk in chunks
        if isinstance(chunk, dict)
        for choice in chunk["choices"]
        if choice["delta"].get("content")
    ]


def keys(value: Any, at: str = "$") -> Iterator[str]:
    """Every path of ``value`` with the type found there: its shape."""
    yield f"{at}:{type(value).__name__}"
    if isinstance(value, dict):
        for key, item in value.items():
            yield from keys(item, f"{at}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from keys(item, f"{at}[*]")


# -- bedrock and gemini calls, written here --------------------------------------------------


def eventstream_row(event_type: str, data: Row) -> Row:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    message = event_message(headers, json.dumps(data, separators=(",", ":")).encode())
    row: Row = {"type": "eventstream", "headers": headers, "data": data}
    row["base64"] = base64.b64encode(message).decode("ascii")
    return row


CONVERSE_REQUEST = {"messages": [{"role": "user", "content": [{"text": "hello there"}]}]}


def converse_stream_call(index: int = 0) -> list[Row]:
    """ConverseStream's answer to ``hello there``, as BedrockServer streams it."""
    rows = [eventstream_row(kind, data) for kind, data in converse_events(CONVERSE_REQUEST)]
    head = response(content_type="application/vnd.amazon.eventstream")
    url = "http://127.0.0.1:1" + CONVERSE_STREAM.replace(":0/", "%3A0/")
    return http_call(index, "POST", url, CONVERSE_REQUEST, [head, *rows])


def gemini_stream_call(index: int = 0) -> list[Row]:
    """A Gemini stream of two pieces, the last with the finish reason and the counts."""

    def chunk(text: str, final: bool) -> Row:
        candidate: Row = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        answer: Row = {"candidates": [candidate]}
        if final:
            candidate["finishReason"] = "STOP"
            answer["usageMetadata"] = {"promptTokenCount": 4, "totalTokenCount": 10}
        answer["responseId"] = "d2VsbCBoZWxsbw"
        return answer

    head = response()
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    url = "https://generativelanguage.googleapis.com" + GEMINI_STREAM + "?alt=sse"
    rows = [head, sse(chunk("echo:", False)), sse(chunk(" hi there", True))]
    return http_call(index, "POST", url, body, rows)


# -- unchanged: the real SDKs read what was recorded -----------------------------------------


def test_unchanged_the_openai_sdk_reads_what_was_recorded_whole_and_streamed(
    tmp_path: Path,
) -> None:
    import openai

    path = tmp_path / "session.jsonl"
    messages: Any = [{"role": "user", "content": "tell me about drift"}]

    def session(base_url: str) -> list[Any]:
        client = openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
        whole = client.chat.completions.with_raw_response.create(
            model="gpt-4o-mini", messages=messages
        )
        stream = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = [chunk.model_dump() for chunk in stream]
        return [whole.parse().model_dump(), whole.headers["x-request-id"], chunks]

    with SdkServer() as live, openprogram.record_replay(path, mode="record"):
        recorded = session(live.openai_url)

    with DriftServer(path) as server:
        served = session(server.base_url + "/v1")

    assert served == recorded
    assert chat_texts(served[2]) != []
    assert served[2][-1]["usage"] is not None
    assert server.served == [0, 1]
    assert [r.path for r in server.received] == [CHAT, CHAT]


def test_rechunked_the_openai_sdk_reads_the_same_message_from_twice_the_pieces(
    tmp_path: Path,
) -> None:
    import openai

    path = tmp_path / "session.jsonl"

    def session(base_url: str) -> tuple[str | None, str | None, int]:
        client = openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
        with client.chat.completions.stream(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "split me up"}]
        ) as stream:
            pieces = sum(1 for event in stream if event.type == "content.delta" and event.delta)
            choice = stream.get_final_completion().choices[0]
        return choice.message.content, choice.finish_reason, pieces

    with SdkServer() as live, openprogram.record_replay(path, mode="record"):
        text, finish, pieces = session(live.openai_url)

    recorded = chat_texts([row.get("data") for row in read_recording(path).calls[0].event_rows])
    assert pieces == len(recorded) > 1
    assert all(len(piece) >= 2 for piece in recorded)
    with DriftServer(path, [Rechunk()]) as server:
        assert session(server.base_url + "/v1") == (text, finish, 2 * pieces)
    assert finish == "stop"


# -- what each change does -------------------------------------------------------------------


def test_rename_moves_the_key_in_a_body_and_in_every_chunk(tmp_path: Path) -> None:
    path = recording(tmp_path, chat_completion_call(0), chat_stream_call(1))
    with DriftServer(path, [Rename("choices[*].finish_reason", "stop_cause")]) as server:
        body = post(server, CHAT).json()
        chunks = datas(server, CHAT)

    choice = body["choices"][0]
    assert list(choice) == ["index", "message", "logprobs", "stop_cause"]
    assert choice["stop_cause"] == "stop"
    for chunk in chunks[:-1]:
        for choice in chunk["choices"]:
            assert "finish_reason" not in choice
            assert "stop_cause" in choice
    assert chunks[-1] == "[DONE]"


def test_replace_changes_a_type_and_an_enum_where_a_value_is_set(tmp_path: Path) -> None:
    path = recording(tmp_path, chat_completion_call(0), chat_stream_call(1), chat_stream_call(2))
    changes: list[Change] = [
        Replace("created", "yesterday"),
        Replace("choices[*].finish_reason", "function_call", call=1),
        Replace("choices[*].finish_reason", "length", include_null=True, call=2),
    ]
    with DriftServer(path, changes) as server:
        body = post(server, CHAT).json()
        only_set = datas(server, CHAT)[:-1]
        every = datas(server, CHAT)[:-1]

    assert body["created"] == "yesterday"
    assert body["choices"][0]["finish_reason"] == "stop"
    reasons = [choice["finish_reason"] for chunk in only_set for choice in chunk["choices"]]
    assert reasons == [None] * 7 + ["function_call"]
    assert {chunk["created"] for chunk in only_set} == {"yesterday"}
    assert {choice["finish_reason"] for chunk in every for choice in chunk["choices"]} == {"length"}


def test_add_puts_a_new_key_in_each_object_at_the_path(tmp_path: Path) -> None:
    path = recording(tmp_path, chat_completion_call(0))
    changes: list[Change] = [
        Add("$", "service_tier_v2", "default"),
        Add("choices[*]", "logprobs_v2", None),
    ]
    with DriftServer(path, changes) as server:
        body = post(server, CHAT).json()

    assert body["service_tier_v2"] == "default"
    assert list(body)[-1] == "service_tier_v2"
    assert body["choices"][0]["logprobs_v2"] is None


def test_a_change_can_be_kept_to_one_event_type_and_to_one_call(tmp_path: Path) -> None:
    path = recording(tmp_path, messages_stream_call(0), messages_stream_call(1))
    changes: list[Change] = [
        Replace("delta.stop_reason", "max_tokens", event="message_delta"),
        Add("$", "drifted", True, event="content_block_stop", call=1),
    ]
    with DriftServer(path, changes) as server:
        first, second = events(server, MESSAGES), events(server, MESSAGES)

    recorded = [row["event"]["data"] for row in messages_stream_call(0)[2:-1]]
    stop = next(json.loads(event.data) for event in first if event.event == "message_delta")
    assert stop["delta"]["stop_reason"] == "max_tokens"
    assert [json.loads(event.data) for event in first if event.event != "message_delta"] == [
        data for data in recorded if data["type"] != "message_delta"
    ]
    drifted = [event.event for event in second if json.loads(event.data).get("drifted")]
    assert drifted == ["content_block_stop"] * 3
    assert server.served == [0, 1]


def test_error_body_answers_with_that_status_and_body(tmp_path: Path) -> None:
    import openai

    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    path = recording(tmp_path, chat_stream_call(0), chat_stream_call(1))
    changes: list[Change] = [ErrorBody(529, error, {"x-should-retry": "false"})]
    with DriftServer(path, changes) as server:
        answer = post(server, CHAT)
        client = openai.OpenAI(api_key="sk-test", base_url=server.base_url + "/v1", max_retries=0)
        with pytest.raises(openai.APIStatusError) as raised:
            client.chat.completions.create(model="gpt-4o-mini", messages=[], stream=True)

    assert answer.status_code == 529
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["x-should-retry"] == "false"
    assert answer.json() == error
    assert isinstance(raised.value, openai.InternalServerError)
    assert raised.value.status_code == 529
    assert raised.value.body == error["error"]


def test_new_event_goes_before_done_at_the_end_or_where_asked(tmp_path: Path) -> None:
    path = recording(tmp_path, chat_stream_call(0), messages_stream_call(1), chat_stream_call(2))
    changes: list[Change] = [
        NewEvent(None, {"object": "chat.completion.annotation"}, call=0),
        NewEvent("content_block_citation", {"type": "content_block_citation"}, call=1),
        NewEvent("hello", {"type": "hello"}, position=0, call=2),
    ]
    with DriftServer(path, changes) as server:
        chat = events(server, CHAT)
        messages = events(server, MESSAGES)
        first = events(server, CHAT)

    assert [event.data for event in chat[-2:]] == [
        '{"object":"chat.completion.annotation"}',
        "[DONE]",
    ]
    assert len(chat) == 11
    assert (messages[-1].event, messages[-2].event) == ("content_block_citation", "message_stop")
    assert (first[0].event, first[0].data) == ("hello", '{"type":"hello"}')


def test_rechunk_splits_every_text_delta_in_two(tmp_path: Path) -> None:
    path = recording(
        tmp_path, chat_stream_call(0), messages_stream_call(1), responses_stream_call(2)
    )
    with DriftServer(path, [Rechunk()]) as server:
        chat = datas(server, CHAT)
        messages = datas(server, MESSAGES)
        answer = datas(server, RESPONSES)

    assert chat_texts(chat) == ["Let me", " check", " the w", "eather."]
    texts = [
        data["delta"]["text"]
        for data in messages
        if data["type"] == "content_block_delta" and data["delta"]["type"] == "text_delta"
    ]
    assert texts == ["I'll check the ", "current weather", " in P", "aris."]
    thinking = [data for data in messages if data.get("delta", {}).get("type") == "thinking_delta"]
    assert len(thinking) == 2  # thinking is not text the user reads
    deltas = [data["delta"] for data in answer if data["type"] == "response.output_text.delta"]
    assert deltas == ["I'll", " look", " tha", "t up."]
    assert len(chat) == 12
    assert len(answer) == 17


def test_rechunk_says_the_finish_reason_once_at_the_end(tmp_path: Path) -> None:
    last = chat_chunk({"content": "Bye."}, finish="stop")
    events_ = [response(), sse(chat_chunk({"content": "Hi"})), sse(last), sse("[DONE]")]
    call = http_call(0, "POST", "https://api.openai.com/v1/chat/completions", {}, events_)
    with DriftServer(recording(tmp_path, call), [Rechunk()]) as server:
        chunks = datas(server, CHAT)[:-1]

    assert chat_texts(chunks) == ["H", "i", "By", "e."]
    reasons = [chunk["choices"][0]["finish_reason"] for chunk in chunks]
    assert reasons == [None, None, None, "stop"]


def test_rechunk_splits_gemini_parts_and_bedrock_deltas(tmp_path: Path) -> None:
    eventstream = pytest.importorskip("botocore.eventstream")
    path = recording(tmp_path, gemini_stream_call(0), converse_stream_call(1))
    with DriftServer(path, [Rechunk()]) as server:
        gemini = datas(server, GEMINI_STREAM + "?alt=sse")
        raw = post(server, CONVERSE_STREAM).content

    parts = [data["candidates"][0]["content"]["parts"][0]["text"] for data in gemini]
    assert parts == ["ec", "ho:", " hi ", "there"]
    assert ["usageMetadata" in data for data in gemini] == [False, False, False, True]
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(raw)
    messages = [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]
    pieces = [data["delta"]["text"] for kind, data in messages if kind == "contentBlockDelta"]
    assert "".join(pieces) == "echo: hello there"
    assert len(pieces) == 4


def test_vary_content_keeps_the_shape_and_changes_the_values(tmp_path: Path) -> None:
    path = recording(tmp_path, chat_completion_call(0))
    with DriftServer(path, [VaryContent()]) as server:
        body = post(server, CHAT).json()

    recorded = chat_completion_call(0)[2]["event"]["body"]
    assert list(keys(body)) == list(keys(recorded))
    text = body["choices"][0]["message"]["content"]
    assert text != recorded["choices"][0]["message"]["content"]
    assert text
    assert body["id"].startswith("chatcmpl-")
    assert body["id"] != recorded["id"]
    assert len(body["id"]) == len(recorded["id"])
    assert body["created"] == recorded["created"] + 1000
    assert body["usage"] == {key: count + 7 for key, count in recorded["usage"].items()}
    assert body["model"] == recorded["model"]


def test_vary_content_of_a_stream_keeps_its_pieces_adding_up_and_its_ids_linked(
    tmp_path: Path,
) -> None:
    path = recording(tmp_path, responses_stream_call(0), gemini_stream_call(1))
    with DriftServer(path, [VaryContent()]) as server:
        answer = datas(server, RESPONSES)
        gemini = datas(server, GEMINI_STREAM)

    recorded = [row["event"]["data"] for row in responses_stream_call(0)[2:-1]]
    assert [list(keys(data)) for data in answer] == [list(keys(data)) for data in recorded]
    deltas = "".join(d["delta"] for d in answer if d["type"] == "response.output_text.delta")
    done = next(d["text"] for d in answer if d["type"] == "response.output_text.done")
    assert deltas == done == other_text("I'll look that up.") != "I'll look that up."
    message_id = answer[2]["item"]["id"]
    assert message_id.startswith("msg_")
    assert message_id != recorded[2]["item"]["id"]
    assert {d["item_id"] for d in answer if "item_id" in d} == {
        message_id,
        answer[9]["item"]["id"],
    }
    final = answer[-1]["response"]
    assert final["usage"]["output_tokens"] == 23 + 7
    assert final["created_at"] == 1764576000 + 1000
    assert [data["responseId"] for data in gemini] == [other_id("d2VsbCBoZWxsbw")] * 2
    assert gemini[1]["usageMetadata"] == {"promptTokenCount": 11, "totalTokenCount": 17}


# -- how responses are written ---------------------------------------------------------------


def test_an_event_stream_is_encoded_anew_as_aws_does(tmp_path: Path) -> None:
    eventstream = pytest.importorskip("botocore.eventstream")
    call = converse_stream_call(0)
    path = recording(tmp_path, call, converse_stream_call(1))
    changes: list[Change] = [
        Replace("delta.text", "drifted", event="contentBlockDelta", call=1),
        NewEvent("citationsDelta", {"citation": {"title": "t"}}, call=1),
    ]
    with DriftServer(path, changes) as server:
        unchanged = post(server, CONVERSE_STREAM)
        changed = post(server, CONVERSE_STREAM)

    recorded = b"".join(base64.b64decode(row["event"]["base64"]) for row in call[2:-1])
    assert unchanged.content == recorded
    assert unchanged.headers["content-type"] == "application/vnd.amazon.eventstream"
    assert unchanged.headers["transfer-encoding"] == "chunked"
    buffer = eventstream.EventStreamBuffer()
    buffer.add_data(changed.content)
    messages = [(m.headers[":event-type"], json.loads(m.payload)) for m in buffer]
    texts = [data["delta"]["text"] for kind, data in messages if kind == "contentBlockDelta"]
    assert texts == ["drifted", "drifted"]
    assert messages[-1] == ("citationsDelta", {"citation": {"title": "t"}})
    assert [kind for kind, _ in messages[:-1]] == [kind for kind, _ in converse_events({})]


def test_sse_fields_rest_and_bodies_are_written_as_recorded(tmp_path: Path) -> None:
    stream = [
        response(extra={"x-request-id": "req_1"}),
        {"type": "sse", "event": "start", "id": "7", "retry": 10, "data": {"a": "é"}},
        {"type": "sse", "data": "two\nlines", "raw": "ignored\n\n"},
        {"type": "sse_rest", "raw": ": bye\ndata: never dispatched"},
    ]
    calls = [
        http_call(0, "POST", "https://x.test/stream", {}, stream),
        http_call(
            1,
            "POST",
            "https://x.test/text",
            {},
            [response(200, "text/plain"), {"type": "http_body", "text": "plain ✓"}],
        ),
        http_call(
            2,
            "POST",
            "https://x.test/bytes",
            {},
            [response(200, "application/octet-stream"), {"type": "http_body", "base64": "AAEC"}],
        ),
        http_call(3, "POST", "https://x.test/empty", {}, [response(204, "text/plain")]),
    ]
    with DriftServer(recording(tmp_path, *calls)) as server:
        streamed = post(server, "/stream")
        text, raw, empty = post(server, "/text"), post(server, "/bytes"), post(server, "/empty")

    assert streamed.content == (
        'event: start\nid: 7\nretry: 10\ndata: {"a":"é"}\n\n'.encode()
        + b"data: two\ndata: lines\n\n"
        + b": bye\ndata: never dispatched"
    )
    assert streamed.headers["x-request-id"] == "req_1"
    assert streamed.headers["date"] == "Mon, 01 Dec 2026 08:00:00 GMT"
    assert "server" not in streamed.headers
    assert (text.content, text.headers["content-length"]) == ("plain ✓".encode(), "9")
    assert raw.content == b"\x00\x01\x02"
    assert (empty.status_code, empty.content, empty.headers["content-length"]) == (204, b"", "0")


def test_a_call_cut_short_is_served_then_cut(tmp_path: Path) -> None:
    with (
        DriftServer(recording(tmp_path, cut_stream_call(0))) as server,
        httpx.Client() as client,
        client.stream("POST", server.base_url + CHAT, json={}) as answer,
    ):
        received = b""
        with pytest.raises(httpx.RemoteProtocolError):
            for piece in answer.iter_bytes():
                received += piece

    assert received.count(b"data: ") == 2


def test_served_response_reads_the_rows_and_leaves_the_call_alone(tmp_path: Path) -> None:
    call = read_recording(recording(tmp_path, messages_stream_call(0))).calls[0]
    served = served_response(call)
    served.events[0].data["type"] = "changed"

    assert call.event_rows[1]["data"]["type"] == "message_start"
    assert served.kind == "sse"
    assert served.status == 200
    assert served.call_index == 0
    assert served.events[1] == ServedEvent(
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""},
        },
    )
    assert body_pieces(served)[-1] == b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


# -- matching requests to recorded calls -----------------------------------------------------


def test_requests_get_the_recorded_calls_of_their_method_and_path_in_order(
    tmp_path: Path,
) -> None:
    path = recording(
        tmp_path,
        provider_call(0),
        connect_error_call(1),
        chat_stream_call(2),
        other_api_call(3),
        chat_completion_call(4),
        messages_stream_call(5),
    )
    with DriftServer(read_recording(path)) as server:
        listing = httpx.get(server.base_url + "/v1/models?limit=5")
        message = events(server, MESSAGES)
        chat = datas(server, CHAT)  # the stream was recorded first: served first
        whole = post(server, CHAT)

    assert listing.json()["object"] == "list"
    assert message[0].event == "message_start"
    assert chat[-1] == "[DONE]"
    assert whole.json()["object"] == "chat.completion"
    assert server.served == [3, 5, 2, 4]
    assert next(r.path for r in server.received) == "/v1/models?limit=5"


def test_a_request_nothing_is_left_for_gets_a_404_that_says_so(tmp_path: Path) -> None:
    calls = read_recording(recording(tmp_path, chat_completion_call(0))).calls
    with DriftServer(calls) as server:
        first, second = post(server, CHAT), post(server, CHAT + "?x=1")
        elsewhere = httpx.get(server.base_url + "/v1/models")

    assert first.status_code == 200
    assert second.status_code == 404
    assert second.headers["content-type"] == "application/json"
    assert second.json() == {
        "error": {"message": "drift server: nothing recorded left for POST /v1/chat/completions"}
    }
    assert elsewhere.json()["error"]["message"].endswith("for GET /v1/models")
    assert server.served == [0]
    assert len(server.received) == 3


def test_paths_are_parsed_or_refused() -> None:
    assert parse_path("$") == ()
    assert parse_path("choices[*].delta.content") == ("choices", None, "delta", "content")
    assert parse_path("$.output[0].content") == ("output", 0, "content")
    assert parse_path("[*].id") == (None, "id")
    for bad in ("a..b", "a[x]", "a.", "a[*]b", ""):
        if bad == "":
            assert parse_path(bad) == ()
            continue
        with pytest.raises(ValueError, match="bad path"):
            parse_path(bad)
    with pytest.raises(ValueError, match="ending in a key"):
        Rename("choices[*]", "options")


def test_other_ids_and_texts_keep_their_form() -> None:
    assert other_id("chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT").startswith("chatcmpl-")
    assert other_id("msg_01XFDUDYJgAACzvnptvVoYEL") == other_id("msg_01XFDUDYJgAACzvnptvVoYEL")
    hexadecimal = other_id("resp_67ccd3a9da748190baa7f1570fe91ac6")
    assert hexadecimal != "resp_67ccd3a9da748190baa7f1570fe91ac6"
    assert all(char in "0123456789abcdef" for char in hexadecimal.removeprefix("resp_"))
    assert other_text("Hello, 42!") == "Uryyb, 97!"
    assert other_text("...") == "... (again)"
    assert other_text("") == ""
