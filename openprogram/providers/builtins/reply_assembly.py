"""From a vendor's stream to our events: content blocks, their indexes, usage, the final reply.

A vendor parser (``openai_completions``, ``anthropic_messages``) reads the vendor's wire
events and drives a :class:`ReplyAssembler`: it opens a block, appends deltas, closes it.
The assembler numbers blocks contiguously from 0 in the order they open — the index each
has in the final message's ``content`` — emits the matching ``*_start`` / ``*_delta`` /
``*_end`` events, and builds the final (or, on failure, the partial) ``AssistantMessage``.

Anything that ends a stream early is a :class:`VendorStreamError`; the HTTP layer turns it
into an ``error`` event that keeps what was streamed so far.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    MessageAccumulator,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from openprogram.providers.types import AssistantMessage, Model, ToolCall, Usage

FinishReason = Literal["stop", "length", "toolUse"]
STREAM_ENDED_EARLY = "stream ended before the reply finished"
SNIPPET_LENGTH = 200
"""Characters of a server's own text quoted in an error message, when it names no message."""
BlockKind = Literal["text", "thinking", "toolCall"]


class VendorStreamError(Exception):
    """The stream cannot go on; the message says why, without the api name (added later)."""


@dataclass(slots=True)
class OpenBlock:
    """A content block being streamed: text, thinking, or a tool call's argument JSON."""

    kind: BlockKind
    content_index: int
    parts: list[str] = field(default_factory=list)
    tool_call_id: str = ""
    tool_name: str = ""
    signature: str | None = None
    closed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.parts)


class ReplyAssembler:
    """Builds one reply; every method queues the events it implies (see :meth:`take_events`)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.usage = Usage()
        self._accumulator = MessageAccumulator(
            api=model.api, provider=model.provider, model=model.id
        )
        self._blocks: list[OpenBlock] = []
        self._queued: list[AssistantMessageEvent] = []

    @property
    def api(self) -> str:
        return self.model.api

    def start(self) -> StartEvent:
        event = StartEvent(api=self.model.api, provider=self.model.provider, model=self.model.id)
        self._accumulator.add(event)
        return event

    def take_events(self) -> list[AssistantMessageEvent]:
        """The events queued since the last call, in order."""
        events, self._queued = self._queued, []
        return events

    def _emit(self, event: AssistantMessageEvent) -> None:
        self._accumulator.add(event)
        self._queued.append(event)

    # -- blocks -----------------------------------------------------------------------------

    def open_text(self) -> OpenBlock:
        block = self._open("text")
        self._emit(TextStartEvent(content_index=block.content_index))
        return block

    def open_thinking(self) -> OpenBlock:
        block = self._open("thinking")
        self._emit(ThinkingStartEvent(content_index=block.content_index))
        return block

    def open_tool_call(self, tool_call_id: str, name: str) -> OpenBlock:
        block = self._open("toolCall")
        block.tool_call_id, block.tool_name = tool_call_id, name
        self._emit(
            ToolCallStartEvent(content_index=block.content_index, id=tool_call_id, name=name)
        )
        return block

    def _open(self, kind: BlockKind) -> OpenBlock:
        block = OpenBlock(kind, len(self._blocks))
        self._blocks.append(block)
        return block

    def append(self, block: OpenBlock, delta: str) -> None:
        """Add a fragment of text, thinking, or argument JSON to an open block."""
        if not delta or block.closed:
            return
        block.parts.append(delta)
        index = block.content_index
        if block.kind == "text":
            self._emit(TextDeltaEvent(content_index=index, delta=delta))
        elif block.kind == "thinking":
            self._emit(ThinkingDeltaEvent(content_index=index, delta=delta))
        else:
            self._emit(ToolCallDeltaEvent(content_index=index, delta=delta))

    def close(self, block: OpenBlock, *, default_arguments: dict[str, Any] | None = None) -> None:
        """End a block. A tool call's arguments are parsed here: JSON that is not an object
        raises :class:`VendorStreamError` naming the tool."""
        if block.closed:
            return
        block.closed = True
        index = block.content_index
        if block.kind == "text":
            self._emit(TextEndEvent(content_index=index, content=block.text))
        elif block.kind == "thinking":
            self._emit(
                ThinkingEndEvent(content_index=index, content=block.text, signature=block.signature)
            )
        else:
            arguments = _tool_arguments(block, default_arguments or {})
            call = ToolCall(id=block.tool_call_id, name=block.tool_name, arguments=arguments)
            self._emit(ToolCallEndEvent(content_index=index, tool_call=call))

    def close_all(self) -> None:
        for block in self._blocks:
            self.close(block)

    @property
    def has_tool_calls(self) -> bool:
        return any(block.kind == "toolCall" for block in self._blocks)

    # -- the end ----------------------------------------------------------------------------

    def finish(self, reason: FinishReason) -> list[AssistantMessageEvent]:
        """Close what is open and queue ``done``; returns every event still queued."""
        self.close_all()
        message = self._message(stop_reason=reason)
        self._emit(DoneEvent(reason=reason, message=message))
        return self.take_events()

    def failure(self, reason: Literal["error", "aborted"], error_message: str) -> ErrorEvent:
        """The ``error`` event ending this reply, holding everything streamed so far."""
        message = self._message(stop_reason=reason, error_message=error_message)
        event = ErrorEvent(reason=reason, error=message)
        self._accumulator.add(event)
        return event

    def _message(self, *, stop_reason: str, error_message: str | None = None) -> AssistantMessage:
        partial = self._accumulator.message
        return partial.model_copy(
            deep=True,
            update={
                "usage": self.usage.model_copy(),
                "stop_reason": stop_reason,
                "error_message": error_message,
            },
        )


def _tool_arguments(block: OpenBlock, default: dict[str, Any]) -> dict[str, Any]:
    text = block.text
    if not text.strip():
        return dict(default)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise VendorStreamError(
            f"the model sent invalid JSON arguments for tool {block.tool_name!r} "
            f"(call {block.tool_call_id!r}): {exc}; arguments began {text[:80]!r}"
        ) from None
    if not isinstance(value, dict):
        raise VendorStreamError(
            f"the model sent arguments for tool {block.tool_name!r} (call "
            f"{block.tool_call_id!r}) that are not a JSON object: {text[:80]!r}"
        )
    return value


def parse_event_data(data: str) -> dict[str, Any]:
    """The JSON object an event's ``data:`` carries; anything else is a
    :class:`VendorStreamError` quoting the start of what arrived."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise VendorStreamError(
            f"malformed event stream: a data line is not JSON: {_snippet(data)}"
        ) from None
    if not isinstance(value, dict):
        raise VendorStreamError(
            f"malformed event stream: a data line is not a JSON object: {_snippet(data)}"
        )
    return value


def vendor_error_text(payload: Any, *, with_type: bool = False) -> str | None:
    """The server's own message in an error body: ``{"error": {"message": …}}`` (OpenAI,
    Anthropic), ``{"error": "…"}``, ``{"message": "…"}`` or ``{"detail": "…"}`` (some
    compatible servers). ``with_type`` puts the error's ``type``, when given, first."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        kind = error.get("type")
        if isinstance(message, str) and message:
            if with_type and isinstance(kind, str) and kind:
                return f"{kind}: {message}"
            return message
        if isinstance(kind, str) and kind:
            return kind
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _snippet(text: str) -> str:
    return repr(text if len(text) <= SNIPPET_LENGTH else text[:SNIPPET_LENGTH] + "…")
