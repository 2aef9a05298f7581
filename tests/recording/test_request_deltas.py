"""Requests stored against a base: what a request adds to an earlier one of its conversation,
rebuilt whole by the reader; concurrent conversations each against their own; bases the
reader refuses; old recordings; rewriting re-encodes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.agent.loop import run_agent
from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import RecordingProvider, provider_scope
from openprogram.providers.registry import register_api_provider
from openprogram.recording.call_digest import call_digest, deterministic_part
from openprogram.recording.format import new_header
from openprogram.recording.reader import read_recording as read_rows_only
from openprogram.recording.rewriting import call_rows_of, rewrite_recording
from openprogram.recording.writer import RecordingWriter, close_recording_writers
from openprogram.store.hashing import transcript_hash
from tests.support.http_call_rows import chat_request
from tests.support.recording_rows import Row, call_end, read_rows, write_rows
from tests.support.scripted_provider import FAKE_MODEL, ScriptedProvider, call, text
from tests.support.tool_sessions import lookup

Calls = 12


def record_session(path: Path, calls: int = Calls) -> None:
    """A tool loop of ``calls`` model calls (``lookup`` each time, then an answer)."""
    replies: list[Any] = [[call(f"t{n}", "lookup", q=str(n))] for n in range(calls - 1)]
    provider = ScriptedProvider(*replies, [text("done")])
    with provider_scope():
        register_api_provider("fake", RecordingProvider(provider, path))
        asyncio.run(run_agent(FAKE_MODEL, "go", tools=[lookup], max_iterations=calls))
    close_recording_writers()


def whole_header(path: Path) -> Path:
    """A new recording whose header does not announce request deltas (an older one's)."""
    header = new_header(path.stem)
    header["features"] = ["http"]
    return write_rows(path, [header])


def requests(path: Path) -> list[Row]:
    return [row for row in read_rows(path) if row["type"] == "request"]


def test_a_session_stores_what_each_request_adds_and_reads_back_whole(tmp_path: Path) -> None:
    compact, whole = tmp_path / "compact.jsonl", whole_header(tmp_path / "whole.jsonl")
    record_session(compact)
    record_session(whole)

    rows = requests(compact)
    assert "base" not in rows[0]
    for index, row in enumerate(rows[1:], start=1):
        kept = {"messages": 2 * index - 1, "tools": 1}
        assert row["base"] == {"call_index": index - 1, "context": kept}
        assert len(row["context"]["messages"]) == 2  # the reply and the tool result
        assert row["context"]["tools"] == []
    assert all("base" not in row for row in requests(whole))

    read_compact, read_whole = read_recording(compact), read_recording(whole)
    assert [deterministic_part(c.request) for c in read_compact.calls] == [
        deterministic_part(c.request) for c in read_whole.calls
    ]  # the messages' timestamps differ from run to run
    assert transcript_hash(read_compact) == transcript_hash(read_whole)
    assert compact.stat().st_size < whole.stat().st_size / 2


def test_doubling_the_calls_about_doubles_the_size(tmp_path: Path) -> None:
    record_session(tmp_path / "short.jsonl", 20)
    record_session(tmp_path / "long.jsonl", 40)
    ratio = (tmp_path / "long.jsonl").stat().st_size / (tmp_path / "short.jsonl").stat().st_size
    assert ratio < 2.3


def test_the_reader_shares_the_base_items(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    record_session(path, 3)
    first, second, third = (c.request["context"]["messages"] for c in read_recording(path).calls)
    assert second[0] is first[0]
    assert third[0] is first[0]
    assert third[1] is second[1]


def conversation(name: str, turns: int) -> Row:
    messages = [{"role": "user", "content": f"{name}:{turn}"} for turn in range(turns)]
    return {"model": {"id": "m"}, "context": {"messages": messages}, "options": {}}


def test_interleaved_conversations_each_name_their_own_base(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    order = [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("b", 3), ("a", 3)]
    for name, turns in order:
        writer.open_call(conversation(name, turns)).end_call("complete")
    writer.close()

    bases = [row.get("base") for row in requests(path)]
    assert bases == [
        None,
        None,
        {"call_index": 0, "context": {"messages": 1}},
        {"call_index": 1, "context": {"messages": 1}},
        {"call_index": 3, "context": {"messages": 2}},
        {"call_index": 2, "context": {"messages": 2}},
    ]
    rebuilt = [c.request for c in read_rows_only(path).calls]
    assert rebuilt == [conversation(name, turns) for name, turns in order]


def test_a_request_whose_history_changed_is_stored_whole(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open_call(conversation("a", 2)).end_call("complete")
    edited = conversation("a", 3)
    edited["context"]["messages"][0]["content"] = "a:0, shortened"
    edited_true = conversation("a", 3)
    edited_true["context"]["messages"][1]["content"] = True  # not the text "a:1"
    writer.open_call(edited).end_call("complete")
    writer.close()
    assert [row.get("base") for row in requests(path)] == [None, None]
    assert read_rows_only(path).calls[1].request == edited


def test_one_is_never_taken_for_true(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = {"model": {}, "context": {"messages": [{"n": 1}]}, "options": {}}
    second = {"model": {}, "context": {"messages": [{"n": True}, {"n": 2}]}, "options": {}}
    writer = RecordingWriter(path)
    writer.open_call(first).end_call("complete")
    writer.open_call(second).end_call("complete")
    writer.close()
    assert [row.get("base") for row in requests(path)] == [None, None]
    assert read_rows_only(path).calls[1].request == second


def test_a_base_cut_short_still_rebuilds_the_calls_after_it(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open_call(conversation("a", 1))  # the process died while it streamed
    writer.open_call(conversation("a", 2)).end_call("complete")
    writer.close()

    recording = read_rows_only(path)
    assert recording.truncated_calls == [0]
    assert requests(path)[1]["base"] == {"call_index": 0, "context": {"messages": 1}}
    assert recording.calls[1].request == conversation("a", 2)


def test_http_bodies_share_their_message_arrays(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = chat_request("one")
    second = chat_request("one")
    second["body"]["messages"] = [*first["body"]["messages"], {"role": "user", "content": "two"}]
    writer = RecordingWriter(path)
    writer.open_call(first).end_call("complete")
    writer.open_call(second).end_call("complete")
    writer.close()

    stored = requests(path)[1]
    assert stored["base"] == {"call_index": 0, "body": {"messages": 1}}
    assert stored["body"]["messages"] == [{"role": "user", "content": "two"}]
    rebuilt = read_rows_only(path).calls[1]
    assert {"boundary": "http", **rebuilt.request} == second


def test_an_older_recording_is_appended_to_whole_and_reads_as_before(tmp_path: Path) -> None:
    path = whole_header(tmp_path / "old.jsonl")
    writer = RecordingWriter(path)
    for turns in (1, 2, 3):
        writer.open_call(conversation("a", turns)).end_call("complete")
    writer.close()
    assert read_rows(path)[0]["features"] == ["http"]
    assert all("base" not in row for row in requests(path))
    assert [c.request for c in read_rows_only(path).calls] == [
        conversation("a", turns) for turns in (1, 2, 3)
    ]


def test_rewriting_a_whole_recording_stores_it_against_bases_with_the_same_hash(
    tmp_path: Path,
) -> None:
    path = whole_header(tmp_path / "old.jsonl")
    record_session(path)
    before = read_recording(path)
    size = path.stat().st_size

    rewrite_recording(path, before.header, before.calls)

    after = read_recording(path)
    assert "request_deltas" in after.header["features"]
    assert [c.request for c in after.calls] == [c.request for c in before.calls]
    assert transcript_hash(after) == transcript_hash(before)
    assert path.stat().st_size < size / 2
    ends = [row for row in read_rows(path) if row["type"] == "call_end"]
    assert [end["digest"]["call"] for end in ends] == [call_digest(c) for c in after.calls]


def test_rewriting_renumbers_bases_to_the_calls_kept(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    for name, turns in [("a", 1), ("b", 1), ("a", 2)]:
        writer.open_call(conversation(name, turns)).end_call("complete")
    writer.close()
    recording = read_rows_only(path)

    rewrite_recording(path, recording.header, [recording.calls[0], recording.calls[2]])

    assert requests(path)[1]["base"] == {"call_index": 0, "context": {"messages": 1}}
    assert [c.request for c in read_rows_only(path).calls] == [
        conversation("a", 1),
        conversation("a", 2),
    ]


# --- bases the reader refuses -----------------------------------------------------------


def two_calls(base: Any, second: Row | None = None) -> list[Row]:
    first = {"type": "request", "call_index": 0, **conversation("a", 1)}
    row = {"type": "request", "call_index": 1, **(second or conversation("a", 1)), "base": base}
    return [new_header(), first, call_end(0), row, call_end(1)]


@pytest.mark.parametrize(
    ("base", "problem"),
    [
        ({"call_index": 1, "context": {"messages": 1}}, "base call_index must be an earlier"),
        ({"call_index": -1, "context": {"messages": 1}}, "base call_index must be an earlier"),
        ({"call_index": 0, "context": {"messages": 2}}, "keeps 2 items of context.messages, but"),
        ({"call_index": 0, "context": {"messages": 0}}, "a whole number >= 1"),
        ({"call_index": 0, "context": {"tools": 1}}, "context.tools, which must be a list"),
        ({"call_index": 0, "context": {}}, "must name the lists kept"),
        ({"call_index": 0, "model": {"id": 1}}, "shares only context"),
        ([0], "base must be an object"),
    ],
)
def test_a_base_that_cannot_be_read_names_the_line_and_the_call(
    tmp_path: Path, base: Any, problem: str
) -> None:
    path = write_rows(tmp_path / "r.jsonl", two_calls(base))
    with pytest.raises(RecordingFileError) as info:
        read_rows_only(path)
    assert (info.value.line, info.value.call_index) == (4, 1)
    assert info.value.problem.startswith("request base")
    assert problem in info.value.problem


def test_a_base_of_another_boundary_is_refused(tmp_path: Path) -> None:
    second = {"type": "request", "call_index": 1, **chat_request("x")}
    second["base"] = {"call_index": 0, "body": {"messages": 1}}
    rows = [new_header(), *two_calls(None)[1:3], second, call_end(1)]
    with pytest.raises(RecordingFileError, match="base call 0 is a call of another boundary"):
        read_rows_only(write_rows(tmp_path / "r.jsonl", rows))


def test_a_kept_list_must_be_a_list_in_the_row(tmp_path: Path) -> None:
    second = conversation("a", 1)
    second["context"]["messages"] = "hi"
    path = write_rows(
        tmp_path / "r.jsonl", two_calls({"call_index": 0, "context": {"messages": 1}}, second)
    )
    with pytest.raises(RecordingFileError, match="must be a list in the row"):
        read_rows_only(path)


def test_rows_stored_whole_by_hand_still_read(tmp_path: Path) -> None:
    record_session(tmp_path / "r.jsonl", 3)
    recording = read_rows_only(tmp_path / "r.jsonl")
    rows: list[Row] = [recording.header]
    for recorded in recording.calls:
        rows.extend(call_rows_of(recorded, recorded.call_index))
    path = write_rows(tmp_path / "whole.jsonl", rows)
    assert all("base" not in row for row in requests(path))
    assert [c.request for c in read_rows_only(path).calls] == [c.request for c in recording.calls]
    assert orjson.dumps(transcript_hash(read_rows_only(path))) == orjson.dumps(
        transcript_hash(recording)
    )


def test_a_writer_repairing_a_dead_writers_cut_off_row_keeps_its_bases(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open_call(conversation("a", 1)).end_call("complete")
    with path.open("ab") as file:  # another process died halfway through its request row
        file.write(b'{"type":"request","call_index":1,"model":{"id":"m"},"cont')
    writer.open_call(conversation("a", 2)).end_call("complete")
    writer.close()

    assert requests(path)[1]["base"] == {"call_index": 0, "context": {"messages": 1}}
    recording = read_rows_only(path)
    assert [c.request for c in recording.calls] == [conversation("a", 1), conversation("a", 2)]
    assert recording.truncated_calls == []
