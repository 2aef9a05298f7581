"""``openprogram recordings off``: always works, repairs a broken config, keeps a backup."""

from __future__ import annotations

import json

import pytest

from openprogram.config.settings import load_config, read_settings
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file
from tests.support.recording_rows import write_recording


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_off_from_record_and_replay_keeps_the_file(mode: str) -> None:
    write_recording("demo")
    switched = run("replay", "demo") if mode == "replay" else run("record", "other")
    assert switched.exit_code == 0, switched.stderr
    file_before = read_settings().record_replay.file

    result = run("off")

    assert result.exit_code == 0, result.stderr
    settings = read_settings().record_replay
    assert (settings.mode, settings.file) == ("off", file_before)
    assert "Mode is now off" in result.stdout
    assert result.stderr == ""


def test_off_without_a_config_creates_one() -> None:
    result = run("off", "--json")

    assert result.exit_code == 0, result.stderr
    change = json.loads(result.stdout)
    assert (change["mode"], change["config_created"], change["config_backup"]) == (
        "off",
        True,
        None,
    )
    assert read_settings().record_replay.mode == "off"


def test_off_repairs_a_config_that_is_not_toml_and_keeps_the_original() -> None:
    broken = b'# my settings\n[record_replay]\nmode = "replay"\nfile = [\n'
    config_file().parent.mkdir(parents=True)
    config_file().write_bytes(broken)

    result = run("off")

    assert result.exit_code == 0, result.stderr
    [backup] = config_file().parent.glob("config.toml.broken-*")
    assert backup.read_bytes() == broken
    loaded = load_config()
    assert loaded.error is None
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "off"
    assert f"warning: repaired {config_file()}" in result.stderr
    assert f"warning: the original is kept at {backup}" in result.stderr
    assert run("status").exit_code == 0


def test_off_repairs_an_invalid_value_and_keeps_the_rest() -> None:
    broken = '# mine\ndefault_model = "echo:echo"\n[record_replay]\nmode = "sometimes"\n'
    config_file().parent.mkdir(parents=True)
    config_file().write_text(broken)

    result = run("off", "--json")

    assert result.exit_code == 0, result.stderr
    change = json.loads(result.stdout)
    assert change["config_backup"] is not None
    settings = read_settings()
    assert settings.record_replay.mode == "off"
    assert settings.default_model == "echo:echo"
    assert config_file().read_text().startswith("# mine\n")


def test_off_warns_when_the_environment_forces_another_mode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "replay")

    result = run("off")

    assert result.exit_code == 0
    assert (
        "warning: OPENPROGRAM_RECORD_REPLAY__MODE still forces mode 'replay': unset it for off "
        "to take effect"
    ) in result.stderr
    assert json.loads(run("off", "--json").stdout)["env_forced_mode"] == "replay"


def test_off_when_the_config_is_a_folder_fails_in_one_line() -> None:
    config_file().mkdir(parents=True)

    result = run("off")

    assert result.exit_code == 1
    assert "is a folder, not a file" in error_line(result)


def test_off_names_the_variable_that_forces_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY", '{"mode": "replay"}')

    result = run("off")

    assert result.exit_code == 0
    assert "still forces mode 'replay'" in result.stderr
    assert "OPENPROGRAM_RECORD_REPLAY__MODE" not in result.stderr
