"""openprogram's own provider-boundary events, read as the store reads a vendor's stream.

A provider call records the events openprogram's providers stream: ``text_delta``,
``thinking_delta`` and ``toolcall_delta`` carry the reply's pieces of text (``delta``) by
``content_index``, and the ``done`` event's message its usage (``input`` / ``output``) and
its ``reason`` the stop reason. :data:`OPENPROGRAM_EVENTS` reads them from the event rows as
stored — no provider event model is imported — for the streamed blocks ``scan`` redacts and
the tokens a call counts; ``show`` reads provider calls from the validated events instead."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openprogram.vendors.reply import BlockKey, HttpReply, Piece, as_dict, as_str, block_key

__all__ = ["DELTA_EVENTS", "OPENPROGRAM_EVENTS", "OpenprogramEvents"]

DELTA_EVENTS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})
"""The events that carry a piece of the reply's text in their ``delta``."""


class OpenprogramEvents:
    """openprogram's provider events, as :class:`~openprogram.vendors.EventReader`
    reads them: each event row is one of the stream's events."""

    input_tokens = "input"
    output_tokens = "output"

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        """The reply ``datas`` (the call's event rows) streamed: its text, thinking and tool
        call arguments, and the last ``done`` event's stop reason and usage."""
        reply = HttpReply()
        for data in datas:
            event = as_dict(data)
            kind = event.get("type")
            key = block_key(event.get("content_index"))
            if kind == "text_delta":
                reply.add_text(key, event.get("delta"))
            elif kind == "thinking_delta":
                reply.add_thinking(key, event.get("delta"))
            elif kind == "toolcall_delta" and isinstance(event.get("delta"), str):
                reply.tool(key).pieces.append(event["delta"])
            elif kind == "done":
                usage = as_dict(event.get("message")).get("usage")
                reply.usage = usage if isinstance(usage, dict) else None
                reply.stop_reason = as_str(event.get("reason"))
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        if data.get("type") in DELTA_EVENTS and isinstance(data.get("delta"), str):
            yield data.get("content_index"), Piece(position, ("delta",), data["delta"])


OPENPROGRAM_EVENTS = OpenprogramEvents()
