"""Anthropic's Messages API (``…/messages``), read from a recorded HTTP call.

A call is one of it when its path ends in ``/messages`` and it sends an ``anthropic-version`` header
or goes to an Anthropic host, or, on a path no vendor claims, when its first SSE event's data is
``message_start`` or its whole body an assistant ``message``.

The new input is the last of the request's ``messages`` — its text, ``[image]`` or ``[document]``
for other blocks, a ``tool_result`` block shown with the name of the ``tool_use`` it answers (found
by its id among the earlier messages) — or the ``system`` prompt when there is no message. A stream
is read by :class:`MessagesStream`, the one reader of it (the built-in ``anthropic-messages``
provider streams its events from the same pieces), from its events: ``message_start`` (the usage so
far), ``content_block_start`` and ``content_block_delta`` by block ``index`` (``text_delta`` text,
``thinking_delta`` thinking, ``signature_delta`` its signature, ``input_json_delta`` pieces of a
tool call's input; a ``tool_use`` block that gets no piece keeps the ``input`` it started with),
``message_delta`` (the stop reason, and usage counts that replace the earlier ones) and ``error``
(the server's own error in the stream). A whole message is read from its ``content`` blocks,
``stop_reason`` and ``usage`` (``input_tokens`` / ``output_tokens``) (:func:`message_pieces`).

The streamed pieces of text are the ``content_block_delta`` events' ``text``, ``thinking``
and ``partial_json``, by block ``index``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from openprogram.recording.wire_rules import WireRules
from openprogram.vendors.reply import (
    BlockEnd,
    BlockKey,
    BlockPiece,
    BlockPieceKind,
    BlockStart,
    EndPiece,
    ErrorPiece,
    Finish,
    HttpReply,
    Piece,
    StopPiece,
    StreamPiece,
    Tokens,
    UnreadablePiece,
    UsagePiece,
    as_count,
    as_dict,
    as_list,
    as_str,
    block_key,
    error_text,
    joined_texts,
    messages_input,
    read_stream,
)
from openprogram.vendors.wire import ServedApi, Wire

__all__ = [
    "ANTHROPIC_MESSAGES",
    "ANTHROPIC_VERSION",
    "ANTHROPIC_WIRE",
    "AnthropicMessages",
    "MessagesStream",
    "message_pieces",
    "message_tokens",
]

ANTHROPIC_VERSION = "anthropic-version"
"""The header naming the API's version, sent with every request."""
_KEY = "ANTHROPIC_API_KEY"
MESSAGES_PATH = "/v1/messages"
"""Where a request goes, under the API's origin."""

ANTHROPIC_WIRE = Wire(
    vendor="anthropic",
    hosts=("api.anthropic.com",),
    official_hosts=r"api\.anthropic\.com",
    key_variables=(_KEY,),
    key_header="x-api-key",
    placeholder_if_unset=(_KEY,),
    placeholder_variables=(_KEY,),
    stored_headers=(ANTHROPIC_VERSION, "anthropic-beta"),
    version_headers=((ANTHROPIC_VERSION, "2023-06-01"),),
    compared_headers=(ANTHROPIC_VERSION,),
    served=ServedApi(
        "anthropic",
        "https://api.anthropic.com",
        "",
        # the official SDKs, the Vercel AI SDK, Claude Code; litellm reads the second
        ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
        "anthropic",
        versioned="/v1",
    ),
)
"""Anthropic's API: its key in ``x-api-key``, its version in ``anthropic-version``."""

_TOOL_BLOCKS = ("tool_use", "server_tool_use")
_DELTA_FIELDS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
"""Each streamed delta's type, and the field holding its piece of text."""
_DELTA_PIECES: dict[str, tuple[str, BlockPieceKind]] = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "signature"),
    "input_json_delta": ("partial_json", "arguments"),
}
"""Each streamed delta's type, the field holding its piece, and the piece it is."""
_BLOCK_EVENTS = ("content_block_start", "content_block_delta", "content_block_stop")
_STOPS: dict[str, Finish] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
    "refusal": "refused",
}
"""What each ``stop_reason`` means (any other: ``stop``)."""
_TOKEN_FIELDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}
"""Each count of a usage object, and its name in openprogram's words."""


class AnthropicMessages:
    """Messages, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "anthropic-messages"
    wire = ANTHROPIC_WIRE
    last_events = frozenset({"message_stop"})
    kind_fields = frozenset({"stop_reason"})
    recording_rules = WireRules(
        credential_names=frozenset({ANTHROPIC_WIRE.key_header}),
        conversation_keys=frozenset({"messages", "system"}),
        compared_response_headers=frozenset({"x-should-retry"}),  # the SDK retries on it
        signature_keys=frozenset({"signature"}),  # a thinking block's, signed anew
        per_run_objects=("message",),  # message_start's message
    )
    input_tokens = "input_tokens"
    output_tokens = "output_tokens"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return path.endswith("/messages") and (ANTHROPIC_VERSION in headers or "anthropic" in host)

    def model_endpoint(self, path: str) -> str | None:
        return None

    def claims_shape(self, first: object) -> bool:
        shape = as_dict(first)
        kind = as_str(shape.get("type")) or ""
        return kind == "message_start" or (kind == "message" and shape.get("role") == "assistant")

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        messages_input(as_dict(body), reply, _blocks_text)
        read_stream(MessagesStream(), datas, reply)
        if whole is not None:
            for piece in message_pieces(whole):
                reply.add(piece)
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        delta = data.get("delta")
        if data.get("type") != "content_block_delta" or not isinstance(delta, dict):
            return
        field = _DELTA_FIELDS.get(str(delta.get("type")))
        if field is not None and isinstance(delta.get(field), str):
            yield data.get("index"), Piece(position, ("data", "delta", field), delta[field])


ANTHROPIC_MESSAGES = AnthropicMessages()


def _blocks_text(content: Any, messages: list[Any]) -> str:
    """A message's content: a string, or blocks (text, tool results and calls, placeholders)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        kind = as_str(block.get("type"))
        if kind == "text":
            texts.append(as_str(block.get("text")) or "")
        elif kind == "tool_result":
            result = _blocks_text(block.get("content"), messages)
            texts.append(f"{_tool_name(messages, block.get('tool_use_id'))} → {result}")
        elif kind in _TOOL_BLOCKS:
            arguments = orjson.dumps(block.get("input", {})).decode()
            texts.append(f"{as_str(block.get('name')) or '?'}({arguments})")
        elif kind in ("image", "document"):
            texts.append(f"[{kind}]")
    return joined_texts(texts)


def _tool_name(messages: list[Any], tool_use_id: Any) -> str:
    for message in reversed(messages):
        for block in as_list(as_dict(message).get("content")):
            block = as_dict(block)
            if block.get("type") in _TOOL_BLOCKS and block.get("id") == tool_use_id:
                return as_str(block.get("name")) or "?"
    return "?"


def message_tokens(usage: dict[str, Any]) -> Tokens:
    """A usage object's counts: input (without the cached tokens), output, cache read and
    written; the total is their sum."""
    counts = {name: as_count(usage.get(field)) for field, name in _TOKEN_FIELDS.items()}
    return Tokens(**counts, total_tokens=sum(counts.values()))


class MessagesStream:
    """One Messages stream, read event by event into pieces.

    An event's kind is its data's ``type``, else the event's name; ``ping`` and kinds not known are
    passed over, as the API's versioning policy asks. ``content_block_start`` starts a text,
    thinking or tool block by its ``index`` (other kinds are started and read no further); a delta
    or stop of a block never started is refused; ``message_delta`` gives the stop reason and usage
    counts that replace the earlier ones (a count that is not a whole number is passed over);
    ``message_stop`` ends the stream, and a stream that ends before it is cut."""

    server_error = "the server sent an error"

    def __init__(self) -> None:
        self._started: set[BlockKey] = set()
        self._usage: dict[str, int] = {}
        self._stopped = False
        self._ended = False

    def feed(self, data: object, event: str = "") -> list[StreamPiece]:
        if self._ended or event == "ping":
            return []
        if not isinstance(data, dict):
            return [UnreadablePiece()]
        kind = data.get("type")
        kind = kind if isinstance(kind, str) else event
        if kind == "message_start":
            return self._usage_pieces(as_dict(data.get("message")).get("usage"))
        if kind in _BLOCK_EVENTS:
            return self._block_event(kind, data)
        if kind == "message_delta":
            reason = as_dict(data.get("delta")).get("stop_reason")
            stop = [self._stop(reason)] if isinstance(reason, str) else []
            return [*stop, *self._usage_pieces(data.get("usage"))]
        if kind == "message_stop":
            self._ended = True
            stop = [] if self._stopped else [StopPiece(None, "stop")]
            return [*stop, EndPiece()]
        if kind == "error":
            return [ErrorPiece(error_text(data))]
        return []

    def close(self) -> list[StreamPiece]:
        return [] if self._ended else [EndPiece("message_stop")]

    def _block_event(self, kind: str, data: dict[str, Any]) -> list[StreamPiece]:
        index = data.get("index")
        pieces: list[StreamPiece] = []
        if not isinstance(index, int) or isinstance(index, bool):
            pieces.append(UnreadablePiece(f"{kind} without a block index"))
        key = block_key(index)
        if kind == "content_block_start":
            self._started.add(key)
            return [*pieces, *_start_pieces(key, as_dict(data.get("content_block")))]
        delta = data.get("delta")
        is_delta = kind == "content_block_delta"
        if is_delta and not isinstance(delta, dict):
            return pieces
        if key not in self._started:
            pieces.append(UnreadablePiece(f"content block {index} was never started"))
        if not is_delta:
            return [*pieces, BlockEnd(key)]
        found = _DELTA_PIECES.get(str(as_dict(delta).get("type")))
        text = as_dict(delta).get(found[0]) if found else None
        return (
            [*pieces, BlockPiece(key, found[1], text)]
            if found and isinstance(text, str)
            else pieces
        )

    def _stop(self, reason: str) -> StopPiece:
        self._stopped = True
        finish = _STOPS.get(reason, "stop")
        refusal = "the model declined to answer" if finish == "refused" else ""
        return StopPiece(reason, finish, f"stop_reason {reason!r}", refusal)

    def _usage_pieces(self, usage: object) -> list[StreamPiece]:
        if not isinstance(usage, dict):
            return []
        for field in _TOKEN_FIELDS:
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self._usage[field] = value
        return [UsagePiece(usage, message_tokens(self._usage))]


def message_pieces(whole: object) -> list[StreamPiece]:
    """The pieces of a whole message: its content blocks, stop reason and usage."""
    message = as_dict(whole)
    error = error_text(message)
    pieces: list[StreamPiece] = [ErrorPiece(error)] if error else []
    for number, block in enumerate(as_list(message.get("content"))):
        pieces += _start_pieces(number, as_dict(block))
    reason = as_str(message.get("stop_reason"))
    if reason is not None:
        pieces.append(StopPiece(reason, _STOPS.get(reason, "stop"), f"stop_reason {reason!r}"))
    usage = message.get("usage")
    if isinstance(usage, dict):
        pieces.append(UsagePiece(usage, message_tokens(usage)))
    return pieces


def _start_pieces(key: BlockKey, block: dict[str, Any]) -> list[StreamPiece]:
    """A content block as it starts (or stands whole): its kind, and what it holds."""
    kind = block.get("type")
    pieces: list[StreamPiece] = []
    if kind == "text" or kind == "thinking":
        pieces.append(BlockStart(key, kind))
        if isinstance(block.get(kind), str):
            pieces.append(BlockPiece(key, kind, block[kind]))
        if kind == "thinking" and isinstance(block.get("signature"), str):
            pieces.append(BlockPiece(key, "signature", block["signature"]))
    elif kind in _TOOL_BLOCKS:
        call_id, name = as_str(block.get("id")) or "", as_str(block.get("name")) or ""
        server_side = kind != "tool_use"
        arguments = block.get("input")
        pieces.append(BlockStart(key, "tool", call_id, name, arguments, server_side))
    return pieces
