"""Two recordings of the same SDK session, made on different runs, hash equal and
``recordings diff`` finds them the same: what the server makes anew for every response
(``date``, request ids, processing times, rate-limit counts, ``created``,
``system_fingerprint``) is left out, and the ids it mints afresh — response and item ids,
tool-call ids the next request sends back — are compared up to consistent renaming, while
the files themselves differ in exactly those. A session that sends a tool's result back
under another id than the call's differs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
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
    # Every scenario: plain answers, streams, tool calls answered with the call's id, the
    # Responses API's output items.
    "openai": tuple(OPENAI_SCENARIOS),
    "anthropic": tuple(ANTHROPIC_SCENARIOS),
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
    assert len(first_ids) >= len(SESSIONS[kind.vendor])
    assert not set(first_ids) & set(second_ids)  # the runs differ where servers differ
    assert transcript_hash(read_recording(first)) == transcript_hash(read_recording(second))


@pytest.mark.parametrize("kind", KINDS)
async def test_recordings_diff_finds_two_runs_the_same(kind: ClientKind, tmp_path: Path) -> None:
    first, second = await record_twice(kind, tmp_path)

    result = run("diff", str(first), str(second))

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("✔ the recordings are the same\n")


@pytest.mark.parametrize("kind", KINDS[:1] + KINDS[-1:])
async def test_a_tool_result_sent_back_under_another_id_differs(
    kind: ClientKind, tmp_path: Path
) -> None:
    scenarios = OPENAI_SCENARIOS if kind.vendor == "openai" else ANTHROPIC_SCENARIOS
    turns = "chat_tool_turns" if kind.vendor == "openai" else "messages_tool_turns"
    first = tmp_path / "first.jsonl"
    with SdkServer() as server, recording(first):
        observed = await observe(kind, server.base_url, scenarios[turns])
        assert observed.raised is None
    echoed = "tool_call_id" if kind.vendor == "openai" else "tool_use_id"
    calls = read_recording(first).calls
    assert len(calls) == 2
    lines = first.read_bytes().splitlines(keepends=True)
    (at,) = [n for n, line in enumerate(lines) if f'"{echoed}":'.encode() in line]
    minted = orjson.loads(lines[at])
    linked = json_path_value(minted, echoed)
    sent_back = f'"{echoed}":"{linked}"'.encode()
    lines[at] = lines[at].replace(sent_back, f'"{echoed}":"call_made_up"'.encode())
    other = tmp_path / "other.jsonl"
    other.write_bytes(b"".join(lines))

    assert transcript_hash(read_recording(first)) != transcript_hash(read_recording(other))
    result = run("diff", str(first), str(other))
    assert result.exit_code == 1, result.output
    assert f".{echoed}:" in result.stdout
    assert "'call_made_up'" in result.stdout


def json_path_value(value: Any, key: str) -> str:
    """The first string under ``key`` anywhere in ``value``."""
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key and isinstance(item, str):
                return item
            found = json_path_value(item, key)
            if found:
                return found
    if isinstance(value, list):
        for item in value:
            found = json_path_value(item, key)
            if found:
                return found
    return ""
