"""``openprogram run --tool-policy`` and ``recordings verify --tool-policy``: the recorded
session's tools replayed from their tapes, checked, or run live."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_lines, next_start, openprogram
from tests.support.config_files import write_config

READ_X = '/tool read_file {"path": "x.txt"}'


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A session reading x.txt recorded as ``s1`` and replayed from the next start; then
    x.txt changes, so the tool's live result is no longer the recorded one."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "x.txt").write_text("contents of x\n")
    monkeypatch.chdir(folder)
    assert openprogram("recordings", "record", "s1").exit_code == 0
    next_start()
    assert openprogram("run", READ_X).exit_code == 0
    next_start()
    assert openprogram("recordings", "replay", "s1").exit_code == 0
    next_start()
    (folder / "x.txt").write_text("changed\n")
    return folder


def test_replay_serves_the_taped_result_so_the_changed_file_does_not_matter(
    recorded: Path,
) -> None:
    result = openprogram("run", READ_X, "--tool-policy", "replay")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo:contents of x\n"


def test_live_runs_the_tool_and_the_next_request_drifts(recorded: Path) -> None:
    result = openprogram("run", READ_X)
    assert result.exit_code == 1
    assert error_lines(result) == [
        "error: replay mismatch at call 1, field context.messages[2].content[0].text:"
    ]


def test_check_names_the_tool_result_that_differs(recorded: Path) -> None:
    result = openprogram("run", READ_X, "--tool-policy", "read_file=check")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-2:] == [
        "error: replay mismatch at tape tool:read_file[0], field result.text:",
        "recorded 'contents of x\\n', incoming 'changed\\n'",
    ]


def test_the_configured_policy_applies_and_the_flag_overrides_it(recorded: Path) -> None:
    path = recordings_dir() / "s1.jsonl"
    write_config(
        f'[record_replay]\nmode = "replay"\nfile = "{path}"\n[record_replay.tools]\n'
        '"*" = "replay"\n'
    )
    next_start()
    assert openprogram("run", READ_X).exit_code == 0
    next_start()
    assert openprogram("run", READ_X, "--tool-policy", "live").exit_code == 1


def test_verify_takes_the_same_setting(recorded: Path) -> None:
    failed = openprogram("recordings", "verify", "s1")
    assert failed.exit_code == 1
    passed = openprogram("recordings", "verify", "s1", "--tool-policy", "replay")
    assert passed.exit_code == 0, passed.output
    assert passed.stdout.startswith(f"✔ {recordings_dir() / 's1.jsonl'}: 2 calls replayed")


def test_a_bad_policy_is_a_usage_error(recorded: Path) -> None:
    result = openprogram("run", READ_X, "--tool-policy", "read_file=sometimes")
    assert result.exit_code == 2
    assert error_lines(result) == [
        "error: --tool-policy: tool 'read_file': unknown policy 'sometimes'; a tool's policy "
        "is live, replay, check"
    ]


def test_verify_check_names_the_tool_result_that_differs(recorded: Path) -> None:
    result = openprogram("recordings", "verify", "s1", "--tool-policy", "check")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1:] == [
        "replay mismatch at tape tool:read_file[0], field result.text:",
        "recorded 'contents of x\\n', incoming 'changed\\n'",
    ]


def test_replay_of_a_recording_without_tool_tapes_says_record_again(recorded: Path) -> None:
    path = recordings_dir() / "s1.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for line in lines if b'"tape":"tool:' not in line))
    next_start()
    result = openprogram("run", READ_X, "--tool-policy", "replay")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"tool 'read_file' is to be replayed with policy 'replay', but {path} holds no tool "
        "results (it was recorded before agent tools were taped): record again"
    )
