"""What a vendor reads out of a recorded call: the reply put back together, and the pieces of
text it streamed.

:class:`HttpReply` collects the pieces of a reply as a vendor streams them — text, thinking,
tool calls whose arguments arrive in pieces, the stop reason, the usage — each block under
the key the vendor gives it, and puts them back together: the pieces of a block joined with
nothing, blocks joined with a newline. A recorded body is whatever the server sent, so every
reader here takes any JSON value: a field of an unexpected type is treated as absent, never
as an error. A :class:`Piece` is one streamed piece of text where it stands in the call's
events, so that a block's pieces can be joined, redacted and put back. Each vendor's format is
read in its own module of :mod:`openprogram.vendors`.

A vendor whose stream openprogram's own providers read too (Chat Completions, Messages) has one
:class:`StreamReader`: it turns each server-sent event's data, one at a time, into
:data:`StreamPiece` values — a block started (text, thinking, or a tool call with its id and name),
a piece of it, its end, the stop reason, the usage, the server's own error, the stream's end, what a
strict reader refuses — from which both the store's :class:`HttpReply` (:func:`read_stream`) and the
providers' events are built: the two never read one reply two ways."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import orjson

__all__ = [
    "BLOCK_SEPARATOR",
    "BlockEnd",
    "BlockKey",
    "BlockPiece",
    "BlockPieceKind",
    "BlockStart",
    "EndPiece",
    "ErrorPiece",
    "Finish",
    "HttpReply",
    "PathPart",
    "Piece",
    "StopPiece",
    "StreamPiece",
    "StreamReader",
    "Tokens",
    "ToolCallParts",
    "UnreadablePiece",
    "UsagePiece",
    "as_count",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "block_key",
    "error_text",
    "joined_texts",
    "messages_input",
    "read_stream",
]

BLOCK_SEPARATOR = "\n"
"""Between the blocks of one reply or one message (a block's own pieces join with nothing)."""

BlockKey = Hashable
"""What tells one streamed block from the others of its call (the vendor's index, or ids)."""
PathPart = str | int


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: object) -> int | None:
    return value if type(value) is int else None


def as_count(value: object) -> int:
    """``value`` if it is a count of tokens (a whole number above 0), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def block_key(*values: object) -> BlockKey:
    """A key for a block from the vendor's index (or ids): whole numbers and strings as they
    are, any other value by its JSON text, so that any recorded value can be a key."""
    key = tuple(
        value if type(value) in (int, str) or value is None else orjson.dumps(value).decode()
        for value in values
    )
    return key[0] if len(key) == 1 else key


def joined_texts(texts: list[str]) -> str:
    return BLOCK_SEPARATOR.join(texts)


def error_text(value: object) -> str | None:
    """The error an API reports in a body or an event: ``type: message`` from
    ``{"error": {"code"|"type", "message"}}`` (OpenAI, Anthropic), or from an object that is
    itself the error; None when ``value`` reports none."""
    body = as_dict(value)
    inner = body.get("error")
    if isinstance(inner, str):
        return inner
    error = as_dict(inner) or (body if "message" in body else {})
    message = as_str(error.get("message"))
    if message is None:
        return None
    kind = as_str(error.get("code")) or as_str(error.get("type"))
    return f"{kind}: {message}" if kind and kind != "error" else message


@dataclass
class ToolCallParts:
    """One tool call: its name, its JSON arguments as they arrived (in pieces), or as a value
    when the vendor sends them whole (an Anthropic ``tool_use`` block's ``input``), and its id
    where the vendor's reader gives one."""

    name: str = ""
    pieces: list[str] = field(default_factory=list)
    value: Any = None
    id: str = ""

    def arguments(self) -> Any:
        """The arguments: the pieces joined and parsed as JSON; the joined text itself when it
        is not JSON (a stream cut mid-way); the whole value when no piece came."""
        text = "".join(self.pieces)
        if not text.strip():
            return self.value if self.value is not None else {}
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text


Finish = Literal["stop", "length", "toolUse", "refused"]
"""Why a reply ended, in openprogram's words; ``refused``: the model or a filter declined."""


@dataclass(frozen=True, slots=True)
class Tokens:
    """What a usage object counts, in openprogram's words."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0


@dataclass(frozen=True, slots=True)
class BlockStart:
    """A content block opens: text, thinking, or a tool call with its id and name (and its
    arguments when the vendor sends them whole). ``server_side``: a tool the server runs."""

    block: BlockKey
    kind: Literal["text", "thinking", "tool"]
    id: str = ""
    name: str = ""
    arguments: Any = None
    server_side: bool = False


BlockPieceKind = Literal["text", "thinking", "signature", "arguments"]


@dataclass(frozen=True, slots=True)
class BlockPiece:
    """A piece of a block's text, thinking, thinking signature or tool call arguments."""

    block: BlockKey
    kind: BlockPieceKind
    text: str


@dataclass(frozen=True, slots=True)
class BlockEnd:
    block: BlockKey


@dataclass(frozen=True, slots=True)
class StopPiece:
    """The stop reason as the vendor sent it (None: the stream ended without one), what it
    means, how the wire said it, and for a refused reply the refusal in words."""

    reason: str | None
    finish: Finish
    said: str = ""
    refusal: str = ""


@dataclass(frozen=True, slots=True)
class UsagePiece:
    """A usage object as sent, and every count the stream gave so far (``tokens``)."""

    usage: dict[str, Any]
    tokens: Tokens


@dataclass(frozen=True, slots=True)
class ErrorPiece:
    """The server's own error in the stream: ``type: message``; None when it says neither."""

    text: str | None


@dataclass(frozen=True, slots=True)
class EndPiece:
    """The stream ended: having finished the reply, or cut before ``missing`` came."""

    missing: str | None = None


@dataclass(frozen=True, slots=True)
class UnreadablePiece:
    """What a strict reader refuses (the store's passes over it): ``reason`` in words, or
    None when the event's data is not a JSON object."""

    reason: str | None = None


StreamPiece = (
    BlockStart | BlockPiece | BlockEnd | StopPiece | UsagePiece | ErrorPiece | EndPiece
) | UnreadablePiece


class StreamReader(Protocol):
    """One stream of a vendor's server-sent events, read event by event into pieces."""

    server_error: str
    """How a message introduces the server's own error sent in the stream."""

    def feed(self, data: object, event: str = "") -> list[StreamPiece]:
        """The pieces of one event: its data (a JSON value, or text that is not JSON), and
        its name when known."""
        ...

    def close(self) -> list[StreamPiece]:
        """The stream ended: its end, and the blocks it started without saying so."""
        ...


@dataclass
class HttpReply:
    """A reply put back together, and the new input message of the request that asked it."""

    input_role: str | None = None
    input_text: str = ""
    text: dict[Any, list[str]] = field(default_factory=dict)
    thinking: dict[Any, list[str]] = field(default_factory=dict)
    tools: dict[Any, ToolCallParts] = field(default_factory=dict)
    stop_reason: str | None = None
    finish: Finish | None = None
    """What the stop reason means, where the vendor's stream reader says."""
    usage: dict[str, Any] | None = None
    error: str | None = None

    def add_text(self, key: Any, piece: Any) -> None:
        if isinstance(piece, str):
            self.text.setdefault(key, []).append(piece)

    def add_thinking(self, key: Any, piece: Any) -> None:
        if isinstance(piece, str):
            self.thinking.setdefault(key, []).append(piece)

    def tool(self, key: Any) -> ToolCallParts:
        return self.tools.setdefault(key, ToolCallParts())

    def add(self, piece: StreamPiece) -> None:
        """Put one streamed piece in its place (block ends, signatures, the stream's end and
        what a strict reader refuses are passed over)."""
        if isinstance(piece, BlockPiece):
            if piece.kind == "text":
                self.add_text(piece.block, piece.text)
            elif piece.kind == "thinking":
                self.add_thinking(piece.block, piece.text)
            elif piece.kind == "arguments":
                self.tool(piece.block).pieces.append(piece.text)
        elif isinstance(piece, BlockStart) and piece.kind == "tool":
            tool = self.tool(piece.block)
            tool.id, tool.name, tool.value = piece.id, piece.name, piece.arguments
        elif isinstance(piece, StopPiece):
            self.stop_reason = piece.reason or self.stop_reason
            self.finish = piece.finish
        elif isinstance(piece, UsagePiece):
            self.add_usage(piece.usage)
        elif isinstance(piece, ErrorPiece):
            self.error = piece.text or self.error

    def add_usage(self, usage: Any) -> None:
        """Merge a usage object in (a later count of the same field wins)."""
        if isinstance(usage, dict):
            self.usage = {**(self.usage or {}), **usage}

    @property
    def reply_text(self) -> str:
        return joined_texts(["".join(pieces) for pieces in self.text.values()])

    @property
    def thinking_text(self) -> str:
        return joined_texts(["".join(pieces) for pieces in self.thinking.values()])

    def tool_calls(self) -> list[tuple[str, Any]]:
        return [(tool.name or "?", tool.arguments()) for tool in self.tools.values()]

    @property
    def empty(self) -> bool:
        """Nothing of a reply was found (no text, thinking or tool call)."""
        return not (self.text or self.thinking or self.tools)


@dataclass(frozen=True)
class Piece:
    """One streamed piece: the event (its position in the call's events), the path to the
    string in that event row, and the string."""

    event: int
    path: tuple[PathPart, ...]
    text: str


def messages_input(
    body: dict[str, Any], reply: HttpReply, blocks_text: Callable[[Any, list[Any]], str]
) -> None:
    """The new input of a request in the shape Anthropic Messages and Bedrock Converse
    share: its last message (``blocks_text`` reading the content blocks, with the messages
    before it for a tool result's name), else its ``system`` prompt."""
    messages = as_list(body.get("messages"))
    if messages:
        message = as_dict(messages[-1])
        reply.input_role = as_str(message.get("role"))
        reply.input_text = blocks_text(message.get("content"), messages)
    elif "system" in body:
        reply.input_role = "system"
        reply.input_text = blocks_text(body["system"], [])


def read_stream(reader: StreamReader, datas: Iterable[object], reply: HttpReply) -> None:
    """Put into ``reply`` what ``reader`` reads of a stream's events' data, and of its end."""
    for data in datas:
        for piece in reader.feed(data):
            reply.add(piece)
    for piece in reader.close():
        reply.add(piece)
