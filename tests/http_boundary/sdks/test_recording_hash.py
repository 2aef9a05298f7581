"""Two recordings of the same SDK session, made on different runs, hash equal and
``recordings diff`` finds them the same: what the server makes anew for every response
(``date``, request ids, processing times, rate-limit counts, object ids, ``created``,
``system_fingerprint``) is left out, while the files themselves differ in exactly those."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.recording.reader import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.sdk_capture import recording
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, observe
from tests.support.sdk_scenarios import ANTHROPIC_SCENARIOS, OPENAI_SCENARIOS
from tests.support.sdk_server import SdkServer

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]

SESSIONS = {
    # Calls whose answers link nothing to the next request: no tool-call ids, no output
    # items (those are sent back, so they stay in the comparison and the hash).
    "openai": ("chat_create", "chat_stream", "chat_raw"),
    "anthropic": ("messages_create", "messages_stream_text", "messages_raw"),
}


async def session(client_kind: ClientKind, server: SdkServer) -> None:
    scenarios = OPENAI_SCENARIOS if client_kind.vendor == "openai" else ANTHROPIC_SCENARIOS
    for name in SESSIONS[client_kind.vendor]:
        observed = await observe(client_kind, server.base_url, scenarios[name])
        assert observed.raised is None


async def record_twice(kind: ClientKind, folder: Path) -> tuple[Path, Path]:
    """The session recorded on two runs of the server (on the same port: the same URLs)."""
    first, second = folder / "first.jsonl", folder / "second.jsonl"
    with SdkServer() as server, recording(first):
        await session(kind, server)
    with SdkServer(server.port) as again, recording(second):
        await session(kind, again)
    return first, second


def response_headers(path: Path) -> list[dict[str, Any]]:
    return [
        event["headers"]
        for call in read_recording(path).calls
        for event in call.event_rows
        if event["type"] == "http_response"
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_two_runs_of_a_session_hash_equal(kind: ClientKind, tmp_path: Path) -> None:
    first, second = await record_twice(kind, tmp_path)

    ids = "x-request-id" if kind.vendor == "openai" else "request-id"
    first_ids = [headers[ids] for headers in response_headers(first)]
    second_ids = [headers[ids] for headers in response_headers(second)]
    assert len(first_ids) == 3
    assert not set(first_ids) & set(second_ids)  # the runs differ where servers differ
    assert transcript_hash(read_recording(first)) == transcript_hash(read_recording(second))


@pytest.mark.parametrize("kind", KINDS)
async def test_recordings_diff_finds_two_runs_the_same(kind: ClientKind, tmp_path: Path) -> None:
    first, second = await record_twice(kind, tmp_path)

    result = run("diff", str(first), str(second))

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("✔ the recordings are the same\n")
