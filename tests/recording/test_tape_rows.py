"""Tape rows in the strict reader and the writer: checked field by field, indexed per tape,
cut short safely, and appended only to a recording whose header announces them."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram import record_replay, taped
from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.tape_rows import recording_tape_strings, tape_strings
from openprogram.recording.writer import RecordingWriter
from tests.support.reader_refusals import assert_refused
from tests.support.recording_rows import Row, call_rows, header, write_rows


def tape(name: str = "clock", **fields: object) -> Row:
    return {"type": "tape", "tape": name, "args": {}, "result": 1.5, **fields}


def test_entries_are_indexed_per_tape_in_file_order(tmp_path: Path) -> None:
    path = write_rows(
        tmp_path / "r.jsonl",
        [header(), tape(), *call_rows(0), tape("weather"), tape(), tape("weather")],
    )
    recording = read_recording(path)
    assert [(entry.label, entry.line) for entry in recording.tapes] == [
        ("clock[0]", 2),
        ("weather[0]", 10),
        ("clock[1]", 11),
        ("weather[1]", 12),
    ]
    assert len(recording.calls) == 1


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ({"type": "tape", "args": {}, "result": 1}, "a tape row needs a tape name"),
        ({"type": "tape", "tape": "", "args": {}, "result": 1}, "a tape row needs a tape name"),
        ({"type": "tape", "tape": "clock", "args": [], "result": 1}, "args must be an object"),
        ({"type": "tape", "tape": "clock", "args": {}}, "exactly one of result and error"),
        (
            {"type": "tape", "tape": "clock", "args": {}, "result": 1, "error": None},
            "exactly one of result and error",
        ),
        (
            {"type": "tape", "tape": "clock", "args": {}, "error": {"type": "E"}},
            'error must be {"type", "message"}',
        ),
        (tape(typed=False), "typed is true when present, found False"),
        (tape(within=3), "within must name a tape, found 3"),
        (tape(when="now"), "unknown field 'when'"),
    ],
)
def test_a_bad_tape_row_is_refused_naming_the_line(tmp_path: Path, row: Row, says: str) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), tape(), row])
    assert_refused(path, line=3, call_index=None, says=says)


def test_a_tape_row_cut_short_by_a_crash_is_left_out_and_the_calls_still_read(
    tmp_path: Path,
) -> None:
    path = write_rows(tmp_path / "r.jsonl", [header(), *call_rows(0), tape()])
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 10])  # the last row lost its end
    recording = read_recording(path)
    assert (len(recording.calls), recording.tapes) == (1, [])
    RecordingWriter(path).write_feature_row(tape("weather"), "tapes")  # the cut tail repaired
    assert [entry.label for entry in read_recording(path).tapes] == ["weather[0]"]


def test_no_tape_row_is_appended_to_a_recording_made_before_tapes(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "old.jsonl", [header(features=["http"]), *call_rows(0)])
    before = path.read_bytes()

    @taped(name="clock")
    def clock() -> float:
        return 1.0

    with pytest.raises(RecordingFileError) as info, record_replay(path, mode="record"):
        clock()
    assert str(info.value) == (
        f"{path}, line 1: cannot append tape rows to it: its header does not announce the "
        "'tapes' feature (an older openprogram created it); re-record the session into a new "
        "file, or start a new recording"
    )
    assert path.read_bytes() == before


def test_tape_strings_walks_every_string_with_its_field_path(tmp_path: Path) -> None:
    rows = [
        header(),
        tape("weather", args={"city": "Paris"}, result={"notes": ["sunny", {"by": "ada"}]}),
        {"type": "tape", "tape": "w", "args": {}, "error": {"type": "E", "message": "no"}},
    ]
    path = write_rows(tmp_path / "r.jsonl", rows)
    recording = read_recording(path)
    assert list(tape_strings(recording.tapes[0])) == [
        ("args.city", "city"),
        ("args.city", "Paris"),
        ("result.notes", "notes"),
        ("result.notes[0]", "sunny"),
        ("result.notes[1].by", "by"),
        ("result.notes[1].by", "ada"),
    ]
    assert list(tape_strings(recording.tapes[1])) == [("error.message", "no")]
    found = [
        f"{path.name}:{entry.line}: tape {entry.label}, field {field}: {text}"
        for entry, field, text in recording_tape_strings(recording.tapes)
        if text in ("Paris", "no")
    ]
    assert found == [
        "r.jsonl:2: tape weather[0], field args.city: Paris",
        "r.jsonl:3: tape w[0], field error.message: no",
    ]
