"""``run_session``: the model from the configuration, the built-in tools, replay leftovers."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.agent import run_session
from openprogram.config.paths import config_location
from openprogram.errors import ModelReferenceError
from openprogram.providers import (
    ECHO_MODEL,
    ReplayProvider,
    provider_scope,
    register_api_provider,
)
from tests.support.tool_sessions import recording_into

READ_NOTES = '/tool read_file {"path": "notes.txt"}'


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "notes.txt").write_text("remember the milk\n")
    return folder


async def test_the_defaults_are_echo_and_the_built_in_tools(root: Path) -> None:
    result = await run_session(READ_NOTES, root=root, system_prompt="be brief")

    assert result.model == ECHO_MODEL
    assert result.tool_names == ["list_directory", "read_file"]
    assert result.run.final.text == "echo:remember the milk\n"
    assert result.unconsumed is None
    data = result.to_json()
    assert data["system_prompt"] == "be brief"
    assert data["tools"] == ["list_directory", "read_file"]
    assert (data["calls"], data["stopped_because"]) == (2, "stop")
    assert [m["role"] for m in data["messages"]] == ["user", "assistant", "toolResult", "assistant"]
    assert all("timestamp" not in message for message in data["messages"])


async def test_without_built_in_tools_none_are_offered(root: Path) -> None:
    result = await run_session(READ_NOTES, root=root, use_builtin_tools=False)

    assert result.tool_names == []
    assert result.run.final.text.startswith("echo:unknown tool 'read_file'")


async def test_the_model_comes_from_the_argument_then_the_configuration(root: Path) -> None:
    config = config_location().path
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('default_model = "nosuch:m1"\n')

    with pytest.raises(LookupError, match="nosuch"):
        await run_session("hi", root=root)
    result = await run_session("hi", root=root, model="echo:echo")
    assert result.run.final.text == "echo:hi"
    with pytest.raises(ModelReferenceError):
        await run_session("hi", root=root, model="echo")


async def test_recorded_calls_never_requested_are_reported_not_raised(
    root: Path, tmp_path: Path
) -> None:
    path = tmp_path / "two-sessions.jsonl"
    with recording_into(path):
        await run_session(READ_NOTES, root=root)
        await run_session("and then?", root=root)

    with provider_scope():
        register_api_provider("echo", ReplayProvider(path))
        first = await run_session(READ_NOTES, root=root)
        assert first.unconsumed is not None
        assert first.unconsumed.unconsumed == [2]
        second = await run_session("and then?", root=root)
        assert second.unconsumed is None
    assert first.run.final.text == "echo:remember the milk\n"
