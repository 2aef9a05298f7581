"""Amazon Bedrock's Converse API (``…/model/{modelId}/converse`` and ``…/converse-stream``),
read from a recorded HTTP call.

A call is one of it when its path is ``/model/<id>/converse`` or ``/model/<id>/converse-stream``,
or, on a path no vendor claims, when its first event is ``messageStart`` or its whole body holds
an ``output.message``. The runtime's other model operations (``/model/<id>/invoke``,
``…/invoke-with-response-stream``, ``…/count-tokens``) go to a model too, though the store
does not read them.

The new input is the last of the request's ``messages`` — its ``text`` blocks, a ``toolResult``
shown with the name of the ``toolUse`` it answers, ``[image]`` or ``[document]`` for other blocks —
or the ``system`` prompt when there is none. A stream is read from its event-stream messages, each
given here as ``{event type: payload}`` (as boto3 yields them): ``contentBlockStart`` (a
``toolUse``'s name), ``contentBlockDelta`` by ``contentBlockIndex`` (``text``,
``reasoningContent.text``, or a piece of a ``toolUse``'s ``input``), ``messageStop`` (the stop
reason), ``metadata`` (the usage) and an exception message (its ``message``). A whole reply is read
from ``output.message.content`` (``text``, ``toolUse``, ``reasoningContent``), ``stopReason`` and
``usage`` (``inputTokens`` / ``outputTokens``).

The streamed pieces of text are the ``contentBlockDelta`` events' ``text``, reasoning text and
tool ``input``, by ``contentBlockIndex``; each lies at ``data.delta…`` in its row."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from openprogram.recording.wire_rules import WireRules
from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    Piece,
    as_dict,
    as_list,
    as_str,
    block_key,
    joined_texts,
    messages_input,
)
from openprogram.vendors.wire import Wire

__all__ = ["BEDROCK_CONVERSE", "BEDROCK_WIRE", "BedrockConverse"]

_ACCESS_KEY = "AWS_ACCESS_KEY_ID"
BEDROCK_WIRE = Wire(
    vendor="aws",
    hosts=("amazonaws.com",),
    official_hosts=r"bedrock-runtime(?:-fips)?\.[a-z]{2}(?:-[a-z]+)+-\d+\.amazonaws\.com",
    key_variables=(_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"),
    # keys to sign with, so that a replay never looks for credentials on a metadata server
    placeholder_if_unset=(_ACCESS_KEY, "AWS_PROFILE"),
    placeholder_variables=(_ACCESS_KEY, "AWS_SECRET_ACCESS_KEY"),
    model_path=r"/model/([^/]+)/(?:converse|converse-stream|invoke|invoke-with-response-stream)$",
    signing_service="bedrock",
    signing_headers=("authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"),
    region_in_host=r"\.([a-z]{2}(?:-[a-z]+)+-\d+)\.amazonaws\.com$",
    region_variables=("AWS_REGION", "AWS_DEFAULT_REGION"),
)
"""Amazon Bedrock's runtime: requests signed with SigV4 (botocore's credential chain)."""

_PATH = re.compile(r"/model/[^/]+/converse(?:-stream)?$")
_RUNTIME_OPERATIONS = {
    "invoke": "InvokeModel",
    "invoke-with-response-stream": "InvokeModelWithResponseStream",
    "count-tokens": "CountTokens",
}
"""The Bedrock runtime's model operations beside Converse, by the last segment of their path
(``/model/{modelId}/<segment>``), which the store does not read."""
_RUNTIME_PATH = re.compile(rf"/model/[^/]+/({'|'.join(map(re.escape, _RUNTIME_OPERATIONS))})$")
_EXCEPTION_SUFFIX = "Exception"


class BedrockConverse:
    """Converse, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "bedrock-converse"
    wire = BEDROCK_WIRE
    last_events: frozenset[str] = frozenset()
    kind_fields = frozenset({"stopReason"})
    recording_rules = WireRules(
        conversation_keys=frozenset({"messages", "system"}),
        signature_keys=frozenset({"signature"}),  # a reasoning block's, signed anew
        per_run_timings=(("metrics", "latencyMs"),),
        per_run_padding=frozenset({"p"}),  # each event-stream payload's, of random length
    )
    input_tokens = "inputTokens"
    output_tokens = "outputTokens"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return _PATH.search(path) is not None

    def model_endpoint(self, path: str) -> str | None:
        found = _RUNTIME_PATH.search(path)
        return None if found is None else _RUNTIME_OPERATIONS[found[1]]

    def claims_shape(self, first: object) -> bool:
        shape = as_dict(first)
        return "messageStart" in shape or "message" in as_dict(shape.get("output"))

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        messages_input(as_dict(body), reply, _blocks_text)
        for data in datas:
            for kind, payload in as_dict(data).items():
                _stream_event(kind, as_dict(payload), reply)
        if whole is not None:
            answer = as_dict(whole)
            message = as_dict(as_dict(answer.get("output")).get("message"))
            for number, block in enumerate(as_list(message.get("content"))):
                _whole_block(number, as_dict(block), reply)
            reply.stop_reason = as_str(answer.get("stopReason"))
            reply.add_usage(answer.get("usage"))
            if not message and isinstance(answer.get("message"), str):
                reply.error = answer["message"]  # an error response: {"message": …}
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        event = as_dict(data.get("contentBlockDelta"))
        delta = as_dict(event.get("delta"))
        key = block_key(event.get("contentBlockIndex"))
        for path in (("text",), ("reasoningContent", "text"), ("toolUse", "input")):
            value: Any = delta
            for part in path:
                value = as_dict(value).get(part)
            if isinstance(value, str):
                yield key, Piece(position, ("data", "delta", *path), value)


BEDROCK_CONVERSE = BedrockConverse()


def _blocks_text(content: Any, messages: list[Any]) -> str:
    texts: list[str] = []
    for block in as_list(content):
        block = as_dict(block)
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif "toolResult" in block:
            result = as_dict(block["toolResult"])
            inner = _blocks_text(result.get("content"), messages)
            texts.append(f"{_tool_name(messages, result.get('toolUseId'))} → {inner}")
        elif "toolUse" in block:
            tool = as_dict(block["toolUse"])
            arguments = orjson.dumps(tool.get("input", {})).decode()
            texts.append(f"{as_str(tool.get('name')) or '?'}({arguments})")
        elif "json" in block:
            texts.append(orjson.dumps(block["json"]).decode())
        else:
            kinds = [kind for kind in ("image", "document", "video") if kind in block]
            texts.extend(f"[{kind}]" for kind in kinds)
    return joined_texts(texts)


def _tool_name(messages: list[Any], tool_use_id: Any) -> str:
    for message in reversed(messages):
        for block in as_list(as_dict(message).get("content")):
            tool = as_dict(as_dict(block).get("toolUse"))
            if tool and tool.get("toolUseId") == tool_use_id:
                return as_str(tool.get("name")) or "?"
    return "?"


def _stream_event(kind: str, event: dict[str, Any], reply: HttpReply) -> None:
    key = block_key(event.get("contentBlockIndex"))
    if kind == "contentBlockStart":
        tool = as_dict(as_dict(event.get("start")).get("toolUse"))
        if tool:
            reply.tool(key).name = as_str(tool.get("name")) or ""
    elif kind == "contentBlockDelta":
        delta = as_dict(event.get("delta"))
        reply.add_text(key, delta.get("text"))
        reply.add_thinking(key, as_dict(delta.get("reasoningContent")).get("text"))
        piece = as_str(as_dict(delta.get("toolUse")).get("input"))
        if piece is not None:
            reply.tool(key).pieces.append(piece)
    elif kind == "messageStop":
        reply.stop_reason = as_str(event.get("stopReason")) or reply.stop_reason
    elif kind == "metadata":
        reply.add_usage(event.get("usage"))
    elif kind.endswith(_EXCEPTION_SUFFIX):
        message = as_str(event.get("message"))
        reply.error = f"{kind}: {message}" if message else kind


def _whole_block(key: Any, block: dict[str, Any], reply: HttpReply) -> None:
    if "text" in block:
        reply.add_text(key, block.get("text"))
    elif "reasoningContent" in block:
        reasoning = as_dict(as_dict(block["reasoningContent"]).get("reasoningText"))
        reply.add_thinking(key, reasoning.get("text"))
    elif "toolUse" in block:
        tool = as_dict(block["toolUse"])
        parts = reply.tool(key)
        parts.name = as_str(tool.get("name")) or ""
        parts.value = tool.get("input")
