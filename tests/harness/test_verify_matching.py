"""``verify`` pairs requests with recorded calls as replay does: by content unless the
configuration's ``record_replay.match`` says ``order`` — a re-run session (the agent loop)
and a command run under replay alike."""

from __future__ import annotations

import asyncio
import copy
import sys
from pathlib import Path

import orjson
import pytest

import openprogram
from tests.support.cli_runner import run
from tests.support.config_files import write_config
from tests.support.gathered_agents import PROVIDER_AGENTS_PROGRAM, provider_agents
from tests.support.recording_rows import write_rows
from tests.support.tool_sessions import record_agent_session

ORDER = '[record_replay]\nmatch = "order"\n'


@pytest.fixture
def gathered(tmp_path: Path) -> tuple[Path, Path]:
    """A recording of sub-agents A (the slower) and B, and the program that runs them."""
    path = tmp_path / "gathered.jsonl"
    with openprogram.record_replay(path, mode="record"):
        asyncio.run(provider_agents({"A": 0.03, "B": 0.0}))
    program = tmp_path / "agents.py"
    program.write_text(PROVIDER_AGENTS_PROGRAM)
    return path, program


def test_a_command_whose_concurrent_calls_arrive_in_another_order_verifies(
    gathered: tuple[Path, Path],
) -> None:
    path, program = gathered
    result = run("verify", str(path), "--", sys.executable, str(program), "A=0", "B=0.03")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"✔ {path}: 6 calls replayed and matched\n")


def test_under_order_matching_the_same_command_fails_at_its_first_call(
    gathered: tuple[Path, Path],
) -> None:
    path, program = gathered
    write_config(ORDER)
    result = run("verify", str(path), "--", sys.executable, str(program), "A=0", "B=0.03")
    assert result.exit_code == 1
    assert (
        "replay mismatch at call 0, field context.messages[0].content:\n"
        "recorded 'B start', incoming 'A start'"
    ) in result.stdout


def with_a_side_call(path: Path) -> None:
    """Put another provider call between the two calls of the recorded session, as if a
    concurrent task had made it."""
    header, *rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    first = [row for row in rows if row["call_index"] == 0]
    second = [row for row in rows if row["call_index"] == 1]
    side = copy.deepcopy(first)
    side[0]["context"]["messages"][0]["content"] = "summarize the chat so far"
    for row in second:
        row["call_index"] = 2
    for row in side:
        row["call_index"] = 1
    write_rows(path, [header, *first, *side, *second])


def test_a_rebuilt_session_is_matched_by_content_unless_configured_by_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("hello\n")
    path = tmp_path / "session.jsonl"
    record_agent_session(path, '/tool read_file {"path": "notes.txt"}')
    with_a_side_call(path)

    by_content = run("verify", str(path))
    write_config(ORDER)
    by_order = run("verify", str(path))

    assert by_content.exit_code == by_order.exit_code == 1
    assert "replay incomplete: 1 of 3 recorded calls never requested (call 1)" in (
        by_content.stdout
    )
    assert "replay mismatch at call 1, field context.messages[0].content:" in by_order.stdout
