"""OpenAI's Chat Completions API (``…/chat/completions``), read from a recorded HTTP call.

A call is one of it when its path ends in ``/chat/completions``, or, on a path no vendor
claims, when its first SSE event's data or its whole body is a ``chat.completion`` (or
``chat.completion.chunk``) object. A request to ``…/embeddings`` or to the legacy
``…/completions`` goes to a model too, though the store does not read it.

The new input is the last of the request's ``messages`` (a ``tool`` message shows the name of
the call it answers, found by its ``tool_call_id`` among the earlier messages). A stream is
read by :class:`ChatCompletionsStream`, the one reader of it (the built-in
``openai-completions`` provider streams its events from the same pieces): for choice 0,
``delta.content`` (and ``delta.refusal``) is the text, ``delta.reasoning_content`` or else
``delta.reasoning`` (sent by OpenAI-compatible servers) the thinking, ``delta.tool_calls``
pieces are joined by their ``index``; ``finish_reason`` is the stop reason and the chunk
holding ``usage`` the usage (``prompt_tokens`` / ``completion_tokens``). A whole completion
is read from ``choices[0].message`` (:func:`completion_pieces`).

The streamed pieces of text are, for every choice, ``choices[i].delta``'s ``content``,
``refusal``, ``reasoning_content`` and ``reasoning``, and each ``tool_calls`` entry's
``function.arguments`` by its ``index``.

A message's content parts (text, ``[image]``, ``[audio]``, ``[file]``) and a function call
shown as ``name(arguments)`` are read the same way by OpenAI's Responses API
(:mod:`openprogram.vendors.openai_responses`)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from openprogram.recording.wire_rules import KeyShape, WireRules
from openprogram.vendors.reply import (
    BlockEnd,
    BlockKey,
    BlockPiece,
    BlockStart,
    EndPiece,
    ErrorPiece,
    Finish,
    HttpReply,
    PathPart,
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
    error_text,
    joined_texts,
    read_stream,
)
from openprogram.vendors.wire import ServedApi, Wire

__all__ = [
    "OPENAI_CHAT",
    "OPENAI_KEY_SHAPE",
    "OPENAI_WIRE",
    "ChatCompletionsStream",
    "OpenAIChat",
    "call_text",
    "chat_tokens",
    "completion_pieces",
    "parts_text",
]

_KEY = "OPENAI_API_KEY"
CHAT_COMPLETIONS_PATH = "/chat/completions"
"""Where a request goes, under the API's base URL (``…/v1``)."""

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

OPENAI_KEY_SHAPE = KeyShape(
    "openai-style-key", r"sk-[A-Za-z0-9_\-]{20,}", ("sk-",), before="github-token"
)
"""The shape of OpenAI's keys, for both of its APIs (``sk-…``, ``sk-proj-…``; others copy it,
Anthropic's ``sk-ant-…`` among them)."""

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
_DONE = "[DONE]"
"""The data of the event that ends a stream."""
_FINISHES: dict[str, Finish] = {
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": "refused",
}
"""What each ``finish_reason`` means (any other: ``stop``)."""


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
    last_events: frozenset[str] = frozenset()
    kind_fields = frozenset({"finish_reason"})
    recording_rules = WireRules(
        key_shapes=(OPENAI_KEY_SHAPE,),
        conversation_keys=frozenset({"messages", "prompt"}),  # prompt: legacy completions
        compared_response_headers=frozenset({"x-should-retry"}),  # the SDK retries on it
        per_run_fields=frozenset({"created", "system_fingerprint"}),
    )
    input_tokens = "prompt_tokens"
    output_tokens = "completion_tokens"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return path.endswith(CHAT_COMPLETIONS_PATH)

    def model_endpoint(self, path: str) -> str | None:
        return next((name for end, name in _OTHER_ENDPOINTS if path.endswith(end)), None)

    def claims_shape(self, first: object) -> bool:
        return as_dict(first).get("object") in ("chat.completion", "chat.completion.chunk")

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        _input(as_dict(body), reply)
        read_stream(ChatCompletionsStream(), datas, reply)
        if whole is not None:
            for piece in completion_pieces(whole):
                reply.add(piece)
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


def chat_tokens(usage: dict[str, Any]) -> Tokens:
    """A usage object's counts: the prompt less its cached tokens is the input."""
    prompt = as_count(usage.get("prompt_tokens"))
    completion = as_count(usage.get("completion_tokens"))
    cached = as_count(as_dict(usage.get("prompt_tokens_details")).get("cached_tokens"))
    total = as_count(usage.get("total_tokens")) or prompt + completion
    input_tokens = max(prompt - cached, 0)
    return Tokens(input_tokens, completion, cached, total_tokens=total)


@dataclass
class _ToolDraft:
    """A streamed tool call: its id and name so far."""

    id: str = ""
    name: str = ""


class ChatCompletionsStream:
    """One Chat Completions stream, read chunk by chunk into pieces (choice 0 only).

    Text (``content``, ``refusal``) and thinking (``reasoning_content``, else ``reasoning``)
    are blocks of their own, a new one each time the stream changes from one field to another
    or to a tool call (an empty piece is no piece). A tool call, whose id and name may come in
    pieces (appended, unless a piece repeats the whole value), starts with its first piece of
    arguments, or at ``finish_reason`` when it has none; arguments sent as an object count as
    their JSON text. ``finish_reason`` ends every block, and after it only usage is read;
    ``stop`` after a tool call means a tool call. ``[DONE]``, or the end of the stream, ends
    it: before ``finish_reason``, cut."""

    server_error = "the server sent an error mid-stream"

    def __init__(self) -> None:
        self._prose: tuple[str, int] | None = None
        """The open text or thinking block: the field it streams in, its number."""
        self._blocks = 0
        self._tools: dict[int, _ToolDraft] = {}
        self._started_tools: list[int] = []
        self._stopped = False
        self._ended = False

    def feed(self, data: object, event: str = "") -> list[StreamPiece]:
        if self._ended:
            return []
        if data == _DONE:
            return self.close()
        if not isinstance(data, dict):
            return [UnreadablePiece()]
        pieces: list[StreamPiece] = []
        if event == "error" or data.get("error"):
            pieces.append(ErrorPiece(error_text(data)))
        usage = data.get("usage")
        if isinstance(usage, dict):
            pieces.append(UsagePiece(usage, chat_tokens(usage)))
        for choice in as_list(data.get("choices")):
            if isinstance(choice, dict) and choice.get("index", 0) == 0 and not self._stopped:
                pieces += self._choice(choice)
        return pieces

    def close(self) -> list[StreamPiece]:
        if self._ended:
            return []
        self._ended = True
        if self._stopped:
            return [EndPiece()]
        return [EndPiece("finish_reason"), *self._start_every_tool()]

    def _choice(self, choice: dict[str, Any]) -> list[StreamPiece]:
        pieces: list[StreamPiece] = []
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                pieces += self._prose_piece("reasoning", reasoning)
            for field in ("content", "refusal"):
                if isinstance(delta.get(field), str):
                    pieces += self._prose_piece(field, delta[field])
            for position, item in enumerate(as_list(delta.get("tool_calls"))):
                if isinstance(item, dict):
                    pieces += self._tool_piece(position, item)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and reason:
            pieces += self._finish(reason)
        return pieces

    def _prose_piece(self, field: str, text: str) -> list[StreamPiece]:
        if not text:
            return []
        kind: Literal["text", "thinking"] = "thinking" if field == "reasoning" else "text"
        pieces: list[StreamPiece] = []
        if self._prose is None or self._prose[0] != field:
            pieces = self._close_prose()
            self._prose = (field, self._blocks)
            self._blocks += 1
            pieces.append(BlockStart(self._prose, kind))
        return [*pieces, BlockPiece(self._prose, kind, text)]

    def _close_prose(self) -> list[StreamPiece]:
        key, self._prose = self._prose, None
        return [BlockEnd(key)] if key is not None else []

    def _tool_piece(self, position: int, item: dict[str, Any]) -> list[StreamPiece]:
        index = item.get("index")
        key = index if isinstance(index, int) else position
        draft = self._tools.setdefault(key, _ToolDraft())
        pieces = self._close_prose()
        draft.id = _merge(draft.id, item.get("id"))
        function = item.get("function")
        if not isinstance(function, dict):
            return pieces
        draft.name = _merge(draft.name, function.get("name"))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send the object itself
            arguments = orjson.dumps(arguments).decode()
        if isinstance(arguments, str) and arguments:
            pieces += [*self._start(key), BlockPiece(key, "arguments", arguments)]
        return pieces

    def _start(self, key: int) -> list[StreamPiece]:
        if key in self._started_tools:
            return []
        self._started_tools.append(key)
        draft = self._tools[key]
        return [BlockStart(key, "tool", id=draft.id, name=draft.name)]

    def _start_every_tool(self) -> list[StreamPiece]:
        return [piece for key in sorted(self._tools) for piece in self._start(key)]

    def _finish(self, reason: str) -> list[StreamPiece]:
        self._stopped = True
        finish = _FINISHES.get(reason, "stop")
        said = f"finish_reason {reason!r}"
        if finish == "refused":
            return [
                StopPiece(reason, finish, said, "the server's content filter stopped the reply")
            ]
        pieces = [*self._close_prose(), *self._start_every_tool()]
        if finish == "stop" and self._tools:  # some servers say "stop" after a tool call
            finish = "toolUse"
        ends = [BlockEnd(key) for key in self._started_tools]
        return [*pieces, StopPiece(reason, finish, said), *ends]


def completion_pieces(whole: object) -> list[StreamPiece]:
    """The pieces of a whole completion: choice 0's message, its stop reason and usage."""
    completion = as_dict(whole)
    error = error_text(completion)
    pieces: list[StreamPiece] = [ErrorPiece(error)] if error else []
    choice = as_dict(next(iter(as_list(completion.get("choices"))), None))
    message = as_dict(choice.get("message"))
    text = parts_text(message.get("content"))
    if text:
        pieces.append(BlockPiece("content", "text", text))
    if isinstance(message.get("refusal"), str):
        pieces.append(BlockPiece("refusal", "text", message["refusal"]))
    if isinstance(message.get("reasoning_content"), str):
        pieces.append(BlockPiece("reasoning", "thinking", message["reasoning_content"]))
    for number, call in enumerate(as_list(message.get("tool_calls"))):
        function = as_dict(as_dict(call).get("function"))
        arguments = function.get("arguments")
        call_id = as_str(as_dict(call).get("id")) or ""
        name = as_str(function.get("name")) or ""
        value = None if isinstance(arguments, str) else arguments
        pieces.append(BlockStart(number, "tool", id=call_id, name=name, arguments=value))
        if isinstance(arguments, str):
            pieces.append(BlockPiece(number, "arguments", arguments))
    reason = as_str(choice.get("finish_reason"))
    if reason is not None:
        finish = _FINISHES.get(reason, "stop")
        if finish == "stop" and as_list(message.get("tool_calls")):
            finish = "toolUse"
        pieces.append(StopPiece(reason, finish, f"finish_reason {reason!r}"))
    if isinstance(completion.get("usage"), dict):
        pieces.append(UsagePiece(completion["usage"], chat_tokens(completion["usage"])))
    return pieces


def _merge(current: str, piece: object) -> str:
    """A piece of an id or name: appended, unless it repeats the whole value so far."""
    if not isinstance(piece, str) or not piece or piece == current:
        return current
    return current + piece
