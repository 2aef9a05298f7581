"""Help, version, and how errors leave the CLI: one line, the right code, text kept literal."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram import __version__
from openprogram.config.paths import recordings_dir
from openprogram.recording.format import encode_row, new_header
from tests.support.cli_runner import error_line, openprogram, run
from tests.support.recording_rows import write_recording, write_rows

COMMANDS = ("status", "record", "replay", "off", "list", "show", "delete", "prune")


def test_help_and_version() -> None:
    root = openprogram("--help")
    assert root.exit_code == 0
    assert "recordings" in root.stdout

    group = openprogram("recordings", "--help")
    assert group.exit_code == 0
    for command in COMMANDS:
        assert command in group.stdout

    version = openprogram("--version")
    assert version.exit_code == 0
    assert version.stdout == f"openprogram {__version__}\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    result = run(command, "--help")

    assert result.exit_code == 0
    assert f"Usage: openprogram recordings {command}" in " ".join(result.stdout.split())


def test_an_unknown_command_exits_2() -> None:
    result = openprogram("recordings", "bogus")

    assert result.exit_code == 2
    assert "No such command 'bogus'" in result.stderr


def test_no_traceback_without_debug() -> None:
    result = run("replay", "nothere")

    assert result.exit_code == 2
    error_line(result)
    assert "Traceback" not in result.output


def test_debug_adds_the_traceback_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_DEBUG", "1")

    result = run("replay", "nothere")

    assert result.exit_code == 2
    assert "Traceback (most recent call last)" in result.stderr
    assert "RecordingFileError" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in result.stdout


def test_debug_without_an_exception_prints_no_stray_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_recording("old")
    monkeypatch.setenv("OPENPROGRAM_DEBUG", "1")

    result = run("delete", "old")

    assert result.exit_code == 2
    assert "NoneType" not in result.stderr


def test_a_malformed_option_value_is_one_line() -> None:
    result = run("prune", "--keep", "many")

    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1


# --- brackets are text, not rich markup ----------------------------------------------------

BRACKETS = "[secret removed]"


@pytest.fixture
def bracketed_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """OPENPROGRAM_HOME in a folder whose name holds brackets rich would read as markup."""
    home = tmp_path / f"home {BRACKETS}"
    monkeypatch.setenv("OPENPROGRAM_HOME", str(home))
    return home


def test_an_error_message_keeps_its_brackets(bracketed_home: Path) -> None:
    result = run("replay", "nothere")

    assert result.exit_code == 2
    assert f"error: {bracketed_home}/recordings/nothere.jsonl: no such recording" in (
        error_line(result)
    )


def test_an_error_quoting_a_value_keeps_its_brackets() -> None:
    path = write_rows(
        recordings_dir() / "bad.jsonl",
        [new_header("bad"), {"type": "request", "call_index": "messages[2] [secret removed]"}],
    )

    result = run("show", "bad")

    assert result.exit_code == 2
    assert f"{path}, line 2:" in error_line(result)
    assert "'messages[2] [secret removed]'" in error_line(result)


def test_status_keeps_brackets(bracketed_home: Path) -> None:
    result = run("status")

    assert result.exit_code == 0
    assert f"config:  {bracketed_home}/config.toml" in result.stdout


def test_show_keeps_brackets_in_the_recorded_text() -> None:
    request = {
        "type": "request",
        "call_index": 0,
        "model": {"id": "m1", "api": "fake", "provider": "fake"},
        "context": {"messages": [{"role": "user", "content": f"look at messages[2] {BRACKETS}"}]},
        "options": {},
    }
    end = {"type": "call_end", "call_index": 0, "event_count": 0, "outcome": "complete"}
    write_rows(recordings_dir() / "b.jsonl", [new_header("b"), request, end])

    result = run("show", "b")

    assert result.exit_code == 0, result.stderr
    assert f"  > user: look at messages[2] {BRACKETS}" in result.stdout


def _bracketed_output(command: str, home: Path) -> tuple[str, str]:
    """Run ``command`` with brackets in a path it prints; (stdout, the text it must hold)."""
    recordings = home / "recordings"
    if command == "list-empty":
        return run("list").stdout, str(recordings)
    if command == "record":
        return run("record", "r").stdout, str(recordings / "r.jsonl")
    recordings.mkdir(parents=True)
    (recordings / "r.jsonl").write_bytes(encode_row(new_header("r")))
    if command == "replay":
        return run("replay", "r").stdout, str(recordings / "r.jsonl")
    if command == "show":
        return run("show", "r").stdout, str(recordings / "r.jsonl")
    if command == "delete":
        return run("delete", "r", "--yes").stdout, str(recordings / "r.jsonl")
    assert command == "prune"
    return run("prune", "--keep", "0", "--dry-run").stdout, str(recordings / "r.jsonl")


@pytest.mark.parametrize("command", ["list-empty", "record", "replay", "show", "delete", "prune"])
def test_printed_paths_keep_their_brackets(command: str, bracketed_home: Path) -> None:
    stdout, expected = _bracketed_output(command, bracketed_home)

    assert expected in stdout


def test_list_keeps_brackets_in_models_and_problems() -> None:
    write_recording("m", calls=1, model_id=f"m{BRACKETS}")
    write_rows(
        recordings_dir() / "bad.jsonl",
        [new_header("bad"), {"type": "request", "call_index": "[x]"}],
    )

    result = run("list")

    assert result.exit_code == 0
    assert f"fake:m{BRACKETS}" in result.stdout
    assert "found '[x]'" in result.stdout
