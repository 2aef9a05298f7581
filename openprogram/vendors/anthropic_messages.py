"""Anthropic's Messages API (``…/messages``), read from a recorded HTTP call.

A call is one of it when its path ends in ``/messages`` and it sends an
``anthropic-version`` header or goes to an Anthropic host, or, on a path no vendor claims,
when its first SSE event's data is ``message_start`` or its whole body an assistant
``message``.

The new input is the last of the request's ``messages`` — its text, ``[image]`` or
``[document]`` for other blocks, a ``tool_result`` block shown with the name of the
``tool_use`` it answers (found by its id among the earlier messages) — or the ``system``
prompt when there is no message. A stream is read from its events: ``message_start`` (the
usage so far), ``content_block_start`` and ``content_block_delta`` by block ``index``
(``text_delta`` text, ``thinking_delta`` thinking, ``input_json_delta`` pieces of a tool
call's input; a ``tool_use`` block that gets no piece keeps the ``input`` it started with),
``message_delta`` (the stop reason, and usage counts that replace the earlier ones) and
``error`` (the server's own error in the stream). A whole message is read from its
``content`` blocks, ``stop_reason`` and ``usage`` (``input_tokens`` / ``output_tokens``).

The streamed pieces of text are the ``content_block_delta`` events' ``text``, ``thinking``
and ``partial_json``, by block ``index``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    Piece,
    as_dict,
    as_list,
    as_str,
    block_key,
    error_text,
    joined_texts,
    messages_input,
)
from openprogram.vendors.wire import ServedApi, Wire

__all__ = ["ANTHROPIC_MESSAGES", "ANTHROPIC_VERSION", "ANTHROPIC_WIRE", "AnthropicMessages"]

ANTHROPIC_VERSION = "anthropic-version"
"""The header naming the API's version, sent with every request."""
_KEY = "ANTHROPIC_API_KEY"
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


class AnthropicMessages:
    """Messages, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "anthropic-messages"
    wire = ANTHROPIC_WIRE
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
        for data in datas:
            _stream_event(as_dict(data), reply)
        if whole is not None:
            message = as_dict(whole)
            reply.error = error_text(message)
            for number, block in enumerate(as_list(message.get("content"))):
                _whole_block(number, as_dict(block), reply)
            reply.stop_reason = as_str(message.get("stop_reason"))
            reply.add_usage(message.get("usage"))
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


def _stream_event(event: dict[str, Any], reply: HttpReply) -> None:
    kind = event.get("type")
    if kind == "message_start":
        reply.add_usage(as_dict(event.get("message")).get("usage"))
    elif kind == "content_block_start":
        _whole_block(block_key(event.get("index")), as_dict(event.get("content_block")), reply)
    elif kind == "content_block_delta":
        _delta(block_key(event.get("index")), as_dict(event.get("delta")), reply)
    elif kind == "message_delta":
        reply.stop_reason = as_str(as_dict(event.get("delta")).get("stop_reason")) or (
            reply.stop_reason
        )
        reply.add_usage(event.get("usage"))
    elif kind == "error":
        reply.error = error_text(event) or reply.error


def _whole_block(key: Any, block: dict[str, Any], reply: HttpReply) -> None:
    kind = block.get("type")
    if kind == "text":
        reply.add_text(key, block.get("text"))
    elif kind == "thinking":
        reply.add_thinking(key, block.get("thinking"))
    elif kind in _TOOL_BLOCKS:
        tool = reply.tool(key)
        tool.name = as_str(block.get("name")) or ""
        tool.value = block.get("input")


def _delta(key: Any, delta: dict[str, Any], reply: HttpReply) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        reply.add_text(key, delta.get("text"))
    elif kind == "thinking_delta":
        reply.add_thinking(key, delta.get("thinking"))
    elif kind == "input_json_delta":
        piece = as_str(delta.get("partial_json"))
        if piece is not None:
            reply.tool(key).pieces.append(piece)
