"""Tapes in the transcript hash and ``diff``: each tape a multiset of (arguments, result), the
clock's and random draws' results left out; equal hashes exactly when diff finds nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.provider_boundary.codec import read_recording
from openprogram.store.comparison import compare_recordings
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.recording_rows import Row, call_rows, header, text_events, write_rows


def tape(name: str, args: dict[str, Any], result: Any = None, **flags: Any) -> Row:
    row: Row = {"type": "tape", "tape": name, "args": args}
    if "error" in flags:
        row["error"] = flags.pop("error")
    else:
        row["result"] = result
    return {**row, **flags}


def recording(path: Path, *tapes: Row, calls: int = 1) -> Any:
    rows: list[Row] = [header()]
    for index in range(calls):
        rows += call_rows(index, text_events("echo:hi"), text="hi")
    return read_recording(write_rows(path, [*rows, *tapes]))


def test_the_clock_read_at_another_time_hashes_alike_and_diff_finds_nothing(
    tmp_path: Path,
) -> None:
    clock = {"nondeterministic": True}
    a = recording(tmp_path / "a.jsonl", tape("openprogram.now", {}, 1767225600.5, **clock))
    b = recording(tmp_path / "b.jsonl", tape("openprogram.now", {}, 1767312000.5, **clock))
    assert compare_recordings(a, b).same
    assert transcript_hash(a) == transcript_hash(b)


def test_a_changed_result_is_reported_at_the_entry_and_field(tmp_path: Path) -> None:
    a = recording(tmp_path / "a.jsonl", tape("weather", {"city": "Paris"}, {"temp": 21}))
    b = recording(tmp_path / "b.jsonl", tape("weather", {"city": "Paris"}, {"temp": 23}))
    comparison = compare_recordings(a, b)
    assert transcript_hash(a) != transcript_hash(b)
    (found,) = comparison.differences
    assert found.kind == "tape"
    assert (found.a_call_index, found.b_call_index) == (0, 0)
    assert found.to_json()["tape"] == "weather"
    from openprogram.recording.report import format_report

    assert format_report(found.difference) == (
        "difference at tape weather[0], field result.temp:\nA 21, B 23"
    )


def test_entries_in_another_order_are_the_same_and_an_extra_one_is_only_in_b(
    tmp_path: Path,
) -> None:
    paris, lyon = tape("weather", {"city": "Paris"}, 21), tape("weather", {"city": "Lyon"}, 19)
    a = recording(tmp_path / "a.jsonl", paris, lyon)
    b = recording(tmp_path / "b.jsonl", lyon, paris)
    assert compare_recordings(a, b).same
    c = recording(tmp_path / "c.jsonl", lyon, paris, tape("weather", {"city": "Nice"}, 24))
    (found,) = compare_recordings(a, c).differences
    assert (found.a_call_index, found.b_call_index) == (None, 2)
    assert found.difference.detail == (
        "only in B: tape weather[2]; A has no unpaired entry of tape weather left to compare it "
        "with"
    )


def test_diff_command_names_the_tape_entry(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    recording(a, tape("weather", {"city": "Paris"}, 21))
    recording(b, tape("weather", {"city": "Lyon"}, 21))
    result = run("diff", str(a), str(b))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:3] == [
        "✘ the recordings differ: 1 tape entry differs",
        "difference at tape weather[0], field args.city:",
        "A 'Paris', B 'Lyon'",
    ]
    assert "tape entries: A 1, B 1" in result.stdout


NAMES = st.sampled_from(["weather", "openprogram.now"])
ARGS = st.sampled_from([{}, {"city": "Paris"}, {"city": None}, {"city": "Lyon"}])
RESULTS = st.sampled_from([1, 1.0, -0.0, 0.0, None, "x", {"a": None}, {}])
ENTRY = st.tuples(NAMES, ARGS, RESULTS, st.booleans(), st.booleans())
ENTRIES = st.lists(ENTRY, max_size=4)


def _rows(entries: list[tuple[str, dict[str, Any], Any, bool, bool]]) -> list[Row]:
    rows = []
    for name, args, result, failed, nondeterministic in entries:
        flags: dict[str, Any] = {"nondeterministic": True} if nondeterministic else {}
        if failed:
            flags["error"] = {"type": "ValueError", "message": str(result)}
        rows.append(tape(name, args, result, **flags))
    return rows


@settings(max_examples=120, deadline=None)
@given(ENTRIES, ENTRIES, st.integers(min_value=0, max_value=1))
def test_same_hash_exactly_when_diff_finds_nothing_with_tapes(
    tmp_path_factory: Any,
    first: list[tuple[str, dict[str, Any], Any, bool, bool]],
    second: list[tuple[str, dict[str, Any], Any, bool, bool]],
    calls: int,
) -> None:
    folder = tmp_path_factory.mktemp("tapes")
    a = recording(folder / "a.jsonl", *_rows(first))
    b = recording(folder / "b.jsonl", *_rows(second), calls=calls)
    comparison = compare_recordings(a, b)
    assert comparison.same == (transcript_hash(a) == transcript_hash(b))
    assert (comparison.hash_a, comparison.hash_b) == (transcript_hash(a), transcript_hash(b))
    b_reordered = recording(folder / "r.jsonl", *reversed(_rows(first)))
    assert compare_recordings(a, b_reordered).same
    assert transcript_hash(a) == transcript_hash(b_reordered)
