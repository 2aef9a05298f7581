"""A provider that streams its reply in given pieces, so a credential can be cut across two
deltas (whole in neither row), and the two-call tool session ``recordings scan`` tests
record and replay with it.

:class:`SplitStreamProvider` answers call 0 with text pieces and a ``run`` tool call whose
arguments arrive as JSON text pieces, and call 1 with ``"done"``. :func:`run_session` drives
the session: the tool echoes its ``cmd`` argument, as the model gave it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import orjson

from openprogram.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    Model,
    SimpleStreamOptions,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    Tool,
    ToolCall,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultMessage,
    UserMessage,
)

SPLIT_MODEL = Model(id="split-1", api="split", provider="split")
RUN_TOOL = Tool(
    name="run",
    description="Run a command.",
    parameters={"type": "object", "properties": {"cmd": {"type": "string"}}},
)


class SplitStreamProvider:
    """Call 0: ``text_pieces`` as text deltas, then a ``run`` call whose arguments are
    ``argument_pieces`` joined; call 1: ``done``."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, text_pieces: Sequence[str], argument_pieces: Sequence[str]) -> None:
        self.text_pieces = list(text_pieces)
        self.argument_pieces = list(argument_pieces)
        self.calls = 0

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model)

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model)

    async def _reply(self, model: Model) -> AsyncIterator[AssistantMessageEvent]:
        first = self.calls == 0
        self.calls += 1
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        text = "".join(self.text_pieces) if first else "done"
        yield TextStartEvent(content_index=0)
        for piece in self.text_pieces if first else [text]:
            yield TextDeltaEvent(content_index=0, delta=piece)
        yield TextEndEvent(content_index=0, content=text)
        content: list[Any] = [TextContent(text=text)]
        if first:
            arguments = orjson.loads("".join(self.argument_pieces))
            tool_call = ToolCall(id="call-1", name="run", arguments=arguments)
            yield ToolCallStartEvent(content_index=1, id="call-1", name="run")
            for piece in self.argument_pieces:
                yield ToolCallDeltaEvent(content_index=1, delta=piece)
            yield ToolCallEndEvent(content_index=1, tool_call=tool_call)
            content.append(tool_call)
        reason = "toolUse" if first else "stop"
        message = AssistantMessage(
            content=content,
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason=reason,
        )
        yield DoneEvent(reason=reason, message=message)


async def run_session(provider: Any, prompt: str = "deploy it") -> list[str]:
    """The two calls through ``provider``; returns what the tool was given and the replies,
    as the consumer received them."""
    context = Context(messages=[UserMessage(content=prompt)], tools=[RUN_TOOL])
    first = await _complete(provider, context)
    context.messages.append(first)
    call = first.tool_calls[0]
    given = str(call.arguments.get("cmd"))
    context.messages.append(
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=f"ran {given}")
    )
    second = await _complete(provider, context)
    return [first.text, given, second.text]


async def _complete(provider: Any, context: Context) -> AssistantMessage:
    message: AssistantMessage | None = None
    async for event in provider.stream_simple(SPLIT_MODEL, context, SimpleStreamOptions()):
        if isinstance(event, DoneEvent):
            message = event.message
    assert message is not None
    return message
