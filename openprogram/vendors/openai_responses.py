"""OpenAI's Responses API (``…/responses``), read from a recorded HTTP call.

A call is one of it when its path ends in ``/responses``, or, on a path no vendor claims, when its
first SSE event's data or its whole body is a ``response`` object or a ``response.…`` event.

The new input is the request's ``input`` (a string, or the last item of the list: a message, or a
``function_call_output`` shown with the name of its call). A stream is read from its events:
``response.output_text.delta`` and ``response.refusal.delta`` (text),
``response.reasoning_summary_text.delta`` and ``response.reasoning_text.delta`` (thinking),
``response.output_item.added`` (a function call's name) and
``response.function_call_arguments.delta``/``.done`` (its arguments), and the response object of
``response.completed`` / ``.incomplete`` / ``.failed`` (usage — ``input_tokens`` / ``output_tokens``
—, the stop reason: ``completed``, or why it is incomplete, and the error). A stream that carried no
deltas, and a whole response, are read from the response's ``output`` items.

The streamed pieces of text are the ``delta`` of the ``response.*.delta`` events, by output
and content index (text, refusal, reasoning summary, reasoning), and of
``response.function_call_arguments.delta`` by output index."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openprogram.recording.wire_rules import WireRules
from openprogram.vendors.openai_chat import OPENAI_KEY_SHAPE, OPENAI_WIRE, call_text, parts_text
from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    Piece,
    as_dict,
    as_list,
    as_str,
    block_key,
    error_text,
)

__all__ = ["OPENAI_RESPONSES", "OpenAIResponses"]

_DELTAS = {
    "response.output_text.delta": ("text", "content_index"),
    "response.refusal.delta": ("refusal", "content_index"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index"),
    "response.reasoning_text.delta": ("reasoning", "content_index"),
    "response.function_call_arguments.delta": ("arguments", None),
}
"""Each streamed delta's event: the family of its block, and the field telling the block's
part (None: the output item is the block)."""


class OpenAIResponses:
    """Responses, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "openai-responses"
    wire = OPENAI_WIRE
    last_events = frozenset({"response.completed", "response.incomplete", "response.failed"})
    kind_fields: frozenset[str] = frozenset()
    recording_rules = WireRules(
        key_shapes=(OPENAI_KEY_SHAPE,),
        conversation_keys=frozenset({"input", "instructions"}),
        compared_response_headers=frozenset({"x-should-retry"}),  # the SDK retries on it
        signature_keys=frozenset({"encrypted_content"}),  # a reasoning item's, signed anew
        per_run_fields=frozenset({"created_at", "completed_at"}),
        per_run_objects=("response",),  # the stream events' response
    )
    input_tokens = "input_tokens"
    output_tokens = "output_tokens"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return path.endswith("/responses")

    def model_endpoint(self, path: str) -> str | None:
        return None

    def claims_shape(self, first: object) -> bool:
        shape = as_dict(first)
        kind = as_str(shape.get("type")) or ""
        return shape.get("object") == "response" or kind.startswith("response.")

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        _input(as_dict(body), reply)
        final: dict[str, Any] | None = None
        for data in datas:
            event = as_dict(data)
            kind = as_str(event.get("type")) or ""
            if isinstance(event.get("response"), dict):
                final = event["response"]
            elif kind == "error":
                reply.error = error_text(event) or reply.error
            else:
                _event(kind, event, reply)
        if whole is not None:
            final = as_dict(whole)
        if final is not None:
            if reply.empty:
                _output(as_list(final.get("output")), reply)
            _ending(final, reply)
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        kind = data.get("type")
        if kind not in _DELTAS or not isinstance(data.get("delta"), str):
            return
        family, part = _DELTAS[kind]
        key = (family, data.get("output_index"), None if part is None else data.get(part))
        yield key, Piece(position, ("data", "delta"), data["delta"])


OPENAI_RESPONSES = OpenAIResponses()


def _input(body: dict[str, Any], reply: HttpReply) -> None:
    given = body.get("input")
    if isinstance(given, str):
        reply.input_role, reply.input_text = "user", given
        return
    items = as_list(given)
    if not items:
        return
    item = as_dict(items[-1])
    kind = as_str(item.get("type"))
    if kind == "function_call_output":
        name = "?"
        for earlier in items:
            earlier = as_dict(earlier)
            if earlier.get("type") == "function_call" and earlier.get("call_id") == item.get(
                "call_id"
            ):
                name = as_str(earlier.get("name")) or "?"
        output = item.get("output")
        shown = output if isinstance(output, str) else parts_text(output)
        reply.input_role, reply.input_text = kind, f"{name} → {shown}"
    elif kind == "function_call":
        reply.input_role = kind
        reply.input_text = call_text(item.get("name"), item.get("arguments"))
    else:
        reply.input_role = as_str(item.get("role")) or kind
        reply.input_text = parts_text(item.get("content"))


def _event(kind: str, event: dict[str, Any], reply: HttpReply) -> None:
    output = event.get("output_index")
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        reply.add_text(block_key(output, event.get("content_index")), event.get("delta"))
    elif kind == "response.reasoning_summary_text.delta":
        reply.add_thinking(block_key(output, event.get("summary_index")), event.get("delta"))
    elif kind == "response.reasoning_text.delta":
        reply.add_thinking(block_key(output, event.get("content_index")), event.get("delta"))
    elif kind == "response.output_item.added":
        item = as_dict(event.get("item"))
        if item.get("type") == "function_call":
            reply.tool(block_key(output)).name = as_str(item.get("name")) or ""
    elif kind == "response.function_call_arguments.delta":
        delta = as_str(event.get("delta"))
        if delta is not None:
            reply.tool(block_key(output)).pieces.append(delta)
    elif kind == "response.function_call_arguments.done":
        arguments = as_str(event.get("arguments"))
        if arguments is not None:
            reply.tool(block_key(output)).pieces = [arguments]


def _output(items: list[Any], reply: HttpReply) -> None:
    for number, item in enumerate(items):
        item = as_dict(item)
        kind = item.get("type")
        if kind == "message":
            for part_number, part in enumerate(as_list(item.get("content"))):
                part = as_dict(part)
                text = as_str(part.get("text")) or as_str(part.get("refusal"))
                reply.add_text((number, part_number), text)
        elif kind == "reasoning":
            parts = as_list(item.get("summary")) or as_list(item.get("content"))
            for part_number, part in enumerate(parts):
                reply.add_thinking((number, part_number), as_dict(part).get("text"))
        elif kind == "function_call":
            tool = reply.tool(number)
            tool.name = as_str(item.get("name")) or ""
            arguments = item.get("arguments")
            if isinstance(arguments, str):
                tool.pieces = [arguments]


def _ending(response: dict[str, Any], reply: HttpReply) -> None:
    reply.add_usage(response.get("usage"))
    status = as_str(response.get("status"))
    reason = as_str(as_dict(response.get("incomplete_details")).get("reason"))
    reply.stop_reason = reason or status or reply.stop_reason
    reply.error = (
        error_text({"error": response.get("error")}) or error_text(response) or reply.error
    )
