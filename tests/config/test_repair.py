"""`off` repairs a broken configuration and keeps the original; record/replay refuse it."""

from __future__ import annotations

import re
import stat
from datetime import datetime
from pathlib import Path

import pytest

from openprogram.config.editing import set_record_replay, write_backup
from openprogram.config.settings import load_config
from openprogram.errors import ConfigError

NOT_TOML = b'# my settings\n[record_replay\nmode = "record"\n\xff stray bytes\n'

INVALID_VALUES = """\
# my settings
default_model = "echo:echo"   # keep me

[record_replay]
mode = "sometimes"   # not a mode
file = "demo"
ignore_fields = ["a", 3]

[providers.openai-completions]
base_url = "http://localhost:11434/v1"   # keep me too
timeout = -1
colour = "blue"

[record_repaly]
mode = "record"
"""

REPAIRED = """\
# my settings
default_model = "echo:echo"   # keep me

[record_replay]
mode = "off"   # not a mode
file = "demo"

[providers.openai-completions]
base_url = "http://localhost:11434/v1"   # keep me too

"""

BACKUP_NAME = re.compile(r"config\.toml\.broken-\d{8}-\d{6}(-\d+)?")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "openprogram-home" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


def others_beside(path: Path) -> list[Path]:
    return sorted(child for child in path.parent.iterdir() if child != path)


def test_off_replaces_invalid_toml_and_keeps_the_original_bytes(config: Path) -> None:
    config.write_bytes(NOT_TOML)
    edit = set_record_replay(mode="off")
    assert edit.backup is not None
    assert BACKUP_NAME.fullmatch(edit.backup.name)
    assert edit.backup.read_bytes() == NOT_TOML
    assert stat.S_IMODE(edit.backup.stat().st_mode) == 0o600
    assert others_beside(config) == [edit.backup]
    assert len(edit.repaired) == 1
    assert edit.repaired[0].startswith("started a fresh file with mode off (line 4: not UTF-8")
    loaded = load_config()
    assert loaded.error is None
    assert loaded.settings is not None
    assert loaded.settings.record_replay.mode == "off"


def test_off_removes_invalid_values_and_keeps_everything_valid(config: Path) -> None:
    config.write_text(INVALID_VALUES)
    edit = set_record_replay(mode="off")
    assert config.read_text() == REPAIRED
    assert edit.backup is not None
    assert edit.backup.read_text() == INVALID_VALUES
    assert edit.repaired == [
        "reset record_replay.mode to off (must be one of off, record, replay)",
        "removed record_replay.ignore_fields (must be a valid string)",
        "removed providers.openai-completions.timeout (must be greater than 0)",
        "removed providers.openai-completions.colour (unknown key)",
        "removed record_repaly (unknown key)",
    ]
    assert load_config().error is None


def test_off_on_a_value_that_is_not_a_table_starts_the_table_again(config: Path) -> None:
    config.write_text('record_replay = "off"\n\n[providers.x]\ntimeout = 1\n')
    edit = set_record_replay(mode="off")
    assert edit.repaired == ["removed record_replay (must be a table)"]
    assert config.read_text() == '\n[providers.x]\ntimeout = 1\n\n[record_replay]\nmode = "off"\n'


@pytest.mark.parametrize("mode", ["record", "replay"])
@pytest.mark.parametrize("broken", [NOT_TOML, INVALID_VALUES.encode()])
def test_record_and_replay_refuse_a_broken_file_and_write_nothing(
    config: Path, mode: str, broken: bytes
) -> None:
    config.write_bytes(broken)
    with pytest.raises(ConfigError) as caught:
        set_record_replay(mode=mode, file="demo")  # type: ignore[arg-type]
    assert "run `openprogram recordings off` to repair it" in str(caught.value)
    assert caught.value.path == config
    assert caught.value.line is not None
    assert config.read_bytes() == broken
    assert others_beside(config) == []


def test_a_valid_file_needs_no_backup(config: Path) -> None:
    config.write_text('[record_replay]\nmode = "record"\nfile = "x"\n')
    edit = set_record_replay(mode="off")
    assert (edit.backup, edit.repaired) == (None, [])
    assert others_beside(config) == []


def test_backups_never_overwrite_each_other(config: Path) -> None:
    moment = datetime(2025, 1, 2, 3, 4, 5)
    first = write_backup(config, b"first", now=moment)
    second = write_backup(config, b"second", now=moment)
    third = write_backup(config, b"third", now=moment)
    assert [first.name, second.name, third.name] == [
        "config.toml.broken-20250102-030405",
        "config.toml.broken-20250102-030405-2",
        "config.toml.broken-20250102-030405-3",
    ]
    assert [first.read_bytes(), second.read_bytes(), third.read_bytes()] == [
        b"first",
        b"second",
        b"third",
    ]


def test_two_repairs_keep_two_backups(config: Path) -> None:
    config.write_bytes(b"broken = \n")
    first = set_record_replay(mode="off").backup
    config.write_bytes(b"broken again = \n")
    second = set_record_replay(mode="off").backup
    assert first is not None
    assert second is not None
    assert first != second
    assert first.read_bytes() == b"broken = \n"
    assert second.read_bytes() == b"broken again = \n"


def test_a_failed_repair_write_keeps_the_original_in_place(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    config.write_bytes(NOT_TOML)

    def fail(source: object, destination: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(ConfigError, match="cannot be written"):
        set_record_replay(mode="off")
    assert config.read_bytes() == NOT_TOML
    backups = others_beside(config)
    assert [backup.read_bytes() for backup in backups] == [NOT_TOML]


def test_a_failed_backup_changes_nothing(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    config.write_bytes(NOT_TOML)
    real_open = os.open

    def refuse_backups(path: object, flags: int, mode: int = 0o777) -> int:
        if ".broken-" in str(path):
            raise OSError(28, "No space left on device")
        return real_open(path, flags, mode)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse_backups)
    with pytest.raises(ConfigError, match="No space left"):
        set_record_replay(mode="off")
    assert config.read_bytes() == NOT_TOML
    assert others_beside(config) == []
