"""Values nested far too deeply — in a recording, the configuration or a variable — are one
problem named where it is, never a crash, and never break the rest of the store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.store.summary_cache import CACHE_FILE_NAME, load_summary_cache
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file, write_config
from tests.support.recording_rows import call_end, header, stored, write_recording, write_rows

Row = dict[str, Any]


def nested(depth: int) -> str:
    """JSON (and TOML) text of a value nested ``depth`` lists deep."""
    return "[" * depth + '"deep"' + "]" * depth


def deep_recording(name: str, depth: int = 300) -> Path:
    """``<store>/<name>.jsonl``: call 0's request holds a value nested ``depth`` levels."""
    request = (
        '{"type":"request","call_index":0,"model":{"id":"m1","api":"fake","provider":"fake"},'
        '"context":{"messages":[{"role":"user","content":"hi"}],"tools":null},'
        f'"options":{{"metadata":{{"x":{nested(depth)}}}}}}}'
    )
    return write_rows(stored(name), [header(name), request, call_end(0)])


@pytest.mark.parametrize("depth", [254, 300, 1000])
def test_list_marks_the_deep_file_invalid_and_lists_the_others(depth: int) -> None:
    write_recording("good", calls=2)
    deep_recording("deep", depth)

    for _ in range(2):  # the second listing comes from the summary cache
        result = run("list", "--json")

        assert result.exit_code == 0, result.output
        listed = {item["name"]: item for item in json.loads(result.stdout)}
        assert listed["good"]["valid"] is True
        assert listed["deep"]["valid"] is False
        assert listed["deep"]["problem"].startswith("line 2: nested deeper than 128 levels")

    human = run("list")
    assert human.exit_code == 0, human.output
    assert "INVALID: line 2: nested deeper" in human.stdout


def test_the_summary_cache_is_not_poisoned() -> None:
    write_recording("good", calls=1)
    deep = deep_recording("deep")
    assert run("list").exit_code == 0

    cached = load_summary_cache(recordings_dir())
    assert set(cached) == {str(recordings_dir() / "good.jsonl"), str(deep)}
    assert json.loads((recordings_dir() / CACHE_FILE_NAME).read_text())["entries"]

    write_recording("deep", calls=1)  # repaired: read afresh, valid
    result = run("list", "--json")
    assert {item["name"]: item["valid"] for item in json.loads(result.stdout)} == {
        "good": True,
        "deep": True,
    }


def test_prune_keep_works_beside_a_deep_file() -> None:
    write_recording("old", calls=1, created_at="2020-01-01T00:00:00Z")
    write_recording("new", calls=1, created_at="2026-01-01T00:00:00Z")
    deep_recording("deep")  # created now: the newest

    result = run("prune", "--keep", "2", "--yes")

    assert result.exit_code == 0, result.output
    assert sorted(path.stem for path in recordings_dir().glob("*.jsonl")) == ["deep", "new"]


@pytest.mark.parametrize("command", [["show"], ["show", "--json"], ["verify"], ["replay"]])
def test_reading_commands_exit_2_with_one_line(command: list[str]) -> None:
    deep = deep_recording("deep")

    result = run(command[0], "deep", *command[1:])

    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert f"{deep}, line 2: nested deeper than 128 levels" in error_line(result)


def test_diff_exits_2_with_one_line() -> None:
    write_recording("good", calls=1)
    deep = deep_recording("deep")

    result = run("diff", "good", "deep")

    assert result.exit_code == 2, result.output
    assert f"{deep}, line 2: nested deeper than 128 levels" in error_line(result)


def test_status_names_a_deep_replay_recording() -> None:
    write_recording("deep", calls=1)
    assert run("replay", "deep").exit_code == 0
    deep = deep_recording("deep")

    result = run("status")

    assert result.exit_code == 1, result.output
    assert f"problem: {deep}, line 2: nested deeper than 128 levels" in result.stdout


@pytest.mark.parametrize("depth", [200, 500, 3000])
def test_a_deeply_nested_config_is_a_broken_config_and_off_repairs_it(depth: int) -> None:
    original = f'[record_replay]\nmode = "replay"\nfile = "demo"\n\n[extra]\nx = {nested(depth)}\n'
    write_config(original)

    status = run("status")

    assert status.exit_code == 1, status.output
    assert f"problem: {config_file()}, line 6" in status.stdout
    assert "nested deeper than 128 levels" in status.stdout

    off = run("off")

    assert off.exit_code == 0, off.output
    assert "started a fresh file with mode off" in off.stderr
    [backup] = config_file().parent.glob("config.toml.broken-*")
    assert backup.read_text() == original
    assert run("status").exit_code == 0


def test_the_key_that_is_too_deep_is_named() -> None:
    write_config(f"[providers.x]\ntimeout = 5\nodd = {nested(200)}\n")

    result = run("status", "--json")

    assert result.exit_code == 1
    [problem] = json.loads(result.stdout)["problems"]
    assert problem.startswith(f"{config_file()}, line 3: providers.x.odd: nested deeper than 128")


@pytest.mark.parametrize("depth", [200, 3000])
@pytest.mark.parametrize(
    "variable", ["OPENPROGRAM_PROVIDERS", "OPENPROGRAM_RECORD_REPLAY", "OPENPROGRAM_PROVIDERS__X"]
)
def test_a_deeply_nested_variable_is_reported_not_a_crash(
    monkeypatch: pytest.MonkeyPatch, variable: str, depth: int
) -> None:
    monkeypatch.setenv(variable, nested(depth))

    result = run("status")

    assert result.exit_code == 1, result.output
    assert f"problem: {variable}: nested deeper than 128 levels" in result.stdout
    assert f"unset {variable} or fix its value" in result.stdout
    assert run("off").exit_code == 0
