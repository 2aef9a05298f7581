"""``delete_recording``: only a regular *.jsonl file directly in the store, never the active one."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import (
    RecordingDeleteError,
    RecordingNameError,
    RecordingNotFoundError,
    RecordingRefusedError,
)
from openprogram.store.store import delete_recording
from tests.support.recording_rows import write_recording


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir()
    write_recording(folder / "demo.jsonl")
    write_recording(folder / "other.jsonl")
    return folder


def test_deletes_by_name(store: Path) -> None:
    assert delete_recording(store, "demo", active=None) == store / "demo.jsonl"
    assert not (store / "demo.jsonl").exists()
    assert (store / "other.jsonl").exists()


def test_a_path_is_refused_even_inside_the_store(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for arg in (str(store / "demo.jsonl"), "other.jsonl", "./demo"):
        monkeypatch.chdir(store)
        with pytest.raises(RecordingNameError, match="not a path"):
            delete_recording(store, arg, active=None)
    assert (store / "demo.jsonl").exists()
    assert (store / "other.jsonl").exists()


def test_deleting_another_recording_while_one_is_active(store: Path) -> None:
    delete_recording(store, "demo", active=store / "other.jsonl")
    assert not (store / "demo.jsonl").exists()


def refusal(store: Path, arg: str, active: Path | None = None) -> RecordingRefusedError:
    with pytest.raises(RecordingRefusedError) as info:
        delete_recording(store, arg, active=active)
    return info.value


def test_refuses_the_active_recording(store: Path) -> None:
    error = refusal(store, "demo", active=store / "demo.jsonl")
    assert "active recording" in error.reason
    assert error.name == "demo"
    assert error.path == store / "demo.jsonl"
    assert (store / "demo.jsonl").exists()


def test_refuses_the_active_recording_by_another_spelling(store: Path, tmp_path: Path) -> None:
    link = tmp_path / "store-link"
    link.symlink_to(store)
    refusal(store, "demo", active=link / "demo.jsonl")
    refusal(store, "demo", active=store / "sub" / ".." / "demo.jsonl")
    assert (store / "demo.jsonl").exists()


def test_refuses_a_symlink_into_the_store(store: Path) -> None:
    (store / "alias.jsonl").symlink_to(store / "demo.jsonl")
    assert "symbolic link" in refusal(store, "alias").reason
    assert (store / "alias.jsonl").is_symlink()
    assert (store / "demo.jsonl").exists()


def test_refuses_a_symlink_pointing_outside(store: Path, tmp_path: Path) -> None:
    outside = write_recording(tmp_path / "outside.jsonl")
    (store / "escape.jsonl").symlink_to(outside)
    assert "symbolic link" in refusal(store, "escape").reason
    assert outside.exists()
    (store / "dangling.jsonl").symlink_to(tmp_path / "nothing.jsonl")
    assert "symbolic link" in refusal(store, "dangling").reason


def test_refuses_a_relative_path_out_of_the_store(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outside = write_recording(tmp_path / "outside.jsonl")
    monkeypatch.chdir(store)
    with pytest.raises(RecordingNameError, match="not a path"):
        delete_recording(store, "../outside.jsonl", active=None)
    assert outside.exists()


def test_refuses_an_absolute_path(store: Path, tmp_path: Path) -> None:
    outside = write_recording(tmp_path / "outside.jsonl")
    with pytest.raises(RecordingNameError, match="not a path"):
        delete_recording(store, str(outside), active=None)
    assert outside.exists()


def test_refuses_a_directory(store: Path) -> None:
    (store / "folder.jsonl").mkdir()
    assert "directory" in refusal(store, "folder").reason
    assert (store / "folder.jsonl").is_dir()


def test_only_jsonl_files_are_recordings(store: Path) -> None:
    (store / "notes.txt").write_text("keep me")
    with pytest.raises(RecordingNotFoundError):
        delete_recording(store, "notes.txt", active=None)  # the name means notes.txt.jsonl
    assert (store / "notes.txt").exists()


def test_a_bad_name_is_a_name_error(store: Path) -> None:
    with pytest.raises(RecordingNameError):
        delete_recording(store, ".hidden", active=None)
    with pytest.raises(RecordingNameError):
        delete_recording(store, "", active=None)


def test_a_missing_recording_is_not_found(store: Path) -> None:
    with pytest.raises(RecordingNotFoundError, match="no recording 'ghost'") as info:
        delete_recording(store, "ghost", active=None)
    assert info.value.path == store / "ghost.jsonl"
    assert info.value.name == "ghost"


def test_an_unlink_failure_is_an_openprogram_error(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(path: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("openprogram.store.store.os.unlink", refuse)
    with pytest.raises(RecordingDeleteError, match="Permission denied") as info:
        delete_recording(store, "demo", active=None)
    assert info.value.reason == "Permission denied"


def test_messages_are_one_line_and_say_what_to_do(store: Path) -> None:
    message = str(refusal(store, "demo", active=store / "demo.jsonl"))
    assert "\n" not in message
    assert "openprogram recordings off" in message
