"""Recording names, default names, and where a NAME|PATH argument points."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from openprogram.errors import OpenProgramError, RecordingNameError
from openprogram.store.names import (
    RecordingRef,
    default_name,
    is_path_argument,
    is_same_file,
    recording_files,
    resolve_recording,
    validate_name,
)


@pytest.mark.parametrize(
    "name", ["demo", "a", "rec-20260101-120000", "v1.2_final", "_x", "9lives", "a..b", "x" * 128]
)
def test_valid_names_are_returned_unchanged(name: str) -> None:
    assert validate_name(name) == name


@pytest.mark.parametrize(
    "name",
    ["../x", "/abs", ".hidden", "-x", "a b", "a/b", "a\\b", "café", "名前", "x\n", "a:b", "."],
)
def test_invalid_names_are_refused_naming_the_rule(name: str) -> None:
    with pytest.raises(RecordingNameError) as info:
        validate_name(name)
    assert info.value.name == name
    message = str(info.value)
    assert message.startswith(f"invalid recording name {name!r}:")
    assert "use letters, digits, '.', '_' and '-', not starting with '.' or '-'" in message
    assert "\n" not in message.replace(repr(name), "")


def test_the_spec_example_message() -> None:
    with pytest.raises(RecordingNameError, match=r"^invalid recording name '\.\./x': use"):
        validate_name("../x")


def test_an_empty_name_is_refused_clearly() -> None:
    with pytest.raises(RecordingNameError, match="name is empty") as info:
        validate_name("")
    assert info.value.name == ""
    assert isinstance(info.value, OpenProgramError)


def test_129_characters_is_too_long() -> None:
    with pytest.raises(RecordingNameError, match="129 characters long: use at most 128"):
        validate_name("x" * 129)


def test_default_name_is_utc_seconds() -> None:
    moment = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    assert default_name(moment) == "rec-20260304-050607"
    elsewhere = moment.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert default_name(elsewhere) == "rec-20260304-050607"
    assert default_name(moment.replace(tzinfo=None)) == "rec-20260304-050607"
    assert re.fullmatch(r"rec-\d{8}-\d{6}", validate_name(default_name()))


@pytest.mark.parametrize(
    ("arg", "is_path"),
    [
        ("demo", False),
        ("demo.json", False),
        ("x.jsonl", True),
        ("./x", True),
        ("dir/x", True),
        ("/abs/x", True),
        ("../x", True),
        ("~/x.jsonl", True),
        ("", False),
    ],
)
def test_what_counts_as_a_path(arg: str, is_path: bool) -> None:
    assert is_path_argument(arg) is is_path


def test_a_name_points_into_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    assert resolve_recording("demo", store) == RecordingRef(store / "demo.jsonl", "demo")


def test_a_relative_store_is_made_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    ref = resolve_recording("demo", Path("store"))
    assert ref.path == tmp_path / "store" / "demo.jsonl"
    assert ref.path.is_absolute()


def test_a_bad_name_is_refused_while_resolving(tmp_path: Path) -> None:
    with pytest.raises(RecordingNameError):
        resolve_recording("-rf", tmp_path)
    with pytest.raises(RecordingNameError, match="empty"):
        resolve_recording("", tmp_path)


def test_a_path_outside_the_store_has_no_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store"
    store.mkdir()
    monkeypatch.chdir(store)
    assert resolve_recording("x.jsonl", store) == RecordingRef(store / "x.jsonl", "x")
    assert resolve_recording("../x.jsonl", store) == RecordingRef(tmp_path / "x.jsonl", None)
    assert resolve_recording("/elsewhere/a.jsonl", store).name is None


def test_a_path_inside_the_store_gets_its_name(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    ref = resolve_recording(str(store / "sub" / ".." / "demo.jsonl"), store)
    assert ref == RecordingRef(store / "demo.jsonl", "demo")
    assert resolve_recording(str(store / "notes.txt"), store).name is None


def test_a_home_path_is_expanded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    ref = resolve_recording("~/r.jsonl", tmp_path / "store")
    assert ref.path == tmp_path / "r.jsonl"


def test_the_store_through_a_symlink_still_names_its_files(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert resolve_recording(str(link / "a.jsonl"), real).name == "a"


def test_recording_files_lists_regular_jsonl_files_only(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    for name in ("b.jsonl", "a.jsonl", ".hidden.jsonl", "notes.txt", ".summary-cache.json"):
        (store / name).write_text("{}\n")
    (store / "dir.jsonl").mkdir()
    (store / "link.jsonl").symlink_to(store / "a.jsonl")
    (tmp_path / "outside.jsonl").write_text("{}\n")
    (store / "out.jsonl").symlink_to(tmp_path / "outside.jsonl")
    found = recording_files(store)
    assert [path.name for path, _ in found] == ["a.jsonl", "b.jsonl"]
    assert all(path.is_absolute() for path, _ in found)


def test_a_missing_store_holds_no_recordings(tmp_path: Path) -> None:
    assert recording_files(tmp_path / "nope") == []
    (tmp_path / "file").write_text("")
    assert recording_files(tmp_path / "file") == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any folder")
def test_an_unreadable_store_is_an_openprogram_error(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0)
    try:
        with pytest.raises(OpenProgramError, match="cannot list the recordings store"):
            recording_files(store)
    finally:
        store.chmod(0o700)


def test_is_same_file_sees_through_spellings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.chdir(real)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = real / "a.jsonl"
    assert is_same_file(path, Path("a.jsonl"))
    assert is_same_file(path, tmp_path / "link" / "a.jsonl")
    assert is_same_file(path, Path("~/real/sub/../a.jsonl"))
    assert not is_same_file(path, real / "b.jsonl")
    assert not is_same_file(path, None)
