"""Agent tools on tapes: taped under record; replayed live, from the tape, or checked."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import orjson
import pytest

import openprogram
from openprogram import record_replay
from openprogram.agent import AgentRun, run_agent, tool
from openprogram.errors import ReplayMismatch, ToolTapesMissingError
from openprogram.providers import ECHO_MODEL
from openprogram.recording.tape_replay import ToolPolicies, parse_tool_policies

PROMPT = '/tool stamp {"label": "build"}'
state: dict[str, Any] = {"runs": 0, "suffix": ""}


@tool
def stamp(label: str) -> str:
    """Stamp a label with the time."""
    state["runs"] += 1
    return f"{label} at {openprogram.now():.0f}{state['suffix']}"


@pytest.fixture(autouse=True)
def _fresh_state() -> None:
    state.update(runs=0, suffix="")


def session() -> AgentRun:
    return asyncio.run(run_agent(ECHO_MODEL, PROMPT, tools=[stamp]))


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "agent.jsonl"
    with record_replay(path, mode="record"):
        text = session().final.content[0].text  # type: ignore[union-attr]
    state["runs"] = 0
    return path, text


def tape_rows(path: Path) -> list[dict[str, Any]]:
    rows = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [row for row in rows if row["type"] == "tape"]


def test_record_tapes_what_the_model_reads_and_what_ran_inside(recorded: tuple[Path, str]) -> None:
    path, text = recorded
    assert text.startswith("echo:build at ")
    now, tool_row = tape_rows(path)
    assert now["tape"] == "openprogram.now"
    assert now["within"] == "tool:stamp"  # read while the tool ran
    assert tool_row == {
        "type": "tape",
        "tape": "tool:stamp",
        "args": {"label": "build"},
        "result": {"text": text.removeprefix("echo:"), "is_error": False},
    }


def test_live_runs_the_tool_and_ignores_its_tape(recorded: tuple[Path, str]) -> None:
    path, text = recorded
    with record_replay(path, mode="replay"):
        assert session().final.content[0].text == text  # type: ignore[union-attr]
    assert state["runs"] == 1


def test_replay_serves_the_taped_result_without_running_the_tool(
    recorded: tuple[Path, str],
) -> None:
    path, text = recorded
    state["suffix"] = " (changed)"
    with record_replay(path, mode="replay", tools={"stamp": "replay"}):
        assert session().final.content[0].text == text  # type: ignore[union-attr]
    assert state["runs"] == 0  # nor the clock it read inside: that entry is not required


def test_check_runs_the_tool_and_fails_after_with_the_first_differing_entry(
    recorded: tuple[Path, str],
) -> None:
    path, text = recorded
    state["suffix"] = " (changed)"
    live = text.removeprefix("echo:") + " (changed)"
    with (
        pytest.raises(ReplayMismatch) as info,
        record_replay(path, mode="replay", tools={"*": "check"}),
        contextlib.suppress(ReplayMismatch),  # the next model request differs too
    ):
        session()
    assert state["runs"] == 1
    assert str(info.value) == (
        "replay mismatch at tape tool:stamp[0], field result.text:\n"
        f"recorded {text.removeprefix('echo:')!r}, incoming {live!r}"
    )


def test_check_passes_when_the_live_result_is_the_taped_one(recorded: tuple[Path, str]) -> None:
    path, text = recorded
    with record_replay(path, mode="replay", tools={"*": "check"}):
        assert session().final.content[0].text == text  # type: ignore[union-attr]
    assert state["runs"] == 1


def test_replay_on_a_recording_without_tool_tapes_says_record_again(
    recorded: tuple[Path, str],
) -> None:
    path, _ = recorded
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(line for line in lines if b'"tool:stamp"' not in line))
    for policy in ("replay", "check"):
        with (
            pytest.raises(ToolTapesMissingError) as info,
            record_replay(path, mode="replay", tools={"stamp": policy}),
        ):
            session()
        assert str(info.value).endswith(
            f"tool 'stamp' is to be replayed with policy {policy!r}, but {path} holds no tool "
            "results (it was recorded before agent tools were taped): record again"
        )
        assert str(info.value).startswith("replay mismatch at tape tool:stamp[0], field tape:")


def test_a_tool_replayed_from_its_tape_whose_arguments_differ_is_a_mismatch(
    recorded: tuple[Path, str],
) -> None:
    path, _ = recorded
    text = path.read_text().replace('"args":{"label":"build"}', '"args":{"label":"other"}')
    path.write_text(text)
    with (
        pytest.raises(ReplayMismatch) as info,
        record_replay(path, mode="replay", tools={"stamp": "replay"}),
    ):
        session()
    assert str(info.value) == (
        "replay mismatch at tape tool:stamp[0], field args.label:\n"
        "recorded 'other', incoming 'build'"
    )
    assert state["runs"] == 0


def test_policies_by_name_then_star_then_live() -> None:
    policies = ToolPolicies({"stamp": "check", "*": "replay"})
    assert (policies.policy_for("stamp"), policies.policy_for("other")) == ("check", "replay")
    assert ToolPolicies().policy_for("any") == "live"
    assert parse_tool_policies(["replay", "stamp=check"]) == {"*": "replay", "stamp": "check"}
    with pytest.raises(ValueError, match="unknown policy 'sometimes'"):
        parse_tool_policies(["stamp=sometimes"])
