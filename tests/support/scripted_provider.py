"""A provider that answers from a script, for tests of what sits above the provider layer.

:class:`ScriptedProvider` answers call N with the N-th scripted reply (the last one again
once the script runs out) and keeps every ``(model, context)`` it was asked with. A reply is
a list of content blocks (:func:`text`, :func:`call`), or a string: the ``error_message`` of
an error reply.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import orjson

from openprogram.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    ErrorEvent,
    Model,
    SimpleStreamOptions,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    provider_scope,
    register_api_provider,
)

FAKE_MODEL = Model(id="fake-1", api="fake", provider="fake")

Reply = list[TextContent | ToolCall] | str
"""Content blocks, or the ``error_message`` of an error reply."""


def text(value: str) -> TextContent:
    return TextContent(text=value)


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def reply_events(model: Model, reply: Reply, *, deltas: bool = True) -> list[AssistantMessageEvent]:
    """The events a provider streams for ``reply``; without ``deltas``, each block whole
    (only its start and end)."""
    events: list[AssistantMessageEvent] = [
        StartEvent(api=model.api, provider=model.provider, model=model.id)
    ]
    if isinstance(reply, str):
        error = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="error",
            error_message=reply,
        )
        return [*events, ErrorEvent(reason="error", error=error)]
    for index, block in enumerate(reply):
        if isinstance(block, TextContent):
            events.append(TextStartEvent(content_index=index))
            if deltas:
                events.append(TextDeltaEvent(content_index=index, delta=block.text))
            events.append(TextEndEvent(content_index=index, content=block.text))
        else:
            events.append(ToolCallStartEvent(content_index=index, id=block.id, name=block.name))
            if deltas:
                arguments = orjson.dumps(block.arguments).decode()
                events.append(ToolCallDeltaEvent(content_index=index, delta=arguments))
            events.append(ToolCallEndEvent(content_index=index, tool_call=block))
    reason = "toolUse" if any(isinstance(block, ToolCall) for block in reply) else "stop"
    message = AssistantMessage(
        content=list(reply),
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason=reason,
    )
    return [*events, DoneEvent(reason=reason, message=message)]


class ScriptedProvider:
    """Replies from a script; ``requests`` holds every ``(model, context)``, in order."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, *replies: Reply, deltas: bool = True) -> None:
        self.replies = list(replies)
        self.deltas = deltas
        self.requests: list[tuple[Model, Context]] = []

    @property
    def contexts(self) -> list[Context]:
        return [context for _, context in self.requests]

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append((model, context.model_copy(deep=True)))
        reply = self.replies[min(len(self.requests), len(self.replies)) - 1]
        for event in reply_events(model, reply, deltas=self.deltas):
            yield event


class KeyedProvider(ScriptedProvider):
    """Needs a key from ``FAKE_API_KEY``."""

    requires_credentials = True
    api_key_env = "FAKE_API_KEY"


class UnterminatedProvider(ScriptedProvider):
    """Streams a text reply but never sends ``done`` or ``error``."""

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append((model, context.model_copy(deep=True)))
        for event in reply_events(model, [text("half a reply")])[:-1]:
            yield event


class RaisingProvider(ScriptedProvider):
    """Raises ``RuntimeError`` after its start event."""

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        raise RuntimeError("the connection dropped")


@contextmanager
def serving(provider: ScriptedProvider, api: str = "fake") -> Iterator[ScriptedProvider]:
    """``provider`` answers for ``api`` inside the block."""
    with provider_scope():
        register_api_provider(api, provider)
        yield provider
