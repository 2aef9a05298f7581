"""``create_recording``: a private file holding exactly the header, never over another."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import orjson
import pytest

from openprogram.errors import RecordingExistsError, RecordingFileError, RecordingNameError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.format import RECORDING_FORMAT_VERSION
from openprogram.store.store import create_recording


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_creates_a_private_file_in_a_private_store(tmp_path: Path) -> None:
    store = tmp_path / "new-home" / "recordings"
    path = create_recording(store, "demo")
    assert path == store / "demo.jsonl"
    assert mode(path) == 0o600
    assert mode(store) == 0o700
    assert mode(store.parent) == 0o700


def test_the_file_holds_exactly_the_header(tmp_path: Path) -> None:
    path = create_recording(tmp_path / "store", "demo")
    data = path.read_bytes()
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    header = orjson.loads(data)
    assert header["type"] == "header"
    assert header["format_version"] == RECORDING_FORMAT_VERSION
    assert header["recording_id"] == "demo"
    assert set(header) >= {"created_at", "openprogram_version", "redaction_version"}
    assert data.startswith(b'{"type":"header","format_version":')


def test_the_header_is_readable_by_the_strict_reader(tmp_path: Path) -> None:
    recording = read_recording(create_recording(tmp_path, "demo"))
    assert recording.calls == []
    assert recording.header["recording_id"] == "demo"


def test_the_mode_is_exact_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077 | 0o200)
    try:
        path = create_recording(tmp_path / "s", "demo")
    finally:
        os.umask(old)
    assert mode(path) == 0o600


def test_an_existing_recording_is_refused_and_kept(tmp_path: Path) -> None:
    path = create_recording(tmp_path, "demo")
    path.write_bytes(b"precious\n")
    with pytest.raises(
        RecordingExistsError, match="choose another name or delete it first"
    ) as info:
        create_recording(tmp_path, "demo")
    assert info.value.path == path
    assert info.value.name == "demo"
    assert path.read_bytes() == b"precious\n"


def test_a_dangling_symlink_under_the_name_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "demo.jsonl").symlink_to(target)
    with pytest.raises(RecordingExistsError):
        create_recording(tmp_path / "store", "demo")
    assert not target.exists()


@pytest.mark.parametrize("name", ["../x", "", "/abs", ".hidden", "x.jsonl/.."])
def test_a_bad_name_creates_nothing(tmp_path: Path, name: str) -> None:
    with pytest.raises(RecordingNameError):
        create_recording(tmp_path / "store", name)
    assert not (tmp_path / "store").exists()


def test_a_store_that_cannot_be_made_is_a_file_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(RecordingFileError, match="cannot create the recording"):
        create_recording(tmp_path / "file" / "store", "demo")
