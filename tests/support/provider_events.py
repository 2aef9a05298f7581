"""Reading what a provider streamed."""

from __future__ import annotations

from collections.abc import AsyncIterator

from openprogram.providers import AssistantMessageEvent, DoneEvent, ErrorEvent


async def collect(events: AsyncIterator[AssistantMessageEvent]) -> list[AssistantMessageEvent]:
    """Every event of a stream that ends without raising."""
    return [event async for event in events]


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [event.type for event in events]


def last_error(events: list[AssistantMessageEvent]) -> ErrorEvent:
    assert events, "no events"
    final = events[-1]
    assert isinstance(final, ErrorEvent), f"expected an error event, got {types(events)}"
    return final


def last_done(events: list[AssistantMessageEvent]) -> DoneEvent:
    final = events[-1]
    assert isinstance(final, DoneEvent), f"expected done, got {final!r}"
    return final
