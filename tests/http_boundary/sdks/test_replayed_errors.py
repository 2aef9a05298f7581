"""Errors replay as themselves with the official SDKs: an error status raises the same SDK
exception (class, status, message, body); a 429 the SDK retried replays as the same two calls,
without the SDK's back-off; a connection refused, a read timeout (before the response or
part-way through a stream) and a stream cut mid-way raise the same exception after the same
chunks. Each for the four client classes of the installed generation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.offline import sleeps_asked
from tests.support.sdk_capture import recording, replaying, sockets_watched
from tests.support.sdk_clients import CLIENT_KINDS, ClientKind, Observation, observe
from tests.support.sdk_scenarios import (
    ANTHROPIC_SCENARIOS,
    OPENAI_SCENARIOS,
    Scenario,
)
from tests.support.sdk_server import (
    CutAfter,
    ErrorReply,
    Fault,
    SdkServer,
    StallAfter,
    refused_base_url,
)

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]
STATUSES = (400, 401, 404, 429, 500, 529)


def whole(kind: ClientKind) -> Scenario:
    """A call answered with one JSON body."""
    return (
        OPENAI_SCENARIOS["chat_create"]
        if kind.vendor == "openai"
        else ANTHROPIC_SCENARIOS["messages_create"]
    )


def streamed(kind: ClientKind) -> Scenario:
    """A call answered with a stream."""
    return (
        OPENAI_SCENARIOS["chat_stream"]
        if kind.vendor == "openai"
        else ANTHROPIC_SCENARIOS["messages_stream"]
    )


def items_from(kind: ClientKind, events: int) -> int:
    """How many items a program gets from the first ``events`` events of :func:`streamed`
    (the Anthropic SDKs pass over the ``ping`` that follows ``message_start``)."""
    return events - 1 if kind.vendor == "anthropic" and events >= 2 else events


async def live_then_replayed(
    kind: ClientKind,
    scenario: Scenario,
    path: Path,
    *faults: Fault,
    base_url: str | None = None,
    **options: Any,
) -> tuple[Observation, Observation]:
    """The scenario run live against the server (failing as ``faults`` say) while recording,
    then, with the server stopped, replayed with no socket."""
    with SdkServer() as server, recording(path):
        server.queue(*faults)
        live = await observe(kind, base_url or server.base_url, scenario, **options)
    with sockets_watched() as attempts, replaying(path):
        replayed = await observe(kind, base_url or server.base_url, scenario, **options)
    assert attempts == []
    return live, replayed


@pytest.mark.parametrize("status", STATUSES)
@pytest.mark.parametrize("kind", KINDS)
async def test_an_error_status_raises_the_same_sdk_exception(
    kind: ClientKind, status: int, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, whole(kind), tmp_path / "r.jsonl", ErrorReply(status), max_retries=0
    )
    assert live.raised is not None
    assert live.raised.status == status
    assert replayed == live


@pytest.mark.parametrize("kind", KINDS)
async def test_an_error_before_a_stream_raises_the_same_sdk_exception(
    kind: ClientKind, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, streamed(kind), tmp_path / "r.jsonl", ErrorReply(400), max_retries=0
    )
    assert live.raised is not None
    assert live.raised.status == 400
    assert replayed == live


@pytest.mark.parametrize("kind", KINDS)
async def test_a_retried_429_replays_as_the_same_two_calls_without_the_back_off(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "r.jsonl"
    with SdkServer() as server, recording(path):
        server.queue(ErrorReply(429))  # no retry hint: the SDK backs off on its own
        with sleeps_asked() as asked:
            live = await observe(kind, server.base_url, whole(kind))
        live_seconds = sum(asked)
        assert [sent.status for sent in server.sent] == [429, 200]
    with sockets_watched(), replaying(path) as session:
        with sleeps_asked() as asked:
            replayed = await observe(kind, server.base_url, whole(kind))
        replay_seconds = sum(asked)
        assert session.calls_consumed == 2

    assert live.raised is None
    assert replayed == live
    # The SDKs back off at least 0.375 s before a retry without a hint; replay serves the
    # smallest hint they honour (1 ms).
    assert live_seconds > 0.3
    assert replay_seconds < live_seconds / 3


@pytest.mark.parametrize("kind", KINDS)
async def test_a_connection_refused_raises_the_same_exception(
    kind: ClientKind, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, whole(kind), tmp_path / "r.jsonl", base_url=refused_base_url(), max_retries=0
    )
    assert live.raised is not None
    assert live.raised.type.endswith("APIConnectionError")
    assert replayed == live


@pytest.mark.parametrize("kind", KINDS)
async def test_a_read_timeout_before_the_response_raises_the_same_exception(
    kind: ClientKind, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, whole(kind), tmp_path / "r.jsonl", StallAfter(), max_retries=0, timeout=0.3
    )
    assert live.raised is not None
    assert live.raised.type.endswith("APITimeoutError")
    assert replayed == live


@pytest.mark.parametrize("kind", KINDS)
async def test_a_read_timeout_mid_stream_raises_the_same_exception_at_the_same_chunk(
    kind: ClientKind, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, streamed(kind), tmp_path / "r.jsonl", StallAfter(3), max_retries=0, timeout=0.3
    )
    assert live.raised is not None
    assert "Timeout" in live.raised.type or "Timeout" in str(live.raised.cause)
    assert len(live.seen) == items_from(kind, 3)
    assert replayed == live


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stream_cut_mid_way_raises_the_same_exception_at_the_same_chunk(
    kind: ClientKind, tmp_path: Path
) -> None:
    live, replayed = await live_then_replayed(
        kind, streamed(kind), tmp_path / "r.jsonl", CutAfter(4), max_retries=0
    )
    assert live.raised is not None
    assert "RemoteProtocolError" in f"{live.raised.type} {live.raised.cause}"
    assert len(live.seen) == items_from(kind, 4)
    assert replayed == live
