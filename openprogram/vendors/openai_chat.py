"""OpenAI's Chat Completions API (``…/chat/completions``), read from a recorded HTTP call.

A call is one of it when its path ends in ``/chat/completions``, or, on a path no vendor
claims, when its first SSE event's data or its whole body is a ``chat.completion`` (or
``chat.completion.chunk``) object. A request to ``…/embeddings`` or to the legacy
``…/completions`` goes to a model too, though the store does not read it.

The new input is the last of the request's ``messages`` (a ``tool`` message shows the name of
the call it answers, found by its ``tool_call_id`` among the earlier messages). A stream's
chunks are read for choice 0: ``delta.content`` (and ``delta.refusal``) is the text,
``delta.reasoning_content`` or ``delta.reasoning`` (sent by OpenAI-compatible servers) the
thinking, ``delta.tool_calls`` pieces are joined by their ``index``; ``finish_reason`` is the
stop reason and the chunk holding ``usage`` the usage (``prompt_tokens`` /
``completion_tokens``). A whole completion is read from ``choices[0].message``.

The streamed pieces of text are, for every choice, ``choices[i].delta``'s ``content``,
``refusal``, ``reasoning_content`` and ``reasoning``, and each ``tool_calls`` entry's
``function.arguments`` by its ``index``.

A message's content parts (text, ``[image]``, ``[audio]``, ``[file]``) and a function call
shown as ``name(arguments)`` are read the same way by OpenAI's Responses API
(:mod:`openprogram.vendors.openai_responses`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    PathPart,
    Piece,
    as_dict,
    as_list,
    as_str,
    block_key,
    error_text,
    joined_texts,
)
from openprogram.vendors.wire import ServedApi, Wire

__all__ = ["OPENAI_CHAT", "OPENAI_WIRE", "OpenAIChat", "call_text", "parts_text"]

_KEY = "OPENAI_API_KEY"
OPENAI_WIRE = Wire(
    vendor="openai",
    hosts=("api.openai.com",),
    official_hosts=r"api\.openai\.com",
    key_variables=(_KEY,),
    key_header="authorization",
    key_prefix="Bearer ",
    placeholder_if_unset=(_KEY,),
    placeholder_variables=(_KEY,),
    stored_headers=("openai-beta",),
    compared_headers=("openai-version",),
    served=ServedApi(
        "openai",
        "https://api.openai.com",
        "/v1",
        # the official SDKs (Python, Node, Go, .NET), the Vercel AI SDK, Codex; litellm and
        # LangChain (Python) read the older name
        ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
        "openai",
    ),
)
"""OpenAI's API, both of its APIs (Chat Completions and Responses): a bearer key."""

_PART_PLACEHOLDERS = {
    "image_url": "[image]",
    "input_image": "[image]",
    "input_audio": "[audio]",
    "file": "[file]",
    "input_file": "[file]",
}
_OTHER_ENDPOINTS = (("/embeddings", "embeddings"), ("/completions", "legacy completions"))
"""The model endpoints of OpenAI's API (and the servers that copy it: Ollama, vLLM, litellm)
beside Chat Completions, which the store does not read: path ending, name."""
_TEXT_FIELDS = ("content", "refusal", "reasoning_content", "reasoning")


def parts_text(content: Any) -> str:
    """A message's content: a string, or parts (text, ``[image]``, ``[audio]``, ``[file]``)."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part in as_list(content):
        part = as_dict(part)
        kind = part.get("type")
        text = as_str(part.get("text"))
        if text is None:
            text = as_str(part.get("refusal"))
        if text is not None:
            texts.append(text)
        elif isinstance(kind, str) and kind in _PART_PLACEHOLDERS:
            texts.append(_PART_PLACEHOLDERS[kind])
    return joined_texts(texts)


def call_text(name: Any, arguments: Any) -> str:
    """A function call as ``name(arguments)``."""
    shown = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return f"{as_str(name) or '?'}({shown})"


class OpenAIChat:
    """Chat Completions, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "openai-completions"
    wire = OPENAI_WIRE
    input_tokens = "prompt_tokens"
    output_tokens = "completion_tokens"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return path.endswith("/chat/completions")

    def model_endpoint(self, path: str) -> str | None:
        return next((name for end, name in _OTHER_ENDPOINTS if path.endswith(end)), None)

    def claims_shape(self, first: object) -> bool:
        return as_dict(first).get("object") in ("chat.completion", "chat.completion.chunk")

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        _input(as_dict(body), reply)
        for data in datas:
            chunk = as_dict(data)
            reply.error = error_text(chunk) or reply.error
            for choice in as_list(chunk.get("choices")):
                choice = as_dict(choice)
                if choice.get("index", 0) == 0:
                    _delta(as_dict(choice.get("delta")), reply)
                    reply.stop_reason = as_str(choice.get("finish_reason")) or reply.stop_reason
            reply.add_usage(chunk.get("usage"))
        if whole is not None:
            completion = as_dict(whole)
            reply.error = error_text(completion)
            choice = as_dict(next(iter(as_list(completion.get("choices"))), None))
            _message(as_dict(choice.get("message")), reply)
            reply.stop_reason = as_str(choice.get("finish_reason"))
            reply.add_usage(completion.get("usage"))
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        choices = data.get("choices")
        if not isinstance(choices, list):
            return
        for number, choice in enumerate(choices):
            if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
                continue
            choice_key = choice.get("index", number)
            delta = choice["delta"]
            base: tuple[PathPart, ...] = ("data", "choices", number, "delta")
            for field in _TEXT_FIELDS:
                if isinstance(delta.get(field), str):
                    yield (choice_key, field), Piece(position, (*base, field), delta[field])
            calls = delta.get("tool_calls")
            for place, entry in enumerate(calls if isinstance(calls, list) else []):
                function = entry.get("function") if isinstance(entry, dict) else None
                if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                    path = (*base, "tool_calls", place, "function", "arguments")
                    key = (choice_key, "tool", entry.get("index", place))
                    yield key, Piece(position, path, function["arguments"])


OPENAI_CHAT = OpenAIChat()


def _input(body: dict[str, Any], reply: HttpReply) -> None:
    messages = as_list(body.get("messages"))
    if not messages:
        return
    message = as_dict(messages[-1])
    reply.input_role = as_str(message.get("role"))
    text = parts_text(message.get("content"))
    if reply.input_role == "tool":
        name = _tool_name(messages, message.get("tool_call_id"))
        text = f"{name} → {text}"
    elif not text and message.get("tool_calls"):
        calls = [as_dict(as_dict(call).get("function")) for call in as_list(message["tool_calls"])]
        text = joined_texts([call_text(call.get("name"), call.get("arguments")) for call in calls])
    reply.input_text = text


def _tool_name(messages: list[Any], call_id: Any) -> str:
    for message in reversed(messages):
        for call in as_list(as_dict(message).get("tool_calls")):
            call = as_dict(call)
            if call_id is not None and call.get("id") == call_id:
                return as_str(as_dict(call.get("function")).get("name")) or "?"
    return "?"


def _delta(delta: dict[str, Any], reply: HttpReply) -> None:
    reply.add_text("content", delta.get("content"))
    reply.add_text("refusal", delta.get("refusal"))
    reply.add_thinking("reasoning", delta.get("reasoning_content"))
    reply.add_thinking("reasoning", delta.get("reasoning"))
    for piece in as_list(delta.get("tool_calls")):
        piece = as_dict(piece)
        index = piece.get("index")
        key = block_key(index) if index is not None else len(reply.tools) - 1 if reply.tools else 0
        tool = reply.tool(key)
        function = as_dict(piece.get("function"))
        tool.name = tool.name or as_str(function.get("name")) or ""
        arguments = as_str(function.get("arguments"))
        if arguments is not None:
            tool.pieces.append(arguments)


def _message(message: dict[str, Any], reply: HttpReply) -> None:
    reply.add_text("content", parts_text(message.get("content")) or None)
    reply.add_text("refusal", message.get("refusal"))
    reply.add_thinking("reasoning", message.get("reasoning_content"))
    for number, call in enumerate(as_list(message.get("tool_calls"))):
        function = as_dict(as_dict(call).get("function"))
        tool = reply.tool(number)
        tool.name = as_str(function.get("name")) or ""
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            tool.pieces.append(arguments)
        else:
            tool.value = arguments
