"""From a vendor's stream to our events: content blocks, their indexes, usage, the final reply.

The vendor's own reader (:class:`~openprogram.vendors.reply.StreamReader`, the one the
store's views read recorded calls with) turns each server-sent event into pieces; a
:class:`StreamParser` turns the pieces into calls of a :class:`ReplyAssembler`: it opens a
block, appends deltas, closes it. The assembler numbers blocks contiguously from 0 in the
order they open — the index each has in the final message's ``content`` — emits the matching
``*_start`` / ``*_delta`` / ``*_end`` events, and builds the final (or, on failure, the
partial) ``AssistantMessage``. A tool the server runs itself is not a block of ours.

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
from openprogram.vendors.reply import (
    ArgumentsPiece,
    BlockEnd,
    BlockKey,
    BlockStart,
    CutPiece,
    EndPiece,
    ErrorPiece,
    SignaturePiece,
    StopPiece,
    StreamPiece,
    StreamReader,
    TextPiece,
    ThinkingPiece,
    UnreadablePiece,
    UsagePiece,
)

FinishReason = Literal["stop", "length", "toolUse"]
STREAM_ENDED_EARLY = "stream ended before the reply finished"
SNIPPET_LENGTH = 200
"""Characters of a server's own text quoted in an error message, when it names no message."""
BlockKind = Literal["text", "thinking", "toolCall"]


class VendorStreamError(Exception):
    """The stream cannot go on; the message says why, without the api name (added later)."""


@dataclass(slots=True)
class OpenBlock:
    """A content block being streamed: text, thinking, or a tool call's argument JSON (and
    the arguments it started with, kept when no JSON arrives)."""

    kind: BlockKind
    content_index: int
    parts: list[str] = field(default_factory=list)
    tool_call_id: str = ""
    tool_name: str = ""
    signature: str | None = None
    initial_arguments: dict[str, Any] = field(default_factory=dict)
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

    def open_tool_call(
        self, tool_call_id: str, name: str, arguments: dict[str, Any] | None = None
    ) -> OpenBlock:
        block = self._open("toolCall")
        block.tool_call_id, block.tool_name = tool_call_id, name
        block.initial_arguments = dict(arguments or {})
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

    def close(self, block: OpenBlock) -> None:
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
            call = ToolCall(
                id=block.tool_call_id, name=block.tool_name, arguments=_arguments(block)
            )
            self._emit(ToolCallEndEvent(content_index=index, tool_call=call))

    def close_all(self) -> None:
        for block in self._blocks:
            self.close(block)

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


def _arguments(block: OpenBlock) -> dict[str, Any]:
    text = block.text
    if not text.strip():
        return dict(block.initial_arguments)
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


_PIECE_KINDS: dict[type[StreamPiece], BlockKind] = {
    TextPiece: "text",
    ThinkingPiece: "thinking",
    ArgumentsPiece: "toolCall",
}


class StreamParser:
    """Reads one vendor's server-sent events into our events: the vendor's ``stream`` reader
    turns each event's data into pieces, and each piece drives a :class:`ReplyAssembler`."""

    def __init__(self, reply: ReplyAssembler, stream: StreamReader) -> None:
        self.reply = reply
        self._stream = stream
        self._blocks: dict[BlockKey, OpenBlock] = {}
        self._finish: FinishReason | None = None
        self._said: str | None = None
        self._finished = False

    @property
    def finished(self) -> bool:
        """True once the terminal ``done`` event was produced."""
        return self._finished

    def feed(self, event: str, data: str) -> list[AssistantMessageEvent]:
        text = data.strip()
        if self._finished or not text:
            return []
        try:
            value: object = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = text
        return self._read(self._stream.feed(value, event), text)

    def end_of_stream(self) -> list[AssistantMessageEvent]:
        """The stream ended: the last events, or ``VendorStreamError`` if it ended early."""
        return self._read(self._stream.close(), "")

    def _read(self, pieces: list[StreamPiece], text: str) -> list[AssistantMessageEvent]:
        for piece in pieces:
            self._take(piece, text)
            if self._finished:
                return self.reply.finish(self._finish or "stop")
        return self.reply.take_events()

    def _take(self, piece: StreamPiece, text: str) -> None:
        if isinstance(piece, UnreadablePiece):
            raise VendorStreamError(f"malformed event stream: {piece.reason or _unreadable(text)}")
        if isinstance(piece, ErrorPiece):
            detail = piece.text or text[:SNIPPET_LENGTH]
            raise VendorStreamError(f"{self._stream.server_error}: {detail}")
        if isinstance(piece, CutPiece):
            raise VendorStreamError(f"{STREAM_ENDED_EARLY} (no {piece.missing} was sent)")
        if isinstance(piece, StopPiece):
            self._stop(piece)
        elif isinstance(piece, EndPiece):
            self._finished = True
        elif isinstance(piece, UsagePiece):
            tokens = piece.tokens
            self.reply.usage = Usage(
                input=tokens.input,
                output=tokens.output,
                cache_read=tokens.cache_read,
                cache_write=tokens.cache_write,
                total_tokens=tokens.total,
            )
        elif isinstance(piece, BlockStart):
            self._open(piece)
        else:
            self._into_block(piece)

    def _open(self, start: BlockStart) -> None:
        if start.server_side:
            return
        if start.kind == "text":
            block = self.reply.open_text()
        elif start.kind == "thinking":
            block = self.reply.open_thinking()
        else:
            arguments = start.arguments if isinstance(start.arguments, dict) else None
            block = self.reply.open_tool_call(start.id, start.name, arguments)
        self._blocks[start.block] = block

    def _into_block(
        self, piece: TextPiece | ThinkingPiece | ArgumentsPiece | SignaturePiece | BlockEnd
    ) -> None:
        block = self._blocks.get(piece.block)
        if block is None:  # a block we do not keep (a server's tool, a kind not known)
            return
        if isinstance(piece, BlockEnd):
            self._close(block)
        elif isinstance(piece, SignaturePiece):
            if block.kind == "thinking":
                block.signature = (block.signature or "") + piece.text or None
        elif _PIECE_KINDS[type(piece)] == block.kind:
            self.reply.append(block, piece.text)

    def _close(self, block: OpenBlock) -> None:
        try:
            self.reply.close(block)
        except VendorStreamError as exc:
            if self._finish == "length" and self._said is not None:
                cut = f"the reply was cut off at max_tokens: {self._said}"
                raise VendorStreamError(f"{exc} ({cut})") from None
            raise

    def _stop(self, stop: StopPiece) -> None:
        if stop.finish == "refused":
            raise VendorStreamError(f"{stop.refusal} ({stop.said})")
        self._finish, self._said = stop.finish, stop.said


def _unreadable(text: str) -> str:
    """Why an event's data cannot be read: it is not JSON, or not a JSON object."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return f"a data line is not JSON: {_snippet(text)}"
    return f"a data line is not a JSON object: {_snippet(text)}"


def _snippet(text: str) -> str:
    return repr(text if len(text) <= SNIPPET_LENGTH else text[:SNIPPET_LENGTH] + "…")
