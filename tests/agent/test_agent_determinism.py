"""The same session makes the same requests, so it replays with no mismatch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openprogram.agent import AgentRun, builtin_tools, run_agent, tool
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    Model,
    RecordingProvider,
    ReplayProvider,
    get_api_provider,
    provider_scope,
    register_api_provider,
)
from openprogram.recording.difference import find_first_difference
from tests.support.scripted_provider import FAKE_MODEL, ScriptedProvider, call, text


@tool
def word_count(text: str) -> dict[str, Any]:
    """Count the words of a text."""
    return {"words": len(text.split()), "text": text}


async def session(root: Path, model: Model, prompt: str) -> AgentRun:
    return await run_agent(
        model,
        prompt,
        system_prompt="You are a careful agent.",
        tools=[word_count, *builtin_tools(root)],
    )


async def record(path: Path, root: Path, model: Model, prompt: str) -> AgentRun:
    with provider_scope():
        register_api_provider(model.api, RecordingProvider(get_api_provider(model.api), path))
        return await session(root, model, prompt)


def requests(path: Path) -> list[dict[str, Any]]:
    return [recorded.request for recorded in read_recording(path).calls]


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n\nA small project.\n")
    return root


async def test_two_runs_of_one_echo_session_record_the_same_requests(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    prompt = '/tool read_file {"path": "README.md"}'
    first = await record(tmp_path / "a.jsonl", root, ECHO_MODEL, prompt)
    second = await record(tmp_path / "b.jsonl", root, ECHO_MODEL, prompt)

    assert first.calls == second.calls == 2
    a, b = requests(tmp_path / "a.jsonl"), requests(tmp_path / "b.jsonl")
    assert len(a) == len(b) == 2
    for recorded, again in zip(a, b, strict=True):
        assert find_first_difference(recorded, again) is None
    # Tool definitions are sorted by name, whatever order they were given in.
    assert [t["name"] for t in a[0]["context"]["tools"]] == [
        "list_directory",
        "read_file",
        "word_count",
    ]
    assert a[1]["context"]["messages"][2]["content"][0]["text"] == "# Demo\n\nA small project.\n"


async def test_a_multi_tool_session_records_the_same_requests(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    recorded_requests = []
    for name in ("a", "b"):
        script = ScriptedProvider(
            [
                call("call_1", "list_directory"),
                call("call_2", "word_count", text="one two three"),
                call("call_3", "read_file", path="missing.txt"),
            ],
            [text("all done")],
        )
        with provider_scope():
            register_api_provider("fake", script)
            run = await record(tmp_path / f"{name}.jsonl", root, FAKE_MODEL, "survey")
        assert run.calls == 2
        recorded_requests.append(requests(tmp_path / f"{name}.jsonl"))

    a, b = recorded_requests
    for recorded, again in zip(a, b, strict=True):
        assert find_first_difference(recorded, again) is None
    results = [m for m in a[1]["context"]["messages"] if m["role"] == "toolResult"]
    assert [r["content"][0]["text"] for r in results] == [
        "README.md",
        '{"text":"one two three","words":3}',
        "ToolInputError: no such file: 'missing.txt'",
    ]


async def test_a_recorded_session_replays_with_no_mismatch_and_nothing_left(
    tmp_path: Path,
) -> None:
    root = workspace(tmp_path)
    prompt = '/tool read_file {"path": "README.md"}'
    live = await record(tmp_path / "s.jsonl", root, ECHO_MODEL, prompt)

    with provider_scope():
        replay = ReplayProvider(tmp_path / "s.jsonl")
        register_api_provider("echo", replay)
        replayed = await session(root, ECHO_MODEL, prompt)
        replay.assert_consumed()

    assert replay.mismatches == []
    assert replayed.final.text == live.final.text
    assert [m.model_dump(exclude={"timestamp"}) for m in replayed.messages] == [
        m.model_dump(exclude={"timestamp"}) for m in live.messages
    ]
