"""The token shapes at write time: nothing of a credential reaches disk, a tool call's
arguments come out alike in every row, and a recording made under older rules (which kept
these tokens) still replays."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    RecordingProvider,
    ReplayProvider,
    SimpleStreamOptions,
    Tool,
    UserMessage,
)
from openprogram.recording.redaction import REDACTION_VERSION
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.recording.writer import close_recording_writers
from tests.support.recording_rows import read_rows, write_rows
from tests.support.secret_samples import GITHUB_TOKEN, JWT, PASSWORD, SLACK_TOKEN

RUN = Tool(
    name="run",
    description="Run a command.",
    parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
)
ARGUMENTS = {"cmd": f"login --password={PASSWORD} --token {GITHUB_TOKEN}", "note": "ok"}


def contexts() -> list[Context]:
    """Two calls: one asking for a tool call whose arguments hold credentials, one whose
    user text holds credentials the echo model repeats."""
    return [
        Context(
            messages=[UserMessage(content=f"/tool run {orjson.dumps(ARGUMENTS).decode()}")],
            tools=[RUN],
        ),
        Context(messages=[UserMessage(content=f"use {SLACK_TOKEN} and {JWT}")]),
    ]


async def stream(provider: Any, context: Context) -> list[Any]:
    return [
        event async for event in provider.stream_simple(ECHO_MODEL, context, SimpleStreamOptions())
    ]


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "shapes.jsonl"
    recorder = RecordingProvider(EchoProvider(), path)

    async def record() -> None:
        for context in contexts():
            await stream(recorder, context)

    asyncio.run(record())
    close_recording_writers()
    return path


def test_no_credential_reaches_disk(recorded: Path) -> None:
    text = recorded.read_text()
    for secret in (PASSWORD, GITHUB_TOKEN, SLACK_TOKEN, JWT):
        assert secret not in text
    assert read_rows(recorded)[0]["redaction_version"] == REDACTION_VERSION


def test_the_arguments_come_out_alike_in_delta_end_and_done_rows(recorded: Path) -> None:
    rows = read_rows(recorded)
    events = [row["event"] for row in rows if row["type"] == "event" and row["call_index"] == 0]
    delta = orjson.loads("".join(e["delta"] for e in events if e["type"] == "toolcall_delta"))
    (end,) = [e["tool_call"]["arguments"] for e in events if e["type"] == "toolcall_end"]
    (done,) = [e["message"]["content"][0]["arguments"] for e in events if e["type"] == "done"]
    expected = {"cmd": f"login --password={PLACEHOLDER} --token {PLACEHOLDER}", "note": "ok"}
    assert delta == end == done == expected


@pytest.mark.parametrize("match", ["content", "order"])
async def test_it_replays_the_live_requests(recorded: Path, match: str) -> None:
    replay = ReplayProvider(recorded, match=match)
    for context in contexts():
        await stream(replay, context)
    replay.assert_consumed()


def as_recorded_by_older_rules(path: Path) -> None:
    """The recording as version 2 of the rules wrote it: the tokens they did not know are in
    the request rows, and the header says version 2."""
    rows = read_rows(path)
    rows[0]["redaction_version"] = 2
    for row in rows:
        if row["type"] == "request" and row["call_index"] == 1:
            row["context"]["messages"][0]["content"] = f"use {SLACK_TOKEN} and {JWT}"
    write_rows(path, rows)


@pytest.mark.parametrize("match", ["content", "order"])
async def test_a_recording_made_under_older_rules_replays(recorded: Path, match: str) -> None:
    as_recorded_by_older_rules(recorded)
    assert SLACK_TOKEN in recorded.read_text()
    replay = ReplayProvider(recorded, match=match)
    for context in contexts():
        await stream(replay, context)
    replay.assert_consumed()
    assert replay.mismatches == []
