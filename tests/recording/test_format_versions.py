"""The format-version policy: read every version up to the current one, refuse newer ones and
unknown features with the advice to upgrade, append only to a file of the current version.
(What version 2 changed, and a reader that knows only version 1 refusing it:
``test_format_version_two``.)"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import openprogram.recording.format as recording_module
import openprogram.recording.open_recording as open_recording_module
import openprogram.recording.reader as reader_module
from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.format import (
    KNOWN_FEATURES,
    RECORDING_FORMAT_VERSION,
    WRITTEN_FEATURES,
    encode_row,
    new_header,
)
from openprogram.recording.writer import RecordingWriter
from tests.support.recording_rows import Row, call_end, write_rows

EMPTY_REQUEST: dict[str, Any] = {"model": {}, "context": {}, "options": {}}


def write(path: Path, header: Row, *rows: Row) -> Path:
    return write_rows(path, [header, *rows])


def one_call() -> list[Row]:
    return [{"type": "request", "call_index": 0, **EMPTY_REQUEST}, call_end(0)]


@pytest.fixture
def version_three(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend this openprogram writes format_version 3."""
    for module in (recording_module, reader_module):
        monkeypatch.setattr(module, "RECORDING_FORMAT_VERSION", 3)


@pytest.fixture
def feature_tape(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend this openprogram knows and writes a feature called "tape"."""
    for module in (recording_module, reader_module, open_recording_module):
        monkeypatch.setattr(module, "KNOWN_FEATURES", frozenset({"tape"}))
    monkeypatch.setattr(recording_module, "WRITTEN_FEATURES", ("tape",))


def test_today_is_version_two_with_six_features_written_and_the_snapshots_read() -> None:
    features = ("http", "tapes", "request_deltas", "not_recorded", "eventstream", "raw_text")
    assert RECORDING_FORMAT_VERSION == 2
    assert new_header()["format_version"] == 2
    assert frozenset({*features, "drift_snapshot"}) == KNOWN_FEATURES
    assert features == WRITTEN_FEATURES
    assert new_header()["features"] == list(features)


@pytest.mark.usefixtures("version_three")
@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_version_up_to_the_current_one_reads(tmp_path: Path, version: int) -> None:
    path = write(tmp_path / "r.jsonl", {"type": "header", "format_version": version}, *one_call())
    assert read_recording(path, validate_events=False).format_version == version


@pytest.mark.parametrize("version", [RECORDING_FORMAT_VERSION + 1, 99])
def test_a_newer_version_is_refused_naming_both_and_saying_to_upgrade(
    tmp_path: Path, version: int
) -> None:
    path = write(tmp_path / "r.jsonl", {"type": "header", "format_version": version}, *one_call())
    with pytest.raises(RecordingFileError) as info:
        read_recording(path)
    error = info.value
    assert error.line == 1
    assert f"format_version {version}" in error.problem
    assert f"reads format_version 1 to {RECORDING_FORMAT_VERSION}" in error.problem
    assert "upgrade openprogram" in str(error)


@pytest.mark.usefixtures("version_three")
def test_a_newer_version_names_the_range_read(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", {"type": "header", "format_version": 4})
    with pytest.raises(RecordingFileError, match=r"reads format_version 1 to 3; .*upgrade"):
        read_recording(path)


def test_an_unknown_feature_is_refused_at_line_one(tmp_path: Path) -> None:
    header = {"type": "header", "format_version": 1, "features": ["tape"]}
    path = write(tmp_path / "r.jsonl", header, *one_call())
    with pytest.raises(RecordingFileError) as info:
        read_recording(path)
    assert info.value.line == 1
    assert "feature 'tape'" in info.value.problem
    assert "written by a newer openprogram: upgrade openprogram" in str(info.value)


@pytest.mark.parametrize("features", ["tape", [1], {"tape": True}])
def test_features_must_be_a_list_of_names(tmp_path: Path, features: Any) -> None:
    header = {"type": "header", "format_version": 1, "features": features}
    with pytest.raises(RecordingFileError, match="features must be a list of names"):
        read_recording(write(tmp_path / "r.jsonl", header))


def test_an_empty_feature_list_reads(tmp_path: Path) -> None:
    header = {"type": "header", "format_version": 1, "features": []}
    assert read_recording(write(tmp_path / "r.jsonl", header, *one_call())).calls


@pytest.mark.usefixtures("feature_tape")
def test_a_known_feature_reads_and_a_new_file_announces_what_it_writes(tmp_path: Path) -> None:
    header = {"type": "header", "format_version": 1, "features": ["tape"]}
    assert read_recording(write(tmp_path / "r.jsonl", header, *one_call())).calls
    path = tmp_path / "new.jsonl"
    RecordingWriter(path).open()
    assert read_recording(path).header["features"] == ["tape"]


def test_an_unknown_row_type_says_to_upgrade(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", new_header(), {"type": "snapshot", "call_index": 0})
    with pytest.raises(RecordingFileError) as info:
        read_recording(path)
    assert info.value.line == 2
    assert "unknown row type 'snapshot'" in info.value.problem
    assert "written by a newer openprogram: upgrade openprogram" in str(info.value)


# --- the writer ------------------------------------------------------------------------------


@pytest.mark.parametrize("features", [[], ["http", "request_deltas"]])
def test_the_writer_never_appends_to_an_older_version(tmp_path: Path, features: list[str]) -> None:
    header = {"type": "header", "format_version": 1, "features": features}
    path = write(tmp_path / "r.jsonl", header, *one_call())
    before = path.read_bytes()
    assert read_recording(path).calls  # still readable
    with pytest.raises(RecordingFileError) as info:
        RecordingWriter(path).start_call(EMPTY_REQUEST)
    assert "format_version 1" in info.value.problem
    assert "writes format_version 2" in info.value.problem
    assert "re-record" in str(info.value)
    assert "new recording" in str(info.value)
    assert path.read_bytes() == before


def test_the_writer_never_appends_to_a_newer_version(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", {"type": "header", "format_version": 3})
    with pytest.raises(RecordingFileError, match=r"format_version 3 .*writes format_version 2"):
        RecordingWriter(path).open()
    assert path.read_bytes() == encode_row({"type": "header", "format_version": 3})


def test_the_writer_never_appends_to_a_file_with_unknown_features(tmp_path: Path) -> None:
    header = {"type": "header", "format_version": 2, "features": ["tape"]}
    path = write(tmp_path / "r.jsonl", header)
    with pytest.raises(RecordingFileError) as info:
        RecordingWriter(path).open()
    assert "feature 'tape'" in info.value.problem
    assert "new recording" in str(info.value)


@pytest.mark.usefixtures("version_three")
def test_the_writer_creates_a_file_of_the_current_version(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    assert writer.start_call(EMPTY_REQUEST) == 0
    writer.close()
    assert read_recording(path, validate_events=False).format_version == 3
