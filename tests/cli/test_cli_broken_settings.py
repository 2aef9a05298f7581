"""A ``record_replay.file`` that names no recording, and a configuration that cannot be read:
``status`` and ``off`` deal with the first, ``delete`` and ``prune`` never delete what the
second may name."""

from __future__ import annotations

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.config.settings import load_config
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file, write_config
from tests.support.recording_rows import write_recording


def test_in_mode_off_an_invalid_file_setting_is_a_note() -> None:
    write_config('[record_replay]\nmode = "off"\nfile = "bad name"\n')

    result = run("status")

    assert result.exit_code == 0, result.output
    assert "note:    record_replay.file: invalid recording name 'bad name'" in result.stdout
    assert "it does not matter while the mode is off" in result.stdout
    assert "problem:" not in result.stdout


def test_in_mode_replay_an_invalid_file_setting_is_a_problem_off_repairs() -> None:
    write_config('[record_replay]\nmode = "replay"\nfile = "bad name"\n')

    result = run("status")

    assert result.exit_code == 1
    assert "problem: record_replay.file: invalid recording name 'bad name'" in result.stdout
    assert "run `openprogram recordings off`" in result.stdout


@pytest.mark.parametrize("mode", ["off", "replay"])
def test_off_removes_an_invalid_file_setting_and_says_so(mode: str) -> None:
    original = f'# mine\n[record_replay]\nmode = "{mode}"\nfile = "bad name"\n\n[providers.x]\n'
    write_config(original + "timeout = 5\n")

    result = run("off")

    assert result.exit_code == 0, result.output
    assert "repaired" in result.stderr
    assert "removed record_replay.file (invalid recording name 'bad name'" in result.stderr
    assert config_file().read_text() == (
        '# mine\n[record_replay]\nmode = "off"\n\n[providers.x]\ntimeout = 5\n'
    )
    [backup] = config_file().parent.glob("config.toml.broken-*")
    assert backup.read_text() == original + "timeout = 5\n"
    assert run("status").exit_code == 0


def test_off_keeps_a_valid_file_setting() -> None:
    write_config('[record_replay]\nmode = "replay"\nfile = "demo"\n')

    assert run("off").exit_code == 0

    settings = load_config().settings
    assert settings is not None
    assert (settings.record_replay.mode, settings.record_replay.file) == ("off", "demo")
    assert list(config_file().parent.glob("config.toml.broken-*")) == []


BROKEN_VALUE = '[record_replay]\nmode = "replay"\nfile = "keep-me"\ncolour = "blue"\n'


@pytest.mark.parametrize("criteria", [["--keep", "0"], ["--older-than", "0"]])
def test_prune_keeps_what_a_broken_config_names(criteria: list[str]) -> None:
    write_recording("keep-me", calls=1, mtime=1_000_000)
    write_recording("other", calls=1, mtime=1_000_000)
    write_config(BROKEN_VALUE)

    result = run("prune", *criteria, "--yes")

    assert result.exit_code == 0, result.output
    assert sorted(path.stem for path in recordings_dir().glob("*.jsonl")) == ["keep-me"]


def test_prune_keeps_what_a_broken_variable_leaves_the_file_naming(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_recording("keep-me", calls=1)
    write_recording("from-env", calls=1)
    write_recording("other", calls=1)
    write_config('[record_replay]\nmode = "replay"\nfile = "keep-me"\n')
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "bogus")
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__FILE", "from-env")

    result = run("prune", "--keep", "0", "--yes")

    assert result.exit_code == 0, result.output
    assert sorted(path.stem for path in recordings_dir().glob("*.jsonl")) == ["from-env", "keep-me"]


@pytest.mark.parametrize(
    "text",
    ['[record_replay\nmode = "replay"\nfile = "keep-me"\n', "x = " + "[" * 300 + "]" * 300],
    ids=["not-toml", "nested-too-deeply"],
)
def test_prune_refuses_when_the_active_recording_is_unknown(text: str) -> None:
    write_recording("keep-me", calls=1)
    write_recording("other", calls=1)
    write_config(text)

    result = run("prune", "--keep", "0", "--yes")

    assert result.exit_code == 1
    line = error_line(result)
    assert "the active recording is unknown" in line
    assert "fix the configuration or run `openprogram recordings off` first" in line
    assert sorted(path.stem for path in recordings_dir().glob("*.jsonl")) == ["keep-me", "other"]


def test_prune_without_a_criterion_is_still_a_usage_error_with_a_broken_config() -> None:
    write_config("[record_replay\n")

    result = run("prune")

    assert result.exit_code == 2
    assert "prune needs a criterion" in error_line(result)


def test_delete_keeps_what_a_broken_config_names() -> None:
    write_recording("keep-me", calls=1)
    write_recording("other", calls=1)
    write_config(BROKEN_VALUE)

    refused = run("delete", "keep-me", "--yes")
    deleted = run("delete", "other", "--yes")

    assert refused.exit_code == 1
    assert "it is the active recording" in error_line(refused)
    assert deleted.exit_code == 0, deleted.output
    assert [path.stem for path in recordings_dir().glob("*.jsonl")] == ["keep-me"]


def test_delete_refuses_when_the_active_recording_is_unknown() -> None:
    write_recording("other", calls=1)
    write_config("[record_replay\n")

    result = run("delete", "other", "--yes")

    assert result.exit_code == 1
    assert "the active recording is unknown" in error_line(result)
    assert (recordings_dir() / "other.jsonl").exists()
