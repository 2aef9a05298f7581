"""How a streamed SDK call ends in the recording: ``complete`` when the program read the
stream to its end — also when the SDK stops at the stream's terminal event (``data:
[DONE]``, ``message_stop``) and closes the response before the transport saw the body's
end — and ``abandoned`` when the program dropped it after its first chunk. Both replay as
they went live. For the four client classes of the installed generation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.http_boundary.boundaries import rows
from tests.support.sdk_capture import recording, replaying, sockets_watched
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, observe, settle
from tests.support.sdk_scenarios import ANTHROPIC_SCENARIOS, OPENAI_SCENARIOS, QUESTION, Scenario
from tests.support.sdk_server import SdkServer

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]


def read_to_its_end(kind: ClientKind) -> Scenario:
    """A stream the program iterates until the SDK stops."""
    return (
        OPENAI_SCENARIOS["chat_stream"]
        if kind.vendor == "openai"
        else ANTHROPIC_SCENARIOS["messages_stream"]
    )


async def first(stream: Any) -> Any:
    """The first item of a sync or async SDK stream."""
    return await stream.__anext__() if hasattr(stream, "__anext__") else next(stream)


async def dropped_after_the_first_chunk(client: Any, seen: list[Any]) -> None:
    """A stream the program takes one item of, then closes."""
    if type(client).__module__.startswith("openai"):
        stream = await settle(
            client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True)
        )
    else:
        stream = await settle(
            client.messages.create(
                model="claude-loopback-1", max_tokens=256, messages=QUESTION, stream=True
            )
        )
    seen.append((await first(stream)).model_dump())
    await settle(stream.close())


def outcomes(path: Path) -> list[str]:
    return [row["outcome"] for row in rows(path) if row["type"] == "call_end"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_read_to_its_end_is_complete_and_replays(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, read_to_its_end(kind))
    assert live.raised is None
    assert live.seen

    assert outcomes(path) == ["complete"]

    with sockets_watched() as attempts, replaying(path) as session:
        replayed = await observe(kind, server.base_url, read_to_its_end(kind))
    assert replayed == live
    assert attempts == []
    assert session.mismatches == []


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_dropped_after_its_first_chunk_is_abandoned_and_replays(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, dropped_after_the_first_chunk)
    assert live.raised is None
    assert len(live.seen) == 1

    assert outcomes(path) == ["abandoned"]

    with sockets_watched() as attempts, replaying(path) as session:
        replayed = await observe(kind, server.base_url, dropped_after_the_first_chunk)
    assert replayed == live
    assert attempts == []
    assert session.mismatches == []
