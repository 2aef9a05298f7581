"""An OpenAI client given an ``httpx.Client`` (or ``httpx.AsyncClient``) as its
``http_client`` — the current SDK generation accepts one besides its own httpx2 clients —
records and replays like one on its default client. (With the previous generation httpx is
the SDK's own library: the same test covers a client the program made itself.)"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.sdk_capture import recording, replaying, sockets_watched
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, observe
from tests.support.sdk_scenarios import OPENAI_SCENARIOS
from tests.support.sdk_server import SdkServer, StallAfter

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS if kind.vendor == "openai"]


def own_client(kind: ClientKind) -> httpx.Client | httpx.AsyncClient:
    return httpx.AsyncClient() if kind.asynchronous else httpx.Client()


@pytest.mark.parametrize("name", ["chat_stream", "chat_tool_turns", "responses_stream"])
@pytest.mark.parametrize("kind", KINDS)
async def test_an_httpx_client_records_and_replays(
    kind: ClientKind, name: str, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    scenario = OPENAI_SCENARIOS[name]
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, scenario, http_client=own_client(kind))
    assert live.raised is None

    with sockets_watched() as attempts, replaying(path):
        replayed = await observe(kind, server.base_url, scenario, http_client=own_client(kind))

    assert replayed == live
    assert attempts == []


@pytest.mark.parametrize("kind", KINDS)
async def test_an_httpx_client_read_timeout_replays_as_itself(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    scenario = OPENAI_SCENARIOS["chat_stream"]
    options = {"max_retries": 0, "timeout": 0.3}
    with SdkServer() as server, recording(path):
        server.queue(StallAfter(2))
        live = await observe(
            kind, server.base_url, scenario, http_client=own_client(kind), **options
        )
    assert live.raised is not None

    with replaying(path):
        replayed = await observe(
            kind, server.base_url, scenario, http_client=own_client(kind), **options
        )

    assert replayed == live
