"""From a vendor's stream to our events: content blocks, their indexes, usage, the final reply.

The vendor's own reader (:class:`~openprogram.vendors.reply.StreamReader`, the one the store's views
read recorded calls with) turns each server-sent event into pieces, and a :class:`ReplyAssembler`
turns the pieces into our events: it numbers blocks contiguously from 0 in the order they open — the
index each has in the final message's ``content`` — emits the matching ``*_start`` / ``*_delta`` /
``*_end`` events, and builds the final (or, on failure, the partial) ``AssistantMessage``. A tool
the server runs itself, or a block of a kind not known, is not a block of ours.

Anything that ends a stream early is a :class:`VendorStreamError`; the HTTP layer turns it
into an ``error`` event that keeps what was streamed so far."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
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
    BlockEnd,
    BlockKey,
    BlockStart,
    EndPiece,
    ErrorPiece,
    StopPiece,
    StreamPiece,
    StreamReader,
    UnreadablePiece,
    UsagePiece,
)

FinishReason = Literal["stop", "length", "toolUse"]
STREAM_ENDED_EARLY = "stream ended before the reply finished"
SNIPPET_LENGTH = 200
"""Characters of a server's own text quoted in an error message, when it names no message."""
BlockKind = Literal["text", "thinking", "toolCall"]
_KINDS: dict[str, BlockKind] = {"text": "text", "thinking": "thinking", "tool": "toolCall"}
"""Each kind of block a vendor's reader starts, as ours."""
_PIECE_BLOCKS: dict[str, BlockKind] = {
    "text": "text",
    "thinking": "thinking",
    "arguments": "toolCall",
}
"""The kind of block each kind of piece belongs in (a signature: a thinking block's)."""

_STARTS: dict[str, type[TextStartEvent | ThinkingStartEvent]] = {
    "text": TextStartEvent,
    "thinking": ThinkingStartEvent,
}
_DELTAS: dict[str, type[TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent]] = {
    "text": TextDeltaEvent,
    "thinking": ThinkingDeltaEvent,
    "toolCall": ToolCallDeltaEvent,
}
"""The event starting a text or thinking block, and each kind of block's delta event."""


class VendorStreamError(Exception):
    """The stream cannot go on; the message says why, without the api name (added later)."""


@dataclass(slots=True)
class OpenBlock:
    """A content block being streamed: text, thinking, or a tool call's argument JSON (and
    the arguments it started with, kept when no JSON arrives)."""

    kind: BlockKind
    content_index: int
    tool_call_id: str = ""
    tool_name: str = ""
    initial_arguments: dict[str, Any] = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)
    signature: str | None = None
    closed: bool = False

    @property
    def text(self) -> str:
        return "".join(self.parts)


class ReplyAssembler:
    """Builds one reply from the server-sent events ``stream`` (the vendor's reader) reads;
    every step queues the events it implies (see :meth:`take_events`)."""

    def __init__(self, model: Model, stream: StreamReader) -> None:
        self.model = model
        self.usage = Usage()
        self.finished = False
        """True once the terminal ``done`` event was produced."""
        self._stream = stream
        self._accumulator = MessageAccumulator(
            api=model.api, provider=model.provider, model=model.id
        )
        self._blocks: list[OpenBlock] = []
        self._by_key: dict[BlockKey, OpenBlock] = {}
        self._queued: list[AssistantMessageEvent] = []
        self._stop: StopPiece | None = None

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

    def feed(self, event: str, data: str) -> list[AssistantMessageEvent]:
        """The events one server-sent event (its name and data) brings."""
        text = data.strip()
        if self.finished or not text:
            return []
        try:
            value: object = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = text
        return self._read(self._stream.feed(value, event), text)

    def end_of_stream(self) -> list[AssistantMessageEvent]:
        """The stream ended: the last events, or ``VendorStreamError`` if it ended early."""
        return self._read(self._stream.close(), "")

    def failure(self, reason: Literal["error", "aborted"], error_message: str) -> ErrorEvent:
        """The ``error`` event ending this reply, holding everything streamed so far."""
        message = self._message(stop_reason=reason, error_message=error_message)
        event = ErrorEvent(reason=reason, error=message)
        self._accumulator.add(event)
        return event

    # -- the pieces -------------------------------------------------------------------------

    def _read(self, pieces: list[StreamPiece], text: str) -> list[AssistantMessageEvent]:
        for piece in pieces:
            self._take(piece, text)
            if self.finished:
                return self._finish()
        return self.take_events()

    def _take(self, piece: StreamPiece, text: str) -> None:
        if isinstance(piece, UnreadablePiece):
            raise VendorStreamError(f"malformed event stream: {piece.reason or _unreadable(text)}")
        if isinstance(piece, ErrorPiece):
            detail = piece.text or text[:SNIPPET_LENGTH]
            raise VendorStreamError(f"{self._stream.server_error}: {detail}")
        if isinstance(piece, EndPiece):
            if piece.missing is not None:
                raise VendorStreamError(f"{STREAM_ENDED_EARLY} (no {piece.missing} was sent)")
            self.finished = True
        elif isinstance(piece, StopPiece):
            if piece.finish == "refused":
                raise VendorStreamError(f"{piece.refusal} ({piece.said})")
            self._stop = piece
        elif isinstance(piece, UsagePiece):
            self.usage = Usage(**asdict(piece.tokens))
        elif isinstance(piece, BlockStart):
            if not piece.server_side:
                self._open(piece)
        elif (block := self._by_key.get(piece.block)) is not None:  # a block we keep
            if isinstance(piece, BlockEnd):
                self._close_cut_short(block)
            elif piece.kind == "signature" and block.kind == "thinking":
                block.signature = (block.signature or "") + piece.text or None
            elif _PIECE_BLOCKS.get(piece.kind) == block.kind:
                self._append(block, piece.text)

    def _open(self, start: BlockStart) -> None:
        arguments = start.arguments if isinstance(start.arguments, dict) else {}
        block = OpenBlock(_KINDS[start.kind], len(self._blocks), start.id, start.name, arguments)
        self._blocks.append(block)
        self._by_key[start.block] = block
        index = block.content_index
        if block.kind == "toolCall":
            self._emit(ToolCallStartEvent(content_index=index, id=start.id, name=start.name))
        else:
            self._emit(_STARTS[block.kind](content_index=index))

    def _append(self, block: OpenBlock, delta: str) -> None:
        """Add a fragment of text, thinking, or argument JSON to an open block."""
        if not delta or block.closed:
            return
        block.parts.append(delta)
        self._emit(_DELTAS[block.kind](content_index=block.content_index, delta=delta))

    def _close_cut_short(self, block: OpenBlock) -> None:
        """Close a block, saying so when its arguments fail after a stop at max_tokens."""
        try:
            self._close(block)
        except VendorStreamError as exc:
            if self._stop is not None and self._stop.finish == "length":
                cut = f"the reply was cut off at max_tokens: {self._stop.said}"
                raise VendorStreamError(f"{exc} ({cut})") from None
            raise

    def _close(self, block: OpenBlock) -> None:
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

    # -- the end ----------------------------------------------------------------------------

    def _finish(self) -> list[AssistantMessageEvent]:
        """Close what is open and queue ``done``; returns every event still queued."""
        for block in self._blocks:
            self._close(block)
        finish = self._stop.finish if self._stop is not None else "stop"
        reason: FinishReason = "stop" if finish == "refused" else finish
        self._emit(DoneEvent(reason=reason, message=self._message(stop_reason=reason)))
        return self.take_events()

    def _emit(self, event: AssistantMessageEvent) -> None:
        self._accumulator.add(event)
        self._queued.append(event)

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


def _unreadable(text: str) -> str:
    """Why an event's data cannot be read: it is not JSON, or not a JSON object."""
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError:
        return f"a data line is not JSON: {_snippet(text)}"
    return f"a data line is not a JSON object: {_snippet(text)}"


def _snippet(text: str) -> str:
    return repr(text if len(text) <= SNIPPET_LENGTH else text[:SNIPPET_LENGTH] + "…")
