"""``openprogram recordings show``: each call of a real echo tool session, as a person reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import error_line, run
from tests.support.recording_rows import write_corrupt_recording, write_recording
from tests.support.tool_sessions import record_tool_session_as_configured

PRIVACY = "warning: recordings may hold personal data"


@pytest.fixture
def demo() -> Path:
    """Two calls: the echo model asks for ``lookup``, the tool answers, the model replies."""
    return record_tool_session_as_configured("demo")


def test_show_renders_each_call(demo: Path) -> None:
    result = run("show", "demo")

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{demo}: 2 calls"
    assert lines[1] == f"transcript hash: {transcript_hash(read_recording(demo))}"
    lines = lines[1:]
    assert lines[1].startswith("call 0  echo:echo  ")
    assert "toolUse" in lines[1]
    assert "tokens: 6 in, 3 out" in lines[1]
    assert lines[2:4] == ['  > user: /tool lookup {"q": "x"}', '  < tool call lookup {"q": "x"}']
    assert lines[4].startswith("call 1  echo:echo  ")
    assert "tokens: 8 in, 4 out" in lines[4]
    assert lines[5:] == ["  > toolResult: lookup → result-x", "  < echo:result-x"]


def test_show_warns_about_personal_data_on_stderr(demo: Path) -> None:
    result = run("show", "demo")

    assert result.stderr.startswith(PRIVACY)
    assert result.stderr.count("\n") == 1
    assert "personal data" not in result.stdout


def test_show_one_call(demo: Path) -> None:
    result = run("show", "demo", "--call", "1")

    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"{demo}: call 1 of 2"
    assert lines[1].startswith("transcript hash: ")
    assert lines[2].startswith("call 1  echo:echo  ")
    assert lines[3:] == ["  > toolResult: lookup → result-x", "  < echo:result-x"]


@pytest.mark.parametrize("call", ["9", "-1"])
def test_a_call_out_of_range_exits_2(demo: Path, call: str) -> None:
    result = run("show", "demo", "--call", call)

    assert result.exit_code == 2
    assert f"{demo} has no call {call}; it holds 2 calls: choose 0 to 1" in error_line(result)
    assert result.stdout == ""


def test_show_json(demo: Path) -> None:
    result = run("show", "demo", "--json")

    assert result.exit_code == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["path"] == str(demo)
    assert shown["transcript_hash"] == transcript_hash(read_recording(demo))
    assert shown["total_calls"] == 2
    first, second = shown["calls"]
    assert first["model"] == "echo:echo"
    assert (first["input_role"], first["input_text"]) == ("user", '/tool lookup {"q": "x"}')
    assert first["tool_calls"] == [{"name": "lookup", "arguments": {"q": "x"}}]
    assert first["stop_reason"] == "toolUse"
    assert first["usage"]["input"] == 6
    assert second["input_role"] == "toolResult"
    assert second["input_text"] == "lookup → result-x"
    assert second["reply_text"] == "echo:result-x"
    assert (second["stop_reason"], second["outcome"], second["truncated"]) == (
        "stop",
        "complete",
        False,
    )
    assert second["usage"]["output"] == 4
    assert result.stderr.startswith(PRIVACY)  # JSON on stdout stays clean


def test_show_by_path(demo: Path) -> None:
    result = run("show", str(demo), "--call", "0")

    assert result.exit_code == 0
    assert "  < tool call lookup" in result.stdout


def test_a_truncated_call_is_marked() -> None:
    write_recording("cut", calls=2, truncated=True)

    result = run("show", "cut")

    assert result.exit_code == 0, result.stderr
    assert "call 1  fake:m1  TRUNCATED after 5 events" in result.stdout


def test_an_empty_recording_says_so() -> None:
    assert run("record", "empty").exit_code == 0

    result = run("show", "empty")

    assert result.exit_code == 0
    assert result.stdout.endswith("(no calls recorded yet)\n")


def test_a_corrupt_recording_exits_2() -> None:
    path = write_corrupt_recording(recordings_dir() / "bad.jsonl")

    result = run("show", "bad")

    assert result.exit_code == 2
    assert f"error: {path}, line 3: not valid JSON" in error_line(result)
    assert result.stdout == ""


def test_a_missing_recording_exits_2() -> None:
    result = run("show", "nothere")

    assert result.exit_code == 2
    assert "nothere.jsonl: no such recording" in error_line(result)


def test_the_stop_reason_reads_clearly(demo: Path) -> None:
    result = run("show", "demo", "--call", "1")

    assert "stop stop" not in result.stdout
