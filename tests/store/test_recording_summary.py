"""``summarize_recording``: one read, no per-line parse, and the strict reader's answers."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import parse_recording, read_recording
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    UserMessage,
    complete_simple,
)
from openprogram.recording.format import encode_row
from openprogram.store import summary as summary_module
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import RecordingSummary, summarize_recording
from tests.support.recording_rows import (
    Row,
    call_rows,
    hand_formatted,
    header,
    text_events,
    write_recording,
    write_rows,
)
from tests.support.tool_sessions import record_tool_session, recording_into

CREATED = "2026-01-02T03:04:05Z"


@pytest.fixture
def no_strict_reader() -> Iterator[mock.Mock]:
    """Watch the summary's one parse of the bytes it read."""
    with mock.patch.object(summary_module, "parse_recording", wraps=parse_recording) as parse:
        yield parse


strict_reader = no_strict_reader


def two_models(path: Path) -> Path:
    rows: list[Row] = [header(created_at=CREATED)]
    rows += call_rows(0, text_events("a", "b", "c"), model_id="m1")
    rows += call_rows(1, text_events("d"), model_id="m2", api="other")
    rows += call_rows(2, text_events(), model_id="m1")
    return write_rows(path, rows)


def test_a_valid_recording(tmp_path: Path, no_strict_reader: mock.Mock) -> None:
    path = two_models(tmp_path / "demo.jsonl")
    summary = summarize_recording(path)
    assert summary == RecordingSummary(
        name="demo",
        path=path,
        size=path.stat().st_size,
        mtime=path.stat().st_mtime,
        created_at=CREATED,
        calls=3,
        events=7 + 5 + 4,
        models=["fake:m1", "other:m2"],
        format_version=2,
        valid=True,
        truncated=False,
        problem=None,
        transcript_hash=transcript_hash(read_recording(path)),
    )


def test_a_header_only_recording_has_no_calls(tmp_path: Path, no_strict_reader: mock.Mock) -> None:
    summary = summarize_recording(write_rows(tmp_path / "new.jsonl", [header()]))
    assert (summary.valid, summary.calls, summary.events, summary.models) == (True, 0, 0, [])


def test_crlf_line_ends_stay_on_the_fast_path(tmp_path: Path, no_strict_reader: mock.Mock) -> None:
    rows = [header(), *call_rows(0, text_events("x", "y"))]
    summary = summarize_recording(write_rows(tmp_path / "crlf.jsonl", rows, newline=b"\r\n"))
    assert (summary.valid, summary.calls, summary.events) == (True, 1, 6)


def test_a_call_without_call_end_is_truncated(tmp_path: Path, no_strict_reader: mock.Mock) -> None:
    rows = [
        header(),
        *call_rows(0, text_events("x")),
        *call_rows(1, [{"type": "start"}], outcome=None),
    ]
    summary = summarize_recording(write_rows(tmp_path / "t.jsonl", rows))
    assert (summary.valid, summary.truncated, summary.calls, summary.events) == (True, True, 2, 6)
    assert summary.problem is None


def test_a_line_cut_off_mid_write_is_truncated_not_invalid(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    rows = [header(), *call_rows(0, text_events("x"))]
    cut = encode_row({"type": "request", "call_index": 1, "model": {}})[:25]
    summary = summarize_recording(write_rows(tmp_path / "cut.jsonl", rows, tail=cut))
    assert (summary.valid, summary.truncated, summary.calls, summary.events) == (True, True, 1, 5)


def test_a_whole_last_row_without_its_newline_counts(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    rows = [header(), *call_rows(0, text_events("x"))]
    path = write_rows(tmp_path / "nonl.jsonl", rows[:-1], tail=encode_row(rows[-1])[:-1])
    summary = summarize_recording(path)
    assert (summary.valid, summary.truncated, summary.calls, summary.events) == (True, False, 1, 5)


def test_another_format_version_is_invalid_naming_both(tmp_path: Path) -> None:
    rows = [header(format_version=3, created_at=CREATED), *call_rows(0, text_events("x"))]
    summary = summarize_recording(write_rows(tmp_path / "v3.jsonl", rows))
    assert not summary.valid
    assert summary.problem is not None
    assert "format_version 3, but this openprogram reads format_version 1 to 2" in summary.problem
    assert summary.format_version == 3
    assert summary.created_at == CREATED


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "line 1: empty file: no header row"),
        (b"\n\n", "line 1: empty file: no header row"),
        (b"not json at all\n", "line 1: not valid JSON"),
        (b'{"type":"request","call_index":0}\n', "line 1: the first row must be the header"),
        (b"[1, 2]\n", "line 1: a row must be a JSON object"),
        (b"\x00\xff\xfe garbage", "line 1: empty file: no header row"),
    ],
)
def test_garbage_is_invalid_with_a_one_line_problem(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    summary = summarize_recording(path)
    assert not summary.valid
    assert summary.problem is not None
    assert summary.problem.startswith(problem)
    assert "\n" not in summary.problem
    assert (summary.calls, summary.events, summary.size) == (0, 0, len(content))


def test_a_bad_line_in_the_middle_is_found_by_the_strict_reader(
    tmp_path: Path, strict_reader: mock.Mock
) -> None:
    rows: list[Row | bytes] = [header(), *call_rows(0, text_events("x"))]
    rows.insert(3, b"oops, hand edited")
    summary = summarize_recording(write_rows(tmp_path / "bad.jsonl", rows))
    assert not summary.valid
    assert summary.problem is not None
    assert summary.problem.startswith("line 4: not valid JSON")


def test_a_wrong_event_count_is_found(tmp_path: Path) -> None:
    rows = [header(), *call_rows(0, text_events("x"))]
    rows[-1]["event_count"] = 3
    summary = summarize_recording(write_rows(tmp_path / "count.jsonl", rows))
    assert not summary.valid
    assert summary.problem == "line 8: event_count 3 but 5 event rows were recorded (call 0)"


def test_a_skipped_call_index_is_found(tmp_path: Path) -> None:
    rows = [header(), *call_rows(1, text_events("x"))]
    summary = summarize_recording(write_rows(tmp_path / "skip.jsonl", rows))
    assert not summary.valid
    assert "skips ahead" in (summary.problem or "")


def test_interleaved_calls_stay_on_the_fast_path(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    first, second = call_rows(0, text_events("a")), call_rows(1, text_events("b", "c"))
    rows = [
        header(),
        first[0],
        second[0],
        *[r for pair in zip(first[1:], second[1:], strict=False) for r in pair],
    ]
    rows += second[len(first) :]
    summary = summarize_recording(write_rows(tmp_path / "mixed.jsonl", rows))
    assert (summary.valid, summary.calls, summary.events, summary.truncated) == (True, 2, 11, False)


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ("duplicate call_end", "call_end row after the call's call_end"),
        ("call_end before its request", "call_end row for a call with no request row"),
        ("extra event", "event row after the call's call_end"),
    ],
)
def test_misplaced_rows_are_found_by_the_strict_reader(
    tmp_path: Path, edit: str, problem: str
) -> None:
    first, second = call_rows(0, text_events("a")), call_rows(1, text_events("b"))
    rows = [header(), *first, *second]
    if edit == "duplicate call_end":
        rows.insert(len(first) + 1, first[-1])
    elif edit == "call_end before its request":
        rows.insert(len(first) + 1, second[-1])
    else:
        rows.insert(len(first) + 1, {**first[1], "event_index": 5})
    summary = summarize_recording(write_rows(tmp_path / "moved.jsonl", rows))
    assert not summary.valid
    assert problem in (summary.problem or "")


def test_hand_formatted_rows_are_read_by_the_strict_reader(
    tmp_path: Path, strict_reader: mock.Mock
) -> None:
    rows: list[Row] = [header(created_at=CREATED)]
    rows += call_rows(0, text_events("a", "b"), model_id="m1")
    rows += call_rows(1, text_events("c"), model_id="m2", outcome=None)
    fast = summarize_recording(write_rows(tmp_path / "fast.jsonl", rows))
    hand = summarize_recording(write_rows(tmp_path / "hand.jsonl", hand_formatted(rows)))
    fields = ("calls", "events", "models", "truncated", "valid", "created_at", "format_version")
    assert {f: getattr(hand, f) for f in fields} == {f: getattr(fast, f) for f in fields}
    assert hand.calls == 2
    assert hand.truncated


def test_blank_lines_are_tolerated(tmp_path: Path) -> None:
    rows: list[Row | bytes] = [header(), b"", *call_rows(0, text_events("x")), b"   "]
    summary = summarize_recording(write_rows(tmp_path / "blank.jsonl", rows))
    assert (summary.valid, summary.calls, summary.events) == (True, 1, 5)


def test_a_context_key_inside_the_model_does_not_confuse_the_model_reader(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    headers = {"a": "b", "context": "x", "z": '","context":{'}
    rows = [header(), *call_rows(0, text_events("x"), model_id="m9", headers=headers)]
    summary = summarize_recording(write_rows(tmp_path / "ctx.jsonl", rows))
    assert summary.models == ["fake:m9"]


def test_text_that_looks_like_rows_does_not_count(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    sneaky = '\n{"type":"event","call_index":0}\n{"type":"request",'
    rows = [header(), *call_rows(0, text_events(sneaky, "}\n"), text=sneaky)]
    summary = summarize_recording(write_rows(tmp_path / "sneaky.jsonl", rows))
    assert (summary.valid, summary.calls, summary.events) == (True, 1, 6)


def test_a_missing_file_or_a_directory_is_invalid_not_an_error(tmp_path: Path) -> None:
    missing = summarize_recording(tmp_path / "missing.jsonl")
    assert (missing.valid, missing.problem) == (False, "no such recording")
    folder = tmp_path / "dir.jsonl"
    folder.mkdir()
    assert summarize_recording(folder).valid is False


def test_a_fifo_is_not_read(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    summary = summarize_recording(fifo)
    assert (summary.valid, summary.problem) == (False, "not a regular file (a FIFO)")


def test_to_json_is_plain_and_round_trips(tmp_path: Path) -> None:
    path = two_models(tmp_path / "demo.jsonl")
    summary = summarize_recording(path)
    data = summary.to_json()
    assert orjson.loads(orjson.dumps(data)) == data
    assert data["path"] == str(path)
    assert RecordingSummary.from_json(data, path) == summary


def test_from_json_refuses_a_wrong_field() -> None:
    data: dict[str, Any] = {
        "size": 1,
        "mtime": 1.0,
        "created_at": None,
        "calls": True,
        "events": 0,
        "models": [],
        "format_version": 1,
        "valid": True,
        "truncated": False,
        "problem": None,
    }
    with pytest.raises(ValueError, match="calls"):
        RecordingSummary.from_json(data, Path("/x.jsonl"))


def test_created_time_falls_back_to_mtime(tmp_path: Path) -> None:
    summary = summarize_recording(write_recording(tmp_path / "a.jsonl", created_at=CREATED))
    assert summary.created_time == 1767323045.0
    bad = summarize_recording(write_recording(tmp_path / "b.jsonl", created_at="yesterday"))
    assert bad.created_time == bad.mtime


async def test_an_echo_tool_session_agrees_with_the_reader(
    tmp_path: Path, no_strict_reader: mock.Mock
) -> None:
    path = tmp_path / "echo.jsonl"
    await record_tool_session(path)
    summary = summarize_recording(path)
    assert (summary.valid, summary.calls, summary.events, summary.truncated) == (True, 2, 10, False)
    assert summary.models == ["echo:echo"]


# --- properties ---------------------------------------------------------------------------


@st.composite
def recordings(draw: st.DrawFn) -> tuple[list[Row], bytes, bytes, bool]:
    """Rows of random calls, interleaved as concurrent writers may; line end; tail; cut-off."""
    calls: list[list[Row]] = []
    for index in range(draw(st.integers(0, 4))):
        events = text_events(*draw(st.lists(st.text(max_size=12), max_size=5)))
        outcome = draw(st.sampled_from(["complete", "error", "cancelled", "abandoned", None]))
        if outcome is None:
            events = events[: draw(st.integers(0, len(events)))]
        error = {"type": "ValueError", "message": draw(st.text(max_size=8))}
        headers = draw(
            st.none()
            | st.dictionaries(st.sampled_from(["context", "a", "x-y"]), st.text(max_size=8))
        )
        calls.append(
            call_rows(
                index,
                events,
                outcome=outcome,
                error=error if outcome == "error" else None,
                model_id=draw(st.sampled_from(["m1", "m2", "m3"])),
                api=draw(st.sampled_from(["fake", "other"])),
                headers=headers,
                text=draw(st.text(max_size=20)),
            )
        )
    rows: list[Row] = [header()]
    next_request = 0
    while any(calls):
        started = [i for i in range(next_request) if calls[i]]
        choices = started + ([next_request] if next_request < len(calls) else [])
        chosen = draw(st.sampled_from(choices))
        next_request += chosen == next_request
        rows.append(calls[chosen].pop(0))
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    ending = draw(st.sampled_from(["whole", "no-newline", "cut-off"]))
    if ending == "no-newline" and len(rows) > 1:
        return rows[:-1], newline, encode_row(rows[-1])[:-1], False
    if ending == "cut-off":
        extra = encode_row({"type": "event", "call_index": 0, "event_index": 99, "event": {}})
        return rows, newline, extra[: draw(st.integers(1, len(extra) - 2))], True
    return rows, newline, b"", False


def expected_models(rows: list[Row]) -> list[str]:
    models: list[str] = []
    for row in rows:
        if row["type"] == "request":
            label = f"{row['model']['api']}:{row['model']['id']}"
            if label not in models:
                models.append(label)
    return models


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sample=recordings())
def test_the_fast_summary_agrees_with_the_strict_reader(
    tmp_path: Path, sample: tuple[list[Row], bytes, bytes, bool]
) -> None:
    rows, newline, tail, cut_off = sample
    path = write_rows(tmp_path / "random.jsonl", rows, newline=newline, tail=tail)
    recording = read_recording(path, validate_events=False)
    summary = summarize_recording(path)
    assert summary.valid
    assert summary.calls == len(recording.calls)
    assert summary.events == recording.event_count
    assert summary.truncated == (bool(recording.truncated_calls) or cut_off)
    all_rows = rows if not tail or cut_off else [*rows, orjson.loads(tail)]
    assert summary.models == expected_models(all_rows)
    assert summary.size == len(path.read_bytes())


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sample=recordings(), data=st.data())
def test_a_damaged_file_never_raises_and_invalid_means_unreadable(
    tmp_path: Path, sample: tuple[list[Row], bytes, bytes, bool], data: st.DataObject
) -> None:
    rows, newline, tail, _ = sample
    content = bytearray(
        write_rows(tmp_path / "r.jsonl", rows, newline=newline, tail=tail).read_bytes()
    )
    for _ in range(data.draw(st.integers(1, 3))):
        position = data.draw(st.integers(0, max(len(content) - 1, 0)))
        content[position : position + 1] = data.draw(st.binary(max_size=3))
    path = tmp_path / "damaged.jsonl"
    path.write_bytes(bytes(content))
    summary = summarize_recording(path)
    if not summary.valid:
        with pytest.raises(RecordingFileError):
            read_recording(path, validate_events=False)
        assert summary.problem is not None
        assert "\n" not in summary.problem


@settings(max_examples=60)
@given(content=st.binary(max_size=200))
def test_random_bytes_never_raise(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "random.jsonl"
        path.write_bytes(content)
        summary = summarize_recording(path)
    assert summary.valid is False or summary.calls >= 0


@settings(max_examples=15, deadline=None)
@given(prompts=st.lists(st.text(max_size=30), max_size=4))
def test_echo_recordings_agree_with_the_strict_reader(prompts: list[str]) -> None:
    async def record(path: Path) -> None:
        with recording_into(path):
            for prompt in prompts:
                await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=prompt)]))

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "echo.jsonl"
        asyncio.run(record(path))
        if not prompts:
            return
        recording = read_recording(path, validate_events=False)
        summary = summarize_recording(path)
    assert (summary.valid, summary.truncated) == (True, False)
    assert summary.calls == len(recording.calls) == len(prompts)
    assert summary.events == recording.event_count
    assert summary.models == ["echo:echo"]
