"""Model and HTTP calls made while a tool or a taped function is recorded are marked
``within`` it: replay asks for them when the tool runs again, never when it is served from
its tape."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from openprogram import record_replay, taped
from openprogram.agent import run_agent, tool
from openprogram.errors import UnconsumedCallsError
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
from openprogram.recording.reader import read_recording
from tests.support.reader_refusals import assert_refused
from tests.support.recording_rows import call_rows, header, write_rows
from tests.support.sse_server import Script, ScriptedServer

PROMPT = '/tool weather {"city": "Paris"}'


def json_script(body: object) -> Script:
    return Script([json.dumps(body).encode()], headers={"Content-Type": "application/json"})


@pytest.fixture
def server() -> ScriptedServer:
    with ScriptedServer() as running:
        yield running  # type: ignore[misc]


def weather_tool(server: ScriptedServer) -> object:
    @tool
    def weather(city: str) -> str:
        """Today's weather, from a web API."""
        reply = httpx.get(f"{server.base_url}/weather", params={"city": city}).json()
        return f"{city}: {reply['sky']}"

    return weather


def session(weather: object) -> str:
    done = asyncio.run(run_agent(ECHO_MODEL, PROMPT, tools=[weather]))  # type: ignore[list-item]
    return done.final.text


def test_a_tools_http_call_is_within_it_and_not_asked_for_when_it_is_served_from_its_tape(
    tmp_path: Path, server: ScriptedServer
) -> None:
    path = tmp_path / "agent.jsonl"
    weather = weather_tool(server)
    server.serve(json_script({"sky": "sunny"}))
    with record_replay(path, mode="record"):
        assert session(weather) == "echo:Paris: sunny"
    calls = read_recording(path).calls
    assert [(call.boundary, call.within) for call in calls] == [
        ("provider", None),
        ("http", "tool:weather"),
        ("provider", None),
    ]
    server.stop()  # the web API is gone
    with record_replay(path, mode="replay", tools={"weather": "replay"}):
        assert session(weather) == "echo:Paris: sunny"
    with record_replay(path, mode="replay", match="order", tools={"weather": "replay"}):
        assert session(weather) == "echo:Paris: sunny"
    with record_replay(path, mode="replay"):  # live: the tool runs, its call is replayed
        assert session(weather) == "echo:Paris: sunny"


def test_a_tool_run_live_that_no_longer_sends_its_request_leaves_it_unrequested(
    tmp_path: Path, server: ScriptedServer
) -> None:
    path = tmp_path / "agent.jsonl"
    server.serve(json_script({"sky": "sunny"}))
    with record_replay(path, mode="record"):
        session(weather_tool(server))

    @tool
    def weather(city: str) -> str:
        """Today's weather, from a web API."""  # the same description: it reads a cache now
        return f"{city}: sunny"

    with pytest.raises(UnconsumedCallsError, match=r"never requested \(call 1\)"):  # noqa: SIM117
        with record_replay(path, mode="replay"):
            session(weather)


def test_a_model_call_inside_a_taped_function_is_not_asked_for_under_replay(
    tmp_path: Path,
) -> None:
    @taped(name="summarise")
    def summarise(text: str) -> str:
        context = Context(messages=[UserMessage(content=text)])
        return asyncio.run(complete_simple(ECHO_MODEL, context)).text

    path = tmp_path / "nested.jsonl"
    with record_replay(path, mode="record"):
        assert summarise("long text") == "echo:long text"
    assert [call.within for call in read_recording(path).calls] == ["summarise"]
    with record_replay(path, mode="replay"):
        assert summarise("long text") == "echo:long text"


def test_a_request_row_whose_within_is_not_a_tape_name_is_refused(tmp_path: Path) -> None:
    rows = [header(), *call_rows(0, text="hi")]
    rows[1]["within"] = 7
    path = write_rows(tmp_path / "r.jsonl", rows)
    assert_refused(path, line=2, call_index=0, says="within must name a tape, found 7")
