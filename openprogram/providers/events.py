"""The streamed events of one assistant reply, and the accumulator that rebuilds it.

A stream is ``start``, then for each content block ``*_start``, ``*_delta``…, ``*_end``,
then exactly one terminal event: ``done`` (with the final message) or ``error``. Events carry
deltas, never the growing message, so a recording grows linearly with the output."""

from __future__ import annotations

from typing import Annotated, Any, Literal, assert_never

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from openprogram.providers.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)


class _Event(BaseModel):
    # Unknown fields are ignored so that an optional field added to an event later does not
    # make older readers refuse newer recordings.
    model_config = ConfigDict(extra="ignore")


class StartEvent(_Event):
    type: Literal["start"] = "start"
    api: str | None = None
    provider: str | None = None
    model: str | None = None


class TextStartEvent(_Event):
    type: Literal["text_start"] = "text_start"
    content_index: int


class TextDeltaEvent(_Event):
    type: Literal["text_delta"] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_Event):
    type: Literal["text_end"] = "text_end"
    content_index: int
    content: str


class ThinkingStartEvent(_Event):
    type: Literal["thinking_start"] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_Event):
    type: Literal["thinking_end"] = "thinking_end"
    content_index: int
    content: str
    signature: str | None = None


class ToolCallStartEvent(_Event):
    type: Literal["toolcall_start"] = "toolcall_start"
    content_index: int
    id: str
    name: str


class ToolCallDeltaEvent(_Event):
    type: Literal["toolcall_delta"] = "toolcall_delta"
    content_index: int
    delta: str
    """A fragment of the arguments' JSON text."""


class ToolCallEndEvent(_Event):
    type: Literal["toolcall_end"] = "toolcall_end"
    content_index: int
    tool_call: ToolCall


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    reason: Literal["stop", "length", "toolUse"]
    message: AssistantMessage


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    reason: Literal["error", "aborted"]
    error: AssistantMessage
    """The reply so far, with ``stop_reason`` and ``error_message`` set."""


AssistantMessageEvent = Annotated[
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | DoneEvent
    | ErrorEvent,
    Field(discriminator="type"),
]

EVENT_ADAPTER: TypeAdapter[AssistantMessageEvent] = TypeAdapter(AssistantMessageEvent)


def event_from_json(data: Any) -> AssistantMessageEvent:
    """Rebuild an event from its JSON form, choosing the class by ``type``."""
    return EVENT_ADAPTER.validate_python(data)


class MessageAccumulator:
    """Builds the assistant message from a stream of events, one event at a time.

    ``message`` is the reply so far; after a terminal event it is that event's message."""

    def __init__(self, *, api: str = "", provider: str = "", model: str = "") -> None:
        self._api, self._provider, self._model = api, provider, model
        self._blocks: dict[int, TextContent | ThinkingContent | ToolCall] = {}
        self._final: AssistantMessage | None = None

    def add(self, event: AssistantMessageEvent) -> None:
        match event:
            case StartEvent():
                self._api = event.api or self._api
                self._provider = event.provider or self._provider
                self._model = event.model or self._model
            case TextStartEvent():
                self._blocks[event.content_index] = TextContent(text="")
            case TextDeltaEvent():
                block = self._blocks.setdefault(event.content_index, TextContent(text=""))
                if isinstance(block, TextContent):
                    block.text += event.delta
            case TextEndEvent():
                self._blocks[event.content_index] = TextContent(text=event.content)
            case ThinkingStartEvent():
                self._blocks[event.content_index] = ThinkingContent(thinking="")
            case ThinkingDeltaEvent():
                block = self._blocks.setdefault(event.content_index, ThinkingContent(thinking=""))
                if isinstance(block, ThinkingContent):
                    block.thinking += event.delta
            case ThinkingEndEvent():
                self._blocks[event.content_index] = ThinkingContent(
                    thinking=event.content, signature=event.signature
                )
            case ToolCallStartEvent():
                self._blocks[event.content_index] = ToolCall(id=event.id, name=event.name)
            case ToolCallDeltaEvent():
                pass  # arguments arrive whole in toolcall_end; the deltas are for display
            case ToolCallEndEvent():
                self._blocks[event.content_index] = event.tool_call
            case DoneEvent():
                self._final = event.message
            case ErrorEvent():
                self._final = event.error
            case _:
                assert_never(event)

    @property
    def message(self) -> AssistantMessage:
        if self._final is not None:
            return self._final
        return AssistantMessage(
            content=[self._blocks[index] for index in sorted(self._blocks)],
            api=self._api,
            provider=self._provider,
            model=self._model,
            usage=Usage(),
        )
