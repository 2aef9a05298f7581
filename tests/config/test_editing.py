"""set_record_replay: only the keys concerned change, validated first, written atomically."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

import pytest

from openprogram.config.editing import KEEP, ConfigEdit, Keep, set_record_replay
from openprogram.config.paths import ConfigLocation
from openprogram.config.settings import load_config
from openprogram.errors import ConfigError

COMMENTED = """\
# openprogram settings for this laptop.
# `openprogram recordings record|replay|off` edits [record_replay] below.

default_model = "openai-completions:llama3:8b"   # the local ollama model

[providers.openai-completions]
# Ollama speaks the OpenAI protocol.
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_API_KEY"   # a variable NAME, never the key
timeout = 120.0

[record_replay]
# The mode the next process starts in.
mode = "off"      # off | record | replay

# Request fields replay does not compare.
ignore_fields = [
    "options.temperature",   # varies between runs
]

# An api this machine does not use yet.
[providers.x]
timeout = 5   # seconds
"""

RECORDING = """\
# openprogram settings for this laptop.
# `openprogram recordings record|replay|off` edits [record_replay] below.

default_model = "openai-completions:llama3:8b"   # the local ollama model

[providers.openai-completions]
# Ollama speaks the OpenAI protocol.
base_url = "http://localhost:11434/v1"
api_key_env = "OLLAMA_API_KEY"   # a variable NAME, never the key
timeout = 120.0

[record_replay]
# The mode the next process starts in.
mode = "record"      # off | record | replay
file = "session-1"

# Request fields replay does not compare.
ignore_fields = [
    "options.temperature",   # varies between runs
]

# An api this machine does not use yet.
[providers.x]
timeout = 5   # seconds
"""

REPLAYING = RECORDING.replace('mode = "record"', 'mode = "replay"').replace(
    'file = "session-1"', 'file = "/tmp/sessions/session 2.jsonl"'
)
OFF = REPLAYING.replace('mode = "replay"', 'mode = "off"')


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return (
        tmp_path / "openprogram-home" / "config.toml"
    )  # where conftest's OPENPROGRAM_HOME puts it


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def files_beside(path: Path) -> list[str]:
    return sorted(child.name for child in path.parent.iterdir())


def test_golden_record_replay_off_changes_only_the_keys_concerned(config: Path) -> None:
    write(config, COMMENTED)
    edit = set_record_replay(mode="record", file="session-1")
    assert edit == ConfigEdit(path=config, created=False, backup=None, repaired=[])
    assert config.read_text() == RECORDING

    set_record_replay(mode="replay", file="/tmp/sessions/session 2.jsonl")
    assert config.read_text() == REPLAYING
    # the golden texts differ from each other on the mode and file lines only
    changed = [
        a for a, b in zip(RECORDING.splitlines(), REPLAYING.splitlines(), strict=True) if a != b
    ]
    assert changed == ['mode = "record"      # off | record | replay', 'file = "session-1"']

    set_record_replay(mode="off")  # the file stays, so replay can resume later
    assert config.read_text() == OFF
    assert files_beside(config) == ["config.toml"]

    settings = load_config().settings
    assert settings is not None
    assert settings.record_replay.mode == "off"
    assert settings.record_replay.file == "/tmp/sessions/session 2.jsonl"
    assert settings.record_replay.ignore_fields == ["options.temperature"]


def test_file_none_removes_the_key_and_keep_leaves_it(config: Path) -> None:
    write(config, RECORDING)
    set_record_replay(mode="replay", file=KEEP)
    assert 'file = "session-1"' in config.read_text()
    set_record_replay(mode="off", file=None)
    assert config.read_text() == COMMENTED


def test_a_missing_table_is_appended_at_the_end(config: Path) -> None:
    write(config, '# mine\ndefault_model = "echo:echo"\n\n[providers.x]\ntimeout = 5  # s\n')
    set_record_replay(mode="record", file="demo")
    assert config.read_text() == (
        '# mine\ndefault_model = "echo:echo"\n\n[providers.x]\ntimeout = 5  # s\n'
        '\n[record_replay]\nmode = "record"\nfile = "demo"\n'
    )


def test_a_file_without_a_final_newline_gets_a_blank_line_before_the_table(config: Path) -> None:
    write(config, "[providers.x]\ntimeout = 5")
    set_record_replay(mode="off")
    assert config.read_text() == '[providers.x]\ntimeout = 5\n\n[record_replay]\nmode = "off"\n'


def test_dotted_keys_are_edited_in_place(config: Path) -> None:
    write(config, '# top\nrecord_replay.mode = "off"  # here\n\n[providers.x]\ntimeout = 1\n')
    set_record_replay(mode="replay", file="demo")
    assert config.read_text() == (
        '# top\nrecord_replay.mode = "replay"  # here\nrecord_replay.file = "demo"\n'
        "\n[providers.x]\ntimeout = 1\n"
    )


def test_an_inline_table_is_edited_in_place(config: Path) -> None:
    write(config, 'record_replay = { mode = "off", ignore_fields = ["a"] }  # inline\n')
    set_record_replay(mode="record", file="demo")
    text = config.read_text()
    assert text.startswith('record_replay = { mode = "record", ignore_fields = ["a"]')
    assert text.rstrip().endswith("# inline")
    settings = load_config().settings
    assert settings is not None
    assert (settings.record_replay.mode, settings.record_replay.file) == ("record", "demo")


def test_an_empty_record_replay_table_gets_its_keys(config: Path) -> None:
    write(config, "[record_replay]\n\n[providers.x]\ntimeout = 1\n")
    set_record_replay(mode="record", file="demo")
    settings = load_config().settings
    assert settings is not None
    assert (settings.record_replay.mode, settings.record_replay.file) == ("record", "demo")
    assert settings.providers["x"].timeout == 1


def test_an_unchanged_file_is_not_rewritten(config: Path) -> None:
    write(config, OFF)
    os.utime(config, (1_000_000, 1_000_000))
    set_record_replay(mode="off")
    assert config.stat().st_mtime == 1_000_000


def test_a_missing_config_is_created_private_with_private_folders(tmp_path: Path) -> None:
    path = tmp_path / "new" / "deeper" / "config.toml"
    edit = set_record_replay(
        mode="record", file="demo", location=ConfigLocation(path, "OPENPROGRAM_CONFIG")
    )
    assert edit == ConfigEdit(path=path, created=True, backup=None, repaired=[])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "new" / "deeper").stat().st_mode) == 0o700
    text = path.read_text()
    assert text.startswith("# openprogram configuration.")
    assert "config.example.toml" in text
    assert text.endswith('\n[record_replay]\nmode = "record"\nfile = "demo"\n')
    loaded = load_config({"OPENPROGRAM_CONFIG": str(path)})
    assert loaded.settings is not None
    assert loaded.settings.record_replay.file == "demo"


def test_the_default_location_comes_from_the_environment(config: Path) -> None:
    edit = set_record_replay(mode="off")
    assert edit.path == config
    assert edit.created is True
    assert config.exists()


def test_permission_bits_are_kept_and_no_temporary_file_is_left(config: Path) -> None:
    write(config, COMMENTED)
    config.chmod(0o640)
    set_record_replay(mode="record", file="demo")
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert files_beside(config) == ["config.toml"]


def test_a_failed_replace_leaves_the_original_and_no_temporary_file(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(config, COMMENTED)
    before = config.read_bytes()

    def fail(source: object, destination: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(ConfigError, match="cannot be written") as caught:
        set_record_replay(mode="record", file="demo")
    assert caught.value.path == config
    assert config.read_bytes() == before
    assert files_beside(config) == ["config.toml"]


def test_a_failed_fsync_leaves_the_original_and_no_temporary_file(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(config, COMMENTED)
    before = config.read_bytes()

    def fail(descriptor: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(ConfigError):
        set_record_replay(mode="record", file="demo")
    assert config.read_bytes() == before
    assert files_beside(config) == ["config.toml"]


def test_a_symlinked_config_stays_a_symlink(tmp_path: Path, config: Path) -> None:
    real = write(tmp_path / "dotfiles" / "openprogram.toml", COMMENTED)
    config.parent.mkdir(parents=True)
    config.symlink_to(real)
    set_record_replay(mode="record", file="session-1")
    assert config.is_symlink()
    assert real.read_text() == RECORDING


def test_an_invalid_requested_value_writes_nothing(config: Path) -> None:
    write(config, COMMENTED)
    with pytest.raises(ConfigError) as caught:
        set_record_replay(mode="record", file="  ")
    assert caught.value.key == "record_replay.file"
    assert str(caught.value).endswith("nothing was written")
    assert config.read_text() == COMMENTED


def test_the_environment_does_not_take_part_in_validation(
    config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(config, COMMENTED)
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "bogus")
    set_record_replay(mode="record", file="session-1")
    assert config.read_text() == RECORDING


def test_a_folder_at_the_config_path_is_refused_even_by_off(config: Path) -> None:
    config.mkdir(parents=True)
    with pytest.raises(ConfigError, match="is a folder"):
        set_record_replay(mode="off")
    assert config.is_dir()


def test_a_crlf_file_stays_crlf(config: Path) -> None:
    original = b'# c\r\n[providers.x]\r\ntimeout = 1\r\n\r\n[record_replay]\r\nmode = "off"\r\n'
    config.parent.mkdir(parents=True)
    config.write_bytes(original)
    set_record_replay(mode="record", file="demo")
    assert config.read_bytes() == original.replace(
        b'mode = "off"\r\n', b'mode = "record"\r\nfile = "demo"\r\n'
    )


def test_a_config_that_cannot_be_created_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    path = tmp_path / "a-file" / "sub" / "config.toml"
    with pytest.raises(ConfigError) as caught:
        set_record_replay(mode="off", location=ConfigLocation(path, "OPENPROGRAM_CONFIG"))
    assert caught.value.path == path


@pytest.mark.parametrize("mode", ["record", "replay"])
@pytest.mark.parametrize("file", [KEEP, None])
def test_record_or_replay_without_a_recording_writes_nothing(
    config: Path, mode: Literal["record", "replay"], file: Keep | None
) -> None:
    write(config, COMMENTED)  # no record_replay.file

    with pytest.raises(ConfigError) as caught:
        set_record_replay(mode=mode, file=file)

    assert caught.value.key == "record_replay.file"
    assert str(caught.value).startswith(f"{config}: record_replay.file: not set, and mode '{mode}'")
    assert str(caught.value).endswith("nothing was written")
    assert config.read_text() == COMMENTED
    assert sorted(child.name for child in config.parent.iterdir()) == ["config.toml"]


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_record_or_replay_without_a_recording_creates_no_file(
    config: Path, mode: Literal["record", "replay"]
) -> None:
    with pytest.raises(ConfigError, match="not set"):
        set_record_replay(mode=mode)

    assert not config.exists()


def test_a_file_already_configured_is_enough(config: Path) -> None:
    write(config, '[record_replay]\nmode = "off"\nfile = "session-1"\n')

    set_record_replay(mode="replay")

    settings = load_config().settings
    assert settings is not None
    assert (settings.record_replay.mode, settings.record_replay.file) == ("replay", "session-1")


TRICKY_OFF_CASES = {
    "plain": RECORDING,
    "crlf": RECORDING.replace("\n", "\r\n"),
    "single quotes": RECORDING.replace('mode = "record"', "mode = 'record'"),
    "a sub-table after it": RECORDING + '\n[record_replay.tools]\nsearch = "replay"\n',
    "no spaces": RECORDING.replace('mode = "record"', 'mode="record"'),
    "dotted keys": 'record_replay.mode = "record"\nrecord_replay.file = "s"\n',
    "a huge comment": "# " + "x" * 200_000 + "\n" + RECORDING,
}


@pytest.mark.parametrize("text", TRICKY_OFF_CASES.values(), ids=TRICKY_OFF_CASES)
def test_off_changes_the_one_value_whichever_way_it_is_edited(config: Path, text: str) -> None:
    """``off`` rewrites the mode's value in the text when it can (a large file is not built
    into a document), else edits the document: the result is the same file either way."""
    write(config, text)
    set_record_replay(mode="off")
    edited = config.read_bytes()
    assert load_config().settings.record_replay.mode == "off"  # type: ignore[union-attr]
    assert edited.count(b"\n") == text.encode().count(b"\n")
    assert edited == text.encode().replace(b'"record"', b'"off"').replace(b"'record'", b'"off"')
