"""``first_difference`` and ``openprogram recordings diff``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.providers.recording import read_recording
from openprogram.recording.difference import MISSING
from openprogram.recordings.comparison import compare_recordings, first_difference
from openprogram.recordings.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.recording_rows import Row, call_rows, header, text_events, write_rows


def write(path: Path, calls: list[tuple[str, str]], *, outcome: str | None = "complete") -> Path:
    """A recording of ``calls``, each a user text and the reply to it; the last call ends with
    ``outcome`` (None: cut short)."""
    rows: list[Row] = [header()]
    for index, (text, reply) in enumerate(calls):
        end = outcome if index == len(calls) - 1 else "complete"
        rows += call_rows(index, text_events(reply), text=text, outcome=end)
    return write_rows(path, rows)


def test_a_request_difference_names_the_call_and_the_field(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi"), ("x", "echo:x")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:hi"), ("y", "echo:x")])
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.call_index, found.field_path, found.a, found.b) == (
        1,
        "context.messages[0].content",
        "x",
        "y",
    )
    assert found.event_index is None


def test_an_event_difference_names_the_event_and_gives_both_events(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:ho")])
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.call_index, found.event_index, found.field_path) == (0, 2, "event.delta")
    assert found.a == {"type": "text_delta", "content_index": 0, "delta": "echo:hi"}
    assert found.b["delta"] == "echo:ho"


def test_more_calls_on_one_side(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:hi"), ("more", "echo:more")])
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.call_index, found.field_path, found.a) == (1, "call_index", MISSING)
    comparison = compare_recordings(read_recording(a), read_recording(b))
    assert (comparison.calls_a, comparison.calls_b) == (1, 2)


def test_a_truncated_call_differs_from_a_complete_one(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:hi")], outcome=None)
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.field_path, found.a, found.b) == ("outcome", "complete", None)


def test_timestamps_do_not_count(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    text = a.read_text().replace('"timestamp":1', '"timestamp":12345')
    b = tmp_path / "b.jsonl"
    b.write_text(text)
    assert first_difference(read_recording(a), read_recording(b)) is None


TEXTS = st.sampled_from(["hi", "ho", "echo:hi", "x"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(TEXTS, TEXTS), max_size=3), st.lists(st.tuples(TEXTS, TEXTS), max_size=3))
def test_same_hash_exactly_when_no_difference(
    tmp_path_factory: Any, first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    folder = tmp_path_factory.mktemp("diff")
    a = read_recording(write(folder / "a.jsonl", first))
    b = read_recording(write(folder / "b.jsonl", second))
    assert (first_difference(a, b) is None) == (transcript_hash(a) == transcript_hash(b))
    assert (first_difference(a, b) is None) == (first == second)


def test_diff_command_exit_codes_and_output(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    same = write(tmp_path / "same.jsonl", [("hi", "echo:hi")])
    other = write(tmp_path / "other.jsonl", [("hi", "echo:ho")])

    result = run("diff", str(a), str(same))
    assert result.exit_code == 0, result.output
    assert "the recordings are the same" in result.stdout
    assert "calls: A 1, B 1" in result.stdout

    result = run("diff", str(a), str(other))
    assert result.exit_code == 1
    assert "first difference at call 0, event 2 (text_delta), field delta:" in result.stdout
    assert "'echo:hi'" in result.stdout
    assert transcript_hash(read_recording(a)) in result.stdout

    result = run("diff", str(a), str(other), "--json")
    data = json.loads(result.stdout)
    assert data["same"] is False
    assert data["difference"]["event_index"] == 2
    assert data["hash"]["a"] == transcript_hash(read_recording(a))


def test_diff_of_an_unreadable_recording_exits_2(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type":"header","format_version":1}\n{oops\n{"type":"x"}\n')
    result = run("diff", str(a), str(broken))
    assert result.exit_code == 2
    assert "broken.jsonl, line 2" in result.stderr
    result = run("diff", str(a), str(tmp_path / "gone.jsonl"))
    assert result.exit_code == 2
    result = run("diff", "../bad", str(a))
    assert result.exit_code == 2
