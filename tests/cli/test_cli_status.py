"""``openprogram recordings status``: what is configured, whether it would work, what to do."""

from __future__ import annotations

import json

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.recording.format import new_header
from tests.support.cli_runner import run
from tests.support.config_files import config_file
from tests.support.recording_rows import (
    Row,
    call_rows,
    write_corrupt_recording,
    write_other_version_recording,
    write_recording,
    write_rows,
)


def test_without_a_config_the_mode_is_off_and_the_config_path_is_named() -> None:
    result = run("status")

    assert result.exit_code == 0, result.stderr
    assert "mode:    off" in result.stdout
    assert f"config:  {config_file()} [from OPENPROGRAM_HOME]" in result.stdout
    assert "not created yet: defaults apply" in result.stdout
    assert result.stderr == ""


def test_record_mode_with_a_valid_recording() -> None:
    assert run("record", "demo").exit_code == 0

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert "mode:    record" in result.stdout
    assert f"file:    {recordings_dir() / 'demo.jsonl'} (valid, 0 calls, format 2)" in result.stdout
    assert "changes take effect at the next start of a process" in result.stdout
    assert "problem:" not in result.stdout


def test_record_mode_into_a_recording_that_holds_calls_says_they_are_appended() -> None:
    write_recording("demo", calls=2)
    assert run("replay", "demo").exit_code == 0
    config_file().write_text('[record_replay]\nmode = "record"\nfile = "demo"\n')

    result = run("status")

    assert result.exit_code == 0
    assert "already holds 2 calls: new calls are appended" in result.stdout


def test_replay_mode_with_a_valid_recording() -> None:
    write_recording("demo", calls=3)
    assert run("replay", "demo").exit_code == 0

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert "mode:    replay" in result.stdout
    assert f"{recordings_dir() / 'demo.jsonl'} (valid, 3 calls, format 2)" in result.stdout


def test_replay_mode_names_the_sessions_a_recording_holds() -> None:
    second = call_rows(1)
    second[-1] = {**second[-1], "new_session": True}  # its call_end: a second session began
    rows: list[Row] = [new_header("demo"), *call_rows(0), *second, *call_rows(2)]
    write_rows(recordings_dir() / "demo.jsonl", rows)
    assert run("replay", "demo").exit_code == 0

    result = run("status")

    assert "(valid, 3 calls in 2 sessions, format 2)" in result.stdout
    assert json.loads(run("status", "--json").stdout)["recording"]["sessions"] == 2


def test_replay_mode_with_a_missing_recording_exits_1_and_says_how_to_recover() -> None:
    write_recording("demo")
    assert run("replay", "demo").exit_code == 0
    (recordings_dir() / "demo.jsonl").unlink()

    result = run("status")

    assert result.exit_code == 1
    assert "(missing)" in result.stdout
    assert f"problem: the replay recording {recordings_dir() / 'demo.jsonl'} does not exist" in (
        result.stdout
    )
    assert "`openprogram recordings off`" in result.stdout
    assert "Traceback" not in result.output


def test_replay_mode_with_a_corrupt_recording_names_the_file_and_line() -> None:
    write_recording("demo")
    assert run("replay", "demo").exit_code == 0
    write_corrupt_recording(recordings_dir() / "demo.jsonl")

    result = run("status")

    assert result.exit_code == 1
    assert "(INVALID)" in result.stdout
    assert f"problem: {recordings_dir() / 'demo.jsonl'}, line 3: not valid JSON" in result.stdout
    assert "run `openprogram recordings off`" in result.stdout


def test_replay_mode_with_a_recording_of_another_format_version() -> None:
    write_recording("demo")
    assert run("replay", "demo").exit_code == 0
    write_other_version_recording(recordings_dir() / "demo.jsonl")

    result = run("status")

    assert result.exit_code == 1
    assert "format_version 99, but this openprogram reads format_version 1" in result.stdout
    assert "run `openprogram recordings off`" in result.stdout


def test_a_config_that_is_not_toml_is_named_with_its_line() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text('[record_replay]\nmode = "record"\nfile = [\n')

    result = run("status")

    assert result.exit_code == 1
    assert "mode:    unknown (the config is broken)" in result.stdout
    assert f"problem: {config_file()}, line 3: not valid TOML" in result.stdout
    assert "not valid TOML" in result.stdout
    assert "`openprogram recordings off`" in result.stdout


def test_an_invalid_value_in_the_config_is_named_with_its_line_and_key() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text('# comment\n[record_replay]\nmode = "sometimes"\n')

    result = run("status")

    assert result.exit_code == 1
    assert f"problem: {config_file()}, line 3" in result.stdout
    assert "record_replay.mode" in result.stdout
    assert "'sometimes'" in result.stdout


def test_mode_on_without_a_file_is_broken() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text('[record_replay]\nmode = "replay"\n')

    result = run("status")

    assert result.exit_code == 1
    assert "record_replay.mode is 'replay' but record_replay.file is not set" in result.stdout


def test_an_environment_override_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    write_recording("demo")
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "replay")
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__FILE", "demo")

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert "mode:    replay" in result.stdout
    assert "override: OPENPROGRAM_RECORD_REPLAY__MODE=replay" in result.stdout
    assert "override: OPENPROGRAM_RECORD_REPLAY__FILE=demo" in result.stdout
    assert "OPENPROGRAM_RECORD_REPLAY__MODE=replay forces the mode" in result.stdout


def test_an_invalid_environment_override_is_a_broken_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "bogus")

    result = run("status")

    assert result.exit_code == 1
    assert "problem: OPENPROGRAM_RECORD_REPLAY__MODE=bogus: must be one of off, record, replay" in (
        result.stdout
    )


def test_an_invalid_environment_override_is_not_blamed_on_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "bogus")

    result = run("status")

    assert result.exit_code == 1
    assert "fix the file" not in result.stdout
    assert "unset OPENPROGRAM_RECORD_REPLAY__MODE" in result.stdout


def test_json_output_parses_and_has_the_mode_broken_flag_and_recording() -> None:
    write_recording("demo", calls=2, truncated=True)
    assert run("replay", "demo").exit_code == 0

    result = run("status", "--json")

    assert result.exit_code == 0, result.stdout
    report = json.loads(result.stdout)
    assert report["mode"] == "replay"
    assert report["broken"] is False
    assert report["file_setting"] == "demo"
    assert report["config_path"] == str(config_file())
    assert report["config_source"] == "OPENPROGRAM_HOME"
    assert report["recording"] == {
        "path": str(recordings_dir() / "demo.jsonl"),
        "exists": True,
        "valid": True,
        "calls": 2,
        "truncated_calls": [1],
        "format_version": 2,
        "problem": None,
        "not_recorded": [],
        "sessions": 1,
        "link": None,
    }


def test_json_output_of_a_broken_state_exits_1() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text("mode = \n")

    result = run("status", "--json")

    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["broken"] is True
    assert report["mode"] is None
    assert report["recording"] is None
    assert str(config_file()) in report["problems"][0]


def test_a_truncated_call_is_noted() -> None:
    write_recording("demo", calls=2, truncated=True)
    assert run("replay", "demo").exit_code == 0

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert "(valid, 2 calls, format 2, call 1 truncated)" in result.stdout
    assert "call 1 was cut short: replay fails when it reaches it" in result.stdout


def write_crashed_then_appended(name: str, *, cut: tuple[int, ...] = (3,), calls: int = 8) -> None:
    """A session cut short at call ``cut`` (a crash), then another session appended after it."""
    rows: list[Row] = [new_header(name)]
    for index in range(calls):
        rows += call_rows(index, outcome=None if index in cut else "complete")
    write_rows(recordings_dir() / f"{name}.jsonl", rows)


@pytest.mark.parametrize("mode", ["replay", "record"])
def test_a_call_cut_short_with_calls_after_it_is_named(mode: str) -> None:
    write_crashed_then_appended("demo")
    config_file().parent.mkdir(parents=True, exist_ok=True)
    config_file().write_text(f'[record_replay]\nmode = "{mode}"\nfile = "demo"\n')

    result = run("status")

    assert result.exit_code == 0, result.output
    assert "call 3 was cut short; calls 4..7 follow it" in result.stdout
    assert "(valid, 8 calls, format 2, call 3 truncated)" in result.stdout
    report = json.loads(run("status", "--json").stdout)
    assert any("call 3 was cut short; calls 4..7 follow it" in note for note in report["notes"])


def test_one_call_after_the_cut_is_one_call() -> None:
    write_crashed_then_appended("demo", cut=(1,), calls=3)
    assert run("replay", "demo").exit_code == 0

    result = run("status")

    assert "call 1 was cut short; call 2 follows it: replay fails when it reaches it" in (
        result.stdout
    )


def test_every_call_cut_short_is_named() -> None:
    write_crashed_then_appended("demo", cut=(1, 4), calls=6)
    assert run("replay", "demo").exit_code == 0

    result = run("status")

    assert "call 1 was cut short; calls 2..5 follow it (also cut short: 4)" in result.stdout


def test_record_mode_appending_to_one_call_says_call_not_calls() -> None:
    write_recording("demo", calls=1)
    config_file().parent.mkdir(parents=True, exist_ok=True)
    config_file().write_text('[record_replay]\nmode = "record"\nfile = "demo"\n')

    result = run("status")

    assert "the recording already holds 1 call: new calls are appended" in result.stdout
