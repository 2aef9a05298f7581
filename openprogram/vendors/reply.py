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
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "BLOCK_SEPARATOR",
    "BlockKey",
    "HttpReply",
    "PathPart",
    "Piece",
    "ToolCallParts",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "block_key",
    "error_text",
    "joined_texts",
    "messages_input",
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
    """One tool call: its name, and its JSON arguments as they arrived (in pieces), or as a
    value when the vendor sends them whole (an Anthropic ``tool_use`` block's ``input``)."""

    name: str = ""
    pieces: list[str] = field(default_factory=list)
    value: Any = None

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


@dataclass
class HttpReply:
    """A reply put back together, and the new input message of the request that asked it."""

    input_role: str | None = None
    input_text: str = ""
    text: dict[Any, list[str]] = field(default_factory=dict)
    thinking: dict[Any, list[str]] = field(default_factory=dict)
    tools: dict[Any, ToolCallParts] = field(default_factory=dict)
    stop_reason: str | None = None
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
