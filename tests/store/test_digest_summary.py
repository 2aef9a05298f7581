"""``list`` through the digests the writer stores: trusted only when each call's rows hash to
what was written; missing, edited or interleaved rows fall back to the strict reader, so the
summary is the same either way."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

import openprogram.store.summary as summary_module
from openprogram.recording.reader import read_recording
from openprogram.recording.rewriting import rewrite_recording
from openprogram.recording.writer import RecordingWriter
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import RecordingSummary, summarize_recording, summary_from_digests
from tests.recording.test_request_deltas import conversation, record_session
from tests.support.http_call_rows import provider_call, sse_call, write_calls
from tests.support.recording_rows import Row


def parsed_summary(path: Path, monkeypatch: pytest.MonkeyPatch) -> RecordingSummary:
    """The summary the strict reader gives (the digests not consulted)."""
    with monkeypatch.context() as patch:
        patch.setattr(summary_module, "summary_from_digests", lambda path, data: None)
        return summarize_recording(path)


def test_a_recorded_session_is_summarized_from_its_digests_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    record_session(path)
    assert summary_from_digests(path, path.read_bytes()) is not None
    quick = summarize_recording(path)
    assert quick == parsed_summary(path, monkeypatch)
    assert quick.transcript_hash == transcript_hash(read_recording(path))
    assert quick.valid


def flip_digest(text: str) -> str:
    return ("1" if text[0] == "0" else "0") + text[1:]


EDITS = {
    "an event's text": ("event", lambda row: row["event"].update(delta="changed")),
    "an outcome": ("call_end", lambda row: row.update(outcome="abandoned")),
    "an event count": ("call_end", lambda row: row.update(event_count=row["event_count"] - 1)),
    "a call digest": (
        "call_end",
        lambda row: row["digest"].update(call=flip_digest(row["digest"]["call"])),
    ),
}


@pytest.mark.parametrize("edit", EDITS.values(), ids=EDITS.keys())
def test_rows_changed_after_writing_are_parsed_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: tuple[str, Callable[[Row], None]]
) -> None:
    path = tmp_path / "s.jsonl"
    record_session(path, 6)
    kind, change = edit
    lines = path.read_bytes().splitlines(keepends=True)
    rows = [orjson.loads(line) for line in lines]
    number = next(n for n, row in enumerate(rows) if n > 8 and row["type"] == kind)
    change(rows[number])
    lines[number] = orjson.dumps(rows[number]) + b"\n"
    path.write_bytes(b"".join(lines))

    assert summary_from_digests(path, path.read_bytes()) is None
    summary = summarize_recording(path)
    assert summary == parsed_summary(path, monkeypatch)
    if summary.valid:  # a changed count makes the file one the reader refuses
        assert summary.transcript_hash == transcript_hash(read_recording(path))


def test_calls_without_digests_are_parsed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_calls(tmp_path / "hand.jsonl", provider_call(0), sse_call(1))
    assert summary_from_digests(path, path.read_bytes()) is None
    assert summarize_recording(path).transcript_hash == transcript_hash(read_recording(path))


def test_interleaved_calls_are_parsed_and_hash_alike(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    first, second = writer.open_call(conversation("a", 1)), writer.open_call(conversation("b", 1))
    first.write_event({"type": "text_delta", "content_index": 0, "delta": "x"})
    second.end_call("complete")
    first.end_call("complete")
    writer.close()
    assert summary_from_digests(path, path.read_bytes()) is None
    assert summarize_recording(path).transcript_hash == transcript_hash(read_recording(path))


def test_a_truncated_call_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    writer.open_call(conversation("a", 1)).end_call("complete")
    writer.open_call(conversation("a", 2))
    writer.close()
    assert summary_from_digests(path, path.read_bytes()) is None
    assert summarize_recording(path).truncated


def test_a_rewritten_recording_is_summarized_from_its_new_digests(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "hand.jsonl", provider_call(0), sse_call(1), provider_call(2))
    recording = read_recording(path)
    rewrite_recording(path, recording.header, [recording.calls[2], recording.calls[1]])
    digested = summary_from_digests(path, path.read_bytes())
    assert digested is not None
    assert summarize_recording(path).transcript_hash == transcript_hash(read_recording(path))


def test_the_stored_digest_is_the_digest_of_the_call_read(tmp_path: Path) -> None:
    from openprogram.recording.call_digest import call_digest

    path = tmp_path / "s.jsonl"
    record_session(path, 4)
    ends = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    stored = [row["digest"]["call"] for row in ends if row["type"] == "call_end"]
    assert stored == [call_digest(call) for call in read_recording(path).calls]


def test_tape_entries_between_calls_are_hashed_as_the_reader_hashes_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool-using session records tape rows between its calls: ``list`` still reads it
    through the digests, and its hash includes the entries exactly as the reader's does."""
    import asyncio

    import openprogram
    from openprogram.agent.loop import run_agent
    from openprogram.providers import ECHO_MODEL
    from tests.support.tool_sessions import PROMPT, lookup

    path = tmp_path / "tools.jsonl"
    with openprogram.record_replay(path):
        asyncio.run(run_agent(ECHO_MODEL, PROMPT, tools=[lookup]))
    recording = read_recording(path)
    assert [entry.tape for entry in recording.tapes] == ["tool:lookup"]
    assert summary_from_digests(path, path.read_bytes()) is not None
    quick = summarize_recording(path)
    assert quick == parsed_summary(path, monkeypatch)
    assert quick.transcript_hash == transcript_hash(recording)
    assert quick.tape_entries == 1  # counted on both paths (the summaries are equal)

    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    tape = next(row for row in rows if row["type"] == "tape")
    tape["result"]["text"] = "another result"  # the entry's digest changes, nothing vouches
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    changed = summarize_recording(path)
    assert changed == parsed_summary(path, monkeypatch)
    assert changed.transcript_hash == transcript_hash(read_recording(path))
    assert changed.transcript_hash != quick.transcript_hash
