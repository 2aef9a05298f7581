"""Replayed, the official SDKs hand a program the same objects as live: every chunk, event
and final object (``model_dump()``, the per-run ids and timestamps included: they are
replayed verbatim), for each client class of the installed generation, with no socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sdk_capture import recording, replaying, sockets_watched
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, observe
from tests.support.sdk_scenarios import ANTHROPIC_SCENARIOS, OPENAI_SCENARIOS
from tests.support.sdk_server import SdkServer

CASES = [
    pytest.param(kind, name, id=f"{kind.name}-{name}")
    for kind in CLIENT_KINDS
    for name in (OPENAI_SCENARIOS if kind.vendor == "openai" else ANTHROPIC_SCENARIOS)
]


@pytest.mark.parametrize(("kind", "name"), CASES)
async def test_replayed_objects_equal_the_live_ones(
    kind: ClientKind, name: str, tmp_path: Path
) -> None:
    scenario = {**OPENAI_SCENARIOS, **ANTHROPIC_SCENARIOS}[name]
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, scenario)
    assert live.raised is None
    assert live.seen

    with sockets_watched() as attempts, replaying(path):
        replayed = await observe(kind, server.base_url, scenario)

    assert replayed == live
    assert attempts == []


@pytest.mark.parametrize("kind", [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS])
async def test_replay_needs_no_key(
    kind: ClientKind, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "chat_stream" if kind.vendor == "openai" else "messages_stream"
    scenario = {**OPENAI_SCENARIOS, **ANTHROPIC_SCENARIOS}[name]
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, scenario)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    with sockets_watched() as attempts, replaying(path):
        replayed = await observe(kind, server.base_url, scenario, api_key=None)

    assert replayed == live
    assert attempts == []
