"""The strict reader reads HTTP calls beside provider calls, and refuses every malformed HTTP
row with one line naming the file, the line and the call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording as read_with_provider_events
from openprogram.recording.reader import read_recording
from tests.support.http_call_rows import chat_request, provider_call, sse_call, write_calls

Row = dict[str, Any]


def test_one_recording_holds_both_boundaries_in_one_call_sequence(tmp_path: Path) -> None:
    body_call = [
        *sse_call(2)[:2],
        {
            "type": "event",
            "call_index": 2,
            "event_index": 1,
            "event": {"type": "http_body", "body": {"id": "x", "choices": []}},
        },
        {"type": "call_end", "call_index": 2, "event_count": 2, "outcome": "complete"},
    ]
    path = write_calls(tmp_path / "mixed.jsonl", provider_call(0), sse_call(1), body_call)

    recording = read_with_provider_events(path)

    assert [call.boundary for call in recording.calls] == ["provider", "http", "http"]
    provider, streamed, whole = recording.calls
    assert set(provider.request) == {"model", "context", "options"}
    assert len(provider.events) == 4  # decoded as the provider's event models
    assert streamed.request == {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": {"content-type": "application/json"},
        "body": chat_request()["body"],
    }
    assert streamed.events == []  # only provider events are decoded into models
    assert [row["type"] for row in streamed.event_rows] == ["http_response", "sse", "sse", "sse"]
    assert streamed.event_rows[-1] == {"type": "sse", "data": "[DONE]"}
    assert whole.event_rows[1] == {"type": "http_body", "body": {"id": "x", "choices": []}}
    assert recording.boundaries == {"provider", "http"}


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({}, {}),
        ({"body_text": "a=1&b=2"}, {"body_text": "a=1&b=2"}),
        ({"body_base64": "AAEC"}, {"body_base64": "AAEC"}),
        ({"body": None}, {"body": None}),
    ],
)
def test_a_request_holds_at_most_one_body_form(tmp_path: Path, body: Row, expected: Row) -> None:
    request = {k: v for k, v in chat_request().items() if k != "body"} | body
    path = write_calls(tmp_path / "r.jsonl", sse_call(0, request))
    [call] = read_recording(path).calls
    assert {k: v for k, v in call.request.items() if k.startswith("body")} == expected


def events_call(*events: Row, request: Row | None = None) -> list[Row]:
    rows: list[Row] = [{"type": "request", "call_index": 0, **(request or chat_request())}]
    rows += [
        {"type": "event", "call_index": 0, "event_index": n, "event": event}
        for n, event in enumerate(events)
    ]
    return rows


OK_RESPONSE: Row = {"type": "http_response", "status": 200, "headers": {}}


def test_sse_events_keep_their_fields_and_retry(tmp_path: Path) -> None:
    sse: Row = {"type": "sse", "event": "message_start", "data": {"a": 1}, "id": "7", "retry": 3}
    path = write_calls(tmp_path / "r.jsonl", events_call(OK_RESPONSE, sse))
    [call] = read_recording(path).calls
    assert call.event_rows == [OK_RESPONSE, sse]
    assert call.truncated  # no call_end: cut short, still read


REQUEST_PROBLEMS = [
    ({"method": ""}, "HTTP request field 'method' must be a non-empty string, found ''"),
    ({"method": 5}, "HTTP request field 'method' must be a non-empty string, found 5"),
    ({"url": None}, "HTTP request field 'url' must be a string, found None"),
    ({"headers": []}, "HTTP request field 'headers' must be an object, found []"),
    (
        {"headers": {"content-type": 1}},
        "HTTP request header 'content-type' must be a string, found 1",
    ),
    ({"body_text": "x"}, "an HTTP request holds at most one body form, found body and body_text"),
    ({"boundary": "grpc"}, "request of unknown boundary 'grpc'"),
]


@pytest.mark.parametrize(("fields", "problem"), REQUEST_PROBLEMS)
def test_a_malformed_request_row_is_refused_naming_line_and_call(
    tmp_path: Path, fields: Row, problem: str
) -> None:
    path = write_calls(tmp_path / "r.jsonl", events_call(request={**chat_request(), **fields}))
    with pytest.raises(RecordingFileError) as caught:
        read_recording(path)
    error = caught.value
    assert (error.line, error.call_index, error.problem) == (2, 0, problem)
    assert "\n" not in str(error)


def test_a_body_form_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    request = {k: v for k, v in chat_request().items() if k != "body"}
    for fields, problem in [
        ({"body_text": 3}, "HTTP request field 'body_text' must be a string, found 3"),
        ({"body_base64": "not base64!"}, "HTTP request field 'body_base64' must be base64 text"),
    ]:
        path = write_calls(tmp_path / "r.jsonl", events_call(request={**request, **fields}))
        with pytest.raises(RecordingFileError) as caught:
            read_recording(path)
        assert caught.value.problem == problem


EVENT_PROBLEMS: list[tuple[list[Row], str]] = [
    (
        [{"type": "http_response", "status": 700, "headers": {}}],
        "http_response event field status must be a whole number from 100 to 599, found 700",
    ),
    (
        [{"type": "http_response", "status": True, "headers": {}}],
        "http_response event field status must be a whole number from 100 to 599, found True",
    ),
    (
        [{"type": "http_response", "status": 200, "headers": {"x": ["a"]}}],
        "http_response event header 'x' must be a string, found ['a']",
    ),
    (
        [{"type": "http_response", "status": 200}],
        "http_response event field 'headers' must be an object, found None",
    ),
    ([{"type": "sse", "data": 1}], "sse event before the call's http_response event"),
    (
        [OK_RESPONSE, OK_RESPONSE],
        "http_response must be the first event of an HTTP call, and the only one",
    ),
    (
        [OK_RESPONSE, {"type": "sse"}],
        "sse event field data is required (an event without data is never dispatched)",
    ),
    (
        [OK_RESPONSE, {"type": "sse", "data": "x", "event": 3}],
        "sse event field event must be a string or null, found 3",
    ),
    (
        [OK_RESPONSE, {"type": "sse", "data": "x", "id": {}}],
        "sse event field id must be a string or null, found {}",
    ),
    (
        [OK_RESPONSE, {"type": "sse", "data": "x", "retry": -1}],
        "sse event field retry must be a whole number >= 0, found -1",
    ),
    (
        [OK_RESPONSE, {"type": "http_body", "text": "a", "body": {}}],
        "an http_body event holds exactly one of body, text, base64; found body and text",
    ),
    (
        [OK_RESPONSE, {"type": "http_body"}],
        "an http_body event holds exactly one of body, text, base64; found none",
    ),
    (
        [OK_RESPONSE, {"type": "http_body", "text": 1}],
        "http_body event field text must be a string, found 1",
    ),
    (
        [OK_RESPONSE, {"type": "http_body", "base64": "%%"}],
        "http_body event field base64 must be base64 text",
    ),
    (
        [OK_RESPONSE, {"type": "http_body", "text": "a"}, {"type": "sse", "data": "x"}],
        "sse event after the call's http_body event, which holds the whole body",
    ),
    (
        [OK_RESPONSE, {"type": "sse", "data": "x"}, {"type": "http_body", "text": "a"}],
        "http_body event after sse events: a body is either a stream or whole",
    ),
    ([OK_RESPONSE, {"type": "text_delta"}], "text_delta event in an HTTP call"),
    ([OK_RESPONSE, {"type": "tape"}], "unknown event type 'tape'"),
    ([OK_RESPONSE, {"type": ["sse"]}], "unknown event type ['sse']"),
]


@pytest.mark.parametrize(("events", "problem"), EVENT_PROBLEMS)
def test_a_malformed_http_event_is_refused_naming_line_and_call(
    tmp_path: Path, events: list[Row], problem: str
) -> None:
    path = write_calls(tmp_path / "r.jsonl", events_call(*events))
    with pytest.raises(RecordingFileError) as caught:
        read_recording(path)
    error = caught.value
    assert (error.line, error.call_index, error.problem) == (2 + len(events), 0, problem)
    assert str(error).count("\n") == 0


def test_an_http_event_in_a_provider_call_is_refused(tmp_path: Path) -> None:
    rows = provider_call(0)
    rows[1]["event"] = {"type": "sse", "data": "x"}
    with pytest.raises(RecordingFileError) as caught:
        read_recording(write_calls(tmp_path / "r.jsonl", rows))
    assert (caught.value.line, caught.value.problem) == (3, "sse event in a provider call")


def test_an_unknown_boundary_says_to_upgrade(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", events_call(request={"boundary": "grpc"}))
    with pytest.raises(RecordingFileError, match="upgrade openprogram"):
        read_recording(path)


def test_provider_event_validation_still_names_the_field(tmp_path: Path) -> None:
    rows = provider_call(0)
    rows[3]["event"] = {"type": "text_delta", "content_index": "zero", "delta": "x"}
    path = write_calls(tmp_path / "r.jsonl", rows)
    read_recording(path)  # the core alone checks rows, not the provider's models
    with pytest.raises(RecordingFileError) as caught:
        read_with_provider_events(path)
    assert caught.value.line == 5
    assert caught.value.problem.startswith("text_delta event field content_index: ")
