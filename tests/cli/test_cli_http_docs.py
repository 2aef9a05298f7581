"""docs/cli.md shows ``show`` and ``diff`` on a recording of SDK traffic as they print."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import run
from tests.support.http_call_rows import write_calls
from tests.support.vendor_http_rows import documented_agent, documented_agent_2

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def documented(command: str) -> list[str]:
    """The output lines docs/cli.md shows under ``$ command``."""
    match = re.search(rf"```sh\n\$ {re.escape(command)}\n(.*?)```", CLI_DOC.read_text(), re.DOTALL)
    assert match is not None, f"docs/cli.md shows no run of `{command}`"
    return match.group(1).splitlines()


def test_show_of_an_sdk_recording_is_as_documented() -> None:
    path = write_calls(recordings_dir() / "agent.jsonl", *documented_agent())

    result = run("show", "agent")

    assert result.exit_code == 0, result.stderr
    shown = documented("openprogram recordings show agent")
    assert shown[0] == result.stderr.rstrip("\n")  # the privacy warning
    assert shown[1] == "/tmp/demo/.openprogram/recordings/agent.jsonl: 5 calls"
    assert result.stdout.splitlines() == [f"{path}: 5 calls", *shown[2:]]


def test_diff_of_two_sdk_recordings_is_as_documented(tmp_path: Path) -> None:
    write_calls(tmp_path / "agent.jsonl", *documented_agent())
    write_calls(tmp_path / "agent-2.jsonl", *documented_agent_2())

    result = run("diff", str(tmp_path / "agent.jsonl"), str(tmp_path / "agent-2.jsonl"))

    assert result.exit_code == 1
    assert result.stdout.splitlines() == documented(
        "openprogram recordings diff agent.jsonl agent-2.jsonl"
    )


def test_list_of_an_sdk_recording_is_as_documented(monkeypatch: pytest.MonkeyPatch) -> None:
    write_calls(recordings_dir() / "agent.jsonl", *documented_agent())
    monkeypatch.setenv("COLUMNS", "160")  # the documented terminal: the models whole

    listed = run("list").stdout

    (row,) = [line for line in CLI_DOC.read_text().splitlines() if line.startswith("*  agent ")]
    name, _, _, calls, size, unit, *models, state, short_hash = row.split()[1:]
    assert (name, calls, state) == ("agent", "5", "valid")
    assert " ".join(models) in " ".join(listed.split())
    assert short_hash in listed
    assert f"{size} {unit}" in listed
