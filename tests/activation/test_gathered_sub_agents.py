"""Two sub-agents under ``asyncio.gather``, three model calls each, one slower than the other
when recorded: replayed with the *other* one slower, their calls arrive in another order,
and content matching serves each from the recording all the same — at the provider
registry and at HTTP. Strict order matching refuses the same run at its first call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.recording.reader import read_recording
from tests.support.gathered_agents import http_agents, provider_agents
from tests.support.offline import offline
from tests.support.recording_rows import read_rows
from tests.support.sdk_server import SdkServer

A_SLOWER = {"A": 0.03, "B": 0.0}
B_SLOWER = {"A": 0.0, "B": 0.03}
# Over HTTP each turn is a round trip to the loopback server, which a busy machine can stretch
# past 30 ms: the slower agent waits long enough that the other's three turns come first.
A_SLOWER_HTTP = {"A": 0.3, "B": 0.0}
B_SLOWER_HTTP = {"A": 0.0, "B": 0.3}


def first_messages(path: Path) -> list[str]:
    """The first user message of each recorded call, in recorded order."""
    found: list[str] = []
    for call in read_recording(path).calls:
        section = call.request["body"] if call.boundary == "http" else call.request["context"]
        messages = section["messages"]
        found.append(messages[0]["content"])
    return found


def test_provider_sub_agents_replay_whatever_order_their_calls_arrive_in(tmp_path: Path) -> None:
    path = tmp_path / "gathered.jsonl"
    with openprogram.record_replay(path, mode="record"):
        recorded = asyncio.run(provider_agents(A_SLOWER))
    assert first_messages(path) == ["B start"] * 3 + ["A start"] * 3

    with offline(), openprogram.record_replay(path, mode="replay") as active:
        replayed = asyncio.run(provider_agents(B_SLOWER))

    assert replayed == recorded == ["echo:A turn 2", "echo:B turn 2"]
    assert active.session is not None
    assert active.session.calls_consumed == 6


def test_provider_sub_agents_in_another_order_fail_under_order_matching(tmp_path: Path) -> None:
    path = tmp_path / "gathered.jsonl"
    with openprogram.record_replay(path, mode="record"):
        asyncio.run(provider_agents(A_SLOWER))

    with (
        pytest.raises(ReplayMismatch) as caught,
        openprogram.record_replay(path, mode="replay", match="order"),
    ):
        asyncio.run(provider_agents(B_SLOWER))

    assert str(caught.value) == (
        "replay mismatch at call 0, field context.messages[0].content:\n"
        "recorded 'B start', incoming 'A start'"
    )


def test_http_sub_agents_replay_whatever_order_their_calls_arrive_in(tmp_path: Path) -> None:
    path = tmp_path / "gathered.jsonl"
    with SdkServer() as server, openprogram.record_replay(path, mode="record"):
        url = server.openai_url
        recorded = asyncio.run(http_agents(url, A_SLOWER_HTTP))
        assert len(server.received) == 6
    assert first_messages(path) == ["B start"] * 3 + ["A start"] * 3
    # Each later turn's body stores only what it adds to its own agent's previous turn.
    bases = [row.get("base") for row in read_rows(path) if row["type"] == "request"]
    assert [base and base["call_index"] for base in bases] == [None, 0, 1, None, 3, 4]
    assert all(base is None or set(base) == {"call_index", "body"} for base in bases)

    with offline(), openprogram.record_replay(path, mode="replay") as active:
        replayed = asyncio.run(http_agents(url, B_SLOWER_HTTP))

    assert replayed == recorded == ["You said: A turn 2", "You said: B turn 2"]
    assert active.session is not None
    assert active.session.calls_consumed == 6
