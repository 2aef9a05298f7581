"""``openprogram recordings record [NAME]``: create the recording, then switch to record."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.config.paths import recordings_dir
from openprogram.config.settings import read_settings
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file
from tests.support.recording_rows import write_recording


def test_record_creates_the_recording_with_only_its_header_and_switches_the_mode() -> None:
    result = run("record", "demo")

    assert result.exit_code == 0, result.stderr
    path = recordings_dir() / "demo.jsonl"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = path.read_bytes().splitlines()
    assert len(lines) == 1
    header = orjson.loads(lines[0])
    assert header["type"] == "header"
    assert header["format_version"] == 2
    assert header["recording_id"] == "demo"
    settings = read_settings().record_replay
    assert (settings.mode, settings.file) == ("record", "demo")
    assert f"Created recording 'demo' at {path}" in result.stdout
    assert "Python processes started from now on record their model calls" in result.stdout
    # What the mode covers, and what not (a program that is not Python needs exec): 2 lines.
    assert result.stderr.startswith("note: it covers the model traffic of Python processes")
    assert "`openprogram exec -- COMMAND`" in result.stderr
    assert result.stderr.count("\n") == 2


def test_record_without_a_name_uses_the_time() -> None:
    result = run("record")

    assert result.exit_code == 0, result.stderr
    [path] = recordings_dir().glob("*.jsonl")
    assert re.fullmatch(r"rec-\d{8}-\d{6}\.jsonl", path.name)
    assert read_settings().record_replay.file == path.stem
    assert str(path) in result.stdout


def test_record_json_describes_the_change() -> None:
    result = run("record", "demo", "--json")

    assert result.exit_code == 0, result.stderr
    change = json.loads(result.stdout)
    assert change["mode"] == "record"
    assert change["name"] == "demo"
    assert change["recording"] == str(recordings_dir() / "demo.jsonl")
    assert change["config"] == str(config_file())
    assert change["config_created"] is True
    assert change["takes_effect"] == "at the next start of a process"


def test_an_existing_name_is_refused_and_the_file_left_alone() -> None:
    path = write_recording("demo", calls=2)
    before = path.read_bytes()

    result = run("record", "demo")

    assert result.exit_code == 1
    assert "recording 'demo' already exists" in error_line(result)
    assert path.read_bytes() == before
    assert not config_file().exists()


@pytest.mark.parametrize("name", [".hidden", "", "a b", "x" * 129])
def test_an_invalid_name_exits_2_with_one_line(name: str) -> None:
    result = run("record", name)

    assert result.exit_code == 2
    line = error_line(result)
    assert "recording name" in line
    assert result.stdout == ""
    assert not recordings_dir().exists() or not list(recordings_dir().iterdir())
    assert not config_file().exists()


def test_when_the_config_cannot_be_written_the_new_recording_is_removed() -> None:
    config_file().mkdir(parents=True)  # a folder where the file should be

    result = run("record", "demo")

    assert result.exit_code == 1
    assert f"{config_file()}: is a folder, not a file" in error_line(result)
    assert not (recordings_dir() / "demo.jsonl").exists()


def test_a_broken_config_is_not_recorded_over() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text("[record_replay\n")

    result = run("record", "demo")

    assert result.exit_code == 1
    line = error_line(result)
    assert f"{config_file()}, line 1" in line
    assert "run `openprogram recordings off` to repair it" in line
    assert config_file().read_text() == "[record_replay\n"
    assert not (recordings_dir() / "demo.jsonl").exists()


def test_record_warns_when_the_environment_forces_another_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "off")

    result = run("record", "demo")

    assert result.exit_code == 0
    assert "warning: OPENPROGRAM_RECORD_REPLAY__MODE still forces mode 'off'" in result.stderr


def test_record_warns_when_the_environment_forces_another_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__FILE", "other")

    result = run("record", "demo")

    assert result.exit_code == 0
    assert "OPENPROGRAM_RECORD_REPLAY__FILE" in result.stderr


@pytest.mark.parametrize(
    ("argument", "meant"),
    [("demo.jsonl", "demo"), ("rec-20260101-000000.jsonl", "rec-20260101-000000")],
)
def test_a_name_ending_in_jsonl_is_refused_with_the_name_it_meant(
    argument: str, meant: str
) -> None:
    result = run("record", argument)

    assert result.exit_code == 2
    line = error_line(result)
    assert f"record takes a name (did you mean `{meant}`?)" in line
    assert result.stdout == ""
    assert not recordings_dir().exists() or not list(
        recordings_dir().iterdir()
    )  # no demo.jsonl.jsonl
    assert not config_file().exists()


@pytest.mark.parametrize(
    "argument", ["../x", "a/b", "/abs/x.jsonl", "./demo", ".jsonl", "a b.jsonl"]
)
def test_a_path_is_refused_suggesting_only_a_valid_name(argument: str) -> None:
    result = run("record", argument)

    assert result.exit_code == 2
    line = error_line(result)
    assert "record takes a name" in line
    assert "did you mean" not in line
    assert not config_file().exists()


def test_a_store_that_is_a_file_exits_2() -> None:
    recordings_dir().parent.mkdir(parents=True)
    recordings_dir().write_text("not a folder")

    result = run("record", "demo")

    assert result.exit_code == 2
    assert "cannot create the recording" in error_line(result)
    assert not config_file().exists()


def test_a_store_that_refuses_writes_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    recordings_dir().mkdir(parents=True)
    real_open = os.open

    def read_only_store(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).parent == recordings_dir() and flags & os.O_CREAT:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only_store)

    result = run("record", "demo")

    assert result.exit_code == 2
    assert "cannot create the recording (Permission denied)" in error_line(result)
    assert not config_file().exists()
