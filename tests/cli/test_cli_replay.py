"""``openprogram recordings replay NAME|PATH``: check the recording, then switch to replay."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.config.settings import read_settings
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file
from tests.support.recording_rows import (
    write_corrupt_recording,
    write_other_version_recording,
    write_recording,
)

COMMENTED_CONFIG = '# mine\n[record_replay]\nmode = "off"  # keep\nfile = "old"\n'


@pytest.fixture
def commented_config() -> Path:
    config_file().parent.mkdir(parents=True, exist_ok=True)
    config_file().write_text(COMMENTED_CONFIG)
    return config_file()


def test_replay_by_name(commented_config: Path) -> None:
    path = write_recording("demo", calls=2)

    result = run("replay", "demo")

    assert result.exit_code == 0, result.stderr
    assert f"Replaying {path} (2 calls)" in result.stdout
    assert "Python processes started from now on replay their model calls" in result.stdout
    assert "model traffic of Python processes started from now on" in result.stderr
    assert commented_config.read_text() == COMMENTED_CONFIG.replace(
        'mode = "off"', 'mode = "replay"'
    ).replace('"old"', '"demo"')


def test_replay_by_relative_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_recording("demo", calls=1)
    outside = tmp_path / "elsewhere" / "x.jsonl"
    outside.parent.mkdir()
    outside.write_bytes((recordings_dir() / "demo.jsonl").read_bytes())
    monkeypatch.chdir(outside.parent)

    result = run("replay", "./x.jsonl")

    assert result.exit_code == 0, result.stderr
    settings = read_settings().record_replay
    assert (settings.mode, settings.file) == ("replay", str(outside))  # stored absolute
    assert f"Replaying {outside} (1 call)" in result.stdout


def test_replay_by_absolute_path_in_the_store_stores_the_name() -> None:
    path = write_recording("demo", calls=2)

    result = run("replay", str(path))

    assert result.exit_code == 0, result.stderr
    assert read_settings().record_replay.file == "demo"


def test_replay_json() -> None:
    write_recording("demo", calls=2)

    result = run("replay", "demo", "--json")

    assert result.exit_code == 0
    change = json.loads(result.stdout)
    assert (change["mode"], change["name"], change["calls"]) == ("replay", "demo", 2)


@pytest.mark.parametrize("argument", ["nothere", "./nothere.jsonl"])
def test_a_missing_recording_exits_2_and_changes_nothing(
    argument: str, commented_config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    result = run("replay", argument)

    assert result.exit_code == 2
    assert "nothere.jsonl: no such recording" in error_line(result)
    assert result.stdout == ""
    assert commented_config.read_text() == COMMENTED_CONFIG


def test_a_corrupt_recording_exits_2_naming_file_and_line(commented_config: Path) -> None:
    path = write_corrupt_recording(recordings_dir() / "bad.jsonl")

    result = run("replay", "bad")

    assert result.exit_code == 2
    assert f"error: {path}, line 3: not valid JSON" in error_line(result)
    assert commented_config.read_text() == COMMENTED_CONFIG


def test_a_recording_of_another_version_exits_2(commented_config: Path) -> None:
    write_other_version_recording(recordings_dir() / "future.jsonl")

    result = run("replay", "future")

    assert result.exit_code == 2
    assert "format_version 99" in error_line(result)
    assert commented_config.read_text() == COMMENTED_CONFIG


def test_an_invalid_name_exits_2() -> None:
    result = run("replay", ".hidden")

    assert result.exit_code == 2
    assert "invalid recording name '.hidden'" in error_line(result)


def test_a_broken_config_is_refused_and_left_as_it_is() -> None:
    write_recording("demo")
    config_file().write_text("not toml at all =\n")

    result = run("replay", "demo")

    assert result.exit_code == 1
    assert "run `openprogram recordings off` to repair it" in error_line(result)
    assert config_file().read_text() == "not toml at all =\n"
