"""Small scripted providers for the agent loop tests, and tools to hand it.

:class:`ScriptedProvider` answers call N with the N-th scripted reply (the last one again
once the script runs out) and keeps every context it was asked with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
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
)

FAKE_MODEL = Model(id="fake-1", api="fake", provider="fake")

Reply = list[TextContent | ToolCall] | str
"""Content blocks, or the ``error_message`` of an error reply (``"error: ..."``)."""


def text(value: str) -> TextContent:
    return TextContent(text=value)


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments)


def reply_events(model: Model, reply: Reply) -> list[AssistantMessageEvent]:
    """The events a provider streams for ``reply``."""
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
            events += [
                TextStartEvent(content_index=index),
                TextDeltaEvent(content_index=index, delta=block.text),
                TextEndEvent(content_index=index, content=block.text),
            ]
        else:
            events += [
                ToolCallStartEvent(content_index=index, id=block.id, name=block.name),
                ToolCallDeltaEvent(
                    content_index=index, delta=orjson.dumps(block.arguments).decode()
                ),
                ToolCallEndEvent(content_index=index, tool_call=block),
            ]
    uses_tools = any(isinstance(block, ToolCall) for block in reply)
    message = AssistantMessage(
        content=list(reply),
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="toolUse" if uses_tools else "stop",
    )
    return [*events, DoneEvent(reason="toolUse" if uses_tools else "stop", message=message)]


class ScriptedProvider:
    """Replies from a script; ``contexts`` holds every request's context, in order."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.contexts: list[Context] = []

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        self.contexts.append(context.model_copy(deep=True))
        index = min(len(self.contexts) - 1, len(self.replies) - 1)
        for event in reply_events(model, self.replies[index]):
            yield event


class UnterminatedProvider(ScriptedProvider):
    """Streams a text reply but never sends ``done`` or ``error``."""

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        self.contexts.append(context.model_copy(deep=True))
        for event in reply_events(model, [text("half a reply")])[:-1]:
            yield event


class RaisingProvider(ScriptedProvider):
    """Raises ``RuntimeError`` after its start event."""

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        raise RuntimeError("the connection dropped")
