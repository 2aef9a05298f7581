"""The transcript hash, ``diff`` and the summary cover HTTP calls: the fields a server sets
anew on every run are left out, everything else counts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from openprogram.cli.app import app
from openprogram.recording.reader import read_recording
from openprogram.store.comparison import first_difference
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import summarize_recording
from tests.support.http_call_rows import (
    chat_request,
    provider_call,
    response_headers,
    sse_call,
    write_calls,
)

runner = CliRunner()
Row = dict[str, Any]


def anthropic_call(index: int, *, run: str) -> list[Row]:
    """A streamed Anthropic Messages call whose per-run ids belong to run ``run``."""
    request = {
        "boundary": "http",
        "method": "POST",
        "url": "https://api.anthropic.com/v1/messages",
        "headers": {"anthropic-version": "2023-06-01", "content-type": "application/json"},
        "body": {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [], "stream": True},
    }
    events: list[Row] = [
        {
            "type": "http_response",
            "status": 200,
            "headers": {
                "content-type": "text/event-stream",
                "request-id": f"req_{run}",
                "anthropic-ratelimit-tokens-remaining": "100" if run == "a" else "90",
                "anthropic-ratelimit-tokens-reset": f"2026-12-01T08:00:0{len(run)}Z",
                "retry-after": "3" if run == "a" else "5",
            },
        },
        {
            "type": "sse",
            "event": "message_start",
            "data": {"type": "message_start", "message": {"id": f"msg_{run}", "content": []}},
        },
        {
            "type": "sse",
            "event": "content_block_start",
            "data": {"index": 0, "content_block": {"type": "tool_use", "id": "toolu_1"}},
        },
    ]
    rows: list[Row] = [{"type": "request", "call_index": index, **request}]
    rows += [
        {"type": "event", "call_index": index, "event_index": n, "event": event}
        for n, event in enumerate(events)
    ]
    rows.append({"type": "call_end", "call_index": index, "event_count": 3, "outcome": "complete"})
    return rows


def responses_body_call(index: int, *, run: str) -> list[Row]:
    """A non-streamed OpenAI Responses call whose body carries run ``run``'s identity."""
    request = {**chat_request(), "url": "https://api.openai.com/v1/responses"}
    body = {
        "id": f"resp_{run}",
        "object": "response",
        "created_at": 1700000000 if run == "a" else 1700000500,
        "completed_at": 1700000001 if run == "a" else 1700000502,
        "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_1"}],
    }
    events: list[Row] = [
        {"type": "http_response", "status": 200, "headers": response_headers(run=run)},
        {"type": "http_body", "body": body},
    ]
    rows: list[Row] = [{"type": "request", "call_index": index, **request}]
    rows += [
        {"type": "event", "call_index": index, "event_index": n, "event": event}
        for n, event in enumerate(events)
    ]
    rows.append({"type": "call_end", "call_index": index, "event_count": 2, "outcome": "complete"})
    return rows


def anthropic_error_call(index: int, *, run: str) -> list[Row]:
    """An Anthropic 529 whose error body names run ``run``'s request."""
    body = {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
        "request_id": f"req_{run}",
    }
    events: list[Row] = [
        {"type": "http_response", "status": 529, "headers": response_headers(run=run)},
        {"type": "http_body", "body": body},
    ]
    rows: list[Row] = [{"type": "request", "call_index": index, **chat_request()}]
    rows += [
        {"type": "event", "call_index": index, "event_index": n, "event": event}
        for n, event in enumerate(events)
    ]
    rows.append({"type": "call_end", "call_index": index, "event_count": 2, "outcome": "complete"})
    return rows


def session(folder: Path, name: str, *, run: str) -> Path:
    """The same SDK session, as recorded on run ``run``."""
    return write_calls(
        folder / f"{name}.jsonl",
        provider_call(0),
        sse_call(1, run=run),
        anthropic_call(2, run=run),
        responses_body_call(3, run=run),
        anthropic_error_call(4, run=run),
    )


def test_two_runs_of_one_session_hash_alike_and_diff_finds_nothing(tmp_path: Path) -> None:
    a, b = session(tmp_path, "a", run="a"), session(tmp_path, "b", run="b")
    assert a.read_bytes() != b.read_bytes()

    assert transcript_hash(read_recording(a)) == transcript_hash(read_recording(b))
    assert first_difference(read_recording(a), read_recording(b)) is None
    result = runner.invoke(app, ["recordings", "diff", str(a), str(b)])
    assert result.exit_code == 0, result.output
    assert "the recordings are the same" in result.stdout


def differing(path: Path, line: int, change: Any) -> Path:
    """A copy of the recording at ``path`` with row ``line`` (0-based) changed by ``change``."""
    import orjson

    rows = [orjson.loads(raw) for raw in path.read_bytes().splitlines()]
    change(rows[line])
    other = path.with_name(f"changed-{line}.jsonl")
    other.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return other


def test_a_changed_request_body_is_a_difference(tmp_path: Path) -> None:
    a = session(tmp_path, "a", run="a")
    first_http_request = 1 + len(provider_call(0))

    def change(row: Row) -> None:
        row["body"]["messages"][0]["content"] = "bye"

    b = differing(a, first_http_request, change)

    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(b))
    result = runner.invoke(app, ["recordings", "diff", str(a), str(b)])
    assert result.exit_code == 1
    assert "difference at call 1, field body.messages[0].content:" in result.stdout
    assert "A 'hi', B 'bye'" in result.stdout


def test_a_changed_response_field_is_a_difference(tmp_path: Path) -> None:
    a = session(tmp_path, "a", run="a")
    first_chunk = 1 + len(provider_call(0)) + 2

    def change(row: Row) -> None:
        row["event"]["data"]["choices"][0]["delta"]["content"] = "Bye"

    b = differing(a, first_chunk, change)
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.call_index, found.event_index, found.field_path) == (
        1,
        1,
        "event.data.choices[0].delta.content",
    )
    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(b))


def test_a_compared_header_and_a_tool_call_id_that_links_nothing(tmp_path: Path) -> None:
    a = session(tmp_path, "a", run="a")
    response = 1 + len(provider_call(0)) + 1
    tool_block = 1 + len(provider_call(0)) + len(sse_call(1)) + 3

    def content_type(row: Row) -> None:
        row["event"]["headers"]["content-type"] = "application/json"

    def tool_id(row: Row) -> None:
        row["event"]["data"]["content_block"]["id"] = "toolu_2"

    found = first_difference(
        read_recording(a), read_recording(differing(a, response, content_type))
    )
    assert found is not None
    assert found.field_path == "event.headers.content-type"
    # A fresh tool-call id no later request sends back is a fresh name for the same thing.
    renamed = differing(a, tool_block, tool_id)
    assert first_difference(read_recording(a), read_recording(renamed)) is None
    assert transcript_hash(read_recording(a)) == transcript_hash(read_recording(renamed))


def test_a_call_at_another_boundary_is_a_difference(tmp_path: Path) -> None:
    a = write_calls(tmp_path / "a.jsonl", provider_call(0))
    b = write_calls(tmp_path / "b.jsonl", sse_call(0))
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.field_path, found.recorded, found.incoming) == ("boundary", "provider", "http")
    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(b))


def without_model(url: str) -> Row:
    """A request to ``url`` whose body names no model (the URL does)."""
    request = {**chat_request(), "url": url}
    request["body"] = {"contents": [{"parts": [{"text": "hi"}]}]}
    return request


def test_the_summary_names_each_http_call_by_host_and_model(tmp_path: Path) -> None:
    files_call = {**chat_request(), "method": "GET", "url": "https://api.openai.com/v1/files"}
    del files_call["body"]
    gemini = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
    bedrock = "https://bedrock-runtime.us-east-1.amazonaws.com/model/anthropic.claude-v2%3A1"
    path = write_calls(
        tmp_path / "mixed.jsonl",
        provider_call(0),
        sse_call(1),
        anthropic_call(2, run="a"),
        sse_call(3, files_call),
        sse_call(4, without_model(f"{gemini}:streamGenerateContent?alt=sse")),
        sse_call(5, without_model(f"{bedrock}/converse-stream")),
    )
    summary = summarize_recording(path)
    assert summary.valid, summary.problem
    assert summary.models == [
        "echo:echo",
        "api.openai.com:gpt-4o-mini",
        "api.anthropic.com:claude-sonnet-4-5",
        "GET api.openai.com/v1/files",
        "generativelanguage.googleapis.com:gemini-2.5-flash",
        "bedrock-runtime.us-east-1.amazonaws.com:anthropic.claude-v2:1",
    ]
    assert summary.transcript_hash == transcript_hash(read_recording(path))


PER_RUN = st.sampled_from(["a", "b"])
CONTENT = st.sampled_from(["hi", "ho"])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(PER_RUN, CONTENT), min_size=1, max_size=3),
    st.lists(st.tuples(PER_RUN, CONTENT), min_size=1, max_size=3),
)
def test_same_hash_exactly_when_diff_finds_no_difference(
    tmp_path_factory: Any, first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    folder = tmp_path_factory.mktemp("http")

    def recording(name: str, calls: list[tuple[str, str]]) -> Path:
        rows = [
            sse_call(index, chat_request(content), texts=(content,), run=run)
            for index, (run, content) in enumerate(calls)
        ]
        return write_calls(folder / f"{name}.jsonl", *copy.deepcopy(rows))

    a = read_recording(recording("a", first))
    b = read_recording(recording("b", second))
    # Calls pair by content, in any order: the same calls interleaved otherwise are the same.
    same_content = sorted(content for _, content in first) == sorted(
        content for _, content in second
    )
    assert (first_difference(a, b) is None) == same_content
    assert (transcript_hash(a) == transcript_hash(b)) == same_content
