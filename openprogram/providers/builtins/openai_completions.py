"""``openai-completions``: OpenAI Chat Completions streaming, and every server that speaks it.

``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options: {include_usage: true}``; the reply is a stream of ``data:`` chunks ending
with ``data: [DONE]``. Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp and LM Studio
serve the same format: point ``base_url`` at them. The request body is built in
``openai_request``.

Reading the chunks (only choice 0 is read; openprogram asks for one):

* ``delta.content`` → text; ``delta.reasoning_content`` (or ``delta.reasoning``), which some
  compatible servers send → thinking. A change from one to the other starts a new block.
* ``delta.tool_calls[]`` arrive in pieces keyed by ``index``: the id and name (concatenated
  if a server splits them, kept once if it repeats them) and the arguments' JSON text. A
  call's ``toolcall_start`` is sent with its first argument text; the arguments are parsed
  when the reply finishes. Arguments that are not a JSON object end the stream with an
  ``error`` event naming the tool.
* ``finish_reason``: ``stop`` → stop (toolUse if the reply holds tool calls, as some servers
  say ``stop`` there), ``length`` → length, ``tool_calls`` → toolUse, ``content_filter`` →
  error.
* ``usage`` (the last chunk, or any chunk): ``prompt_tokens`` less
  ``prompt_tokens_details.cached_tokens`` → input, the cached tokens → cache_read,
  ``completion_tokens`` → output, ``total_tokens`` → total.
* ``done`` is sent at ``[DONE]`` (or when the stream closes after a ``finish_reason``); a
  stream that ends with no ``finish_reason`` is an error, and so is an ``{"error": …}`` chunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from openprogram.providers.builtins.openai_request import chat_completions_body
from openprogram.providers.builtins.reply_assembly import (
    SNIPPET_LENGTH,
    STREAM_ENDED_EARLY,
    FinishReason,
    OpenBlock,
    ReplyAssembler,
    VendorStreamError,
    parse_event_data,
    vendor_error_text,
)
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider, VendorRequest
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.key_variables import DEFAULT_API_KEY_VARIABLES
from openprogram.providers.types import Context, Model, ReasoningLevel, StreamOptions, Usage


class OpenAICompletionsProvider(HttpVendorProvider):
    """The ``openai-completions`` api over httpx. Settings: ``base_url`` (default
    ``https://api.openai.com/v1``), ``api_key_env`` (default ``OPENAI_API_KEY``), ``timeout``."""

    api = "openai-completions"
    default_base_url = "https://api.openai.com/v1"
    default_api_key_env = DEFAULT_API_KEY_VARIABLES[api]

    def build_request(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        base_url: str,
        api_key: str | None,
        reasoning: ReasoningLevel | None,
    ) -> VendorRequest:
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        body = chat_completions_body(
            model, context, options, base_url=base_url, reasoning=reasoning
        )
        return VendorRequest(f"{base_url}/chat/completions", headers, body)

    def new_parser(self, reply: ReplyAssembler) -> ChatCompletionsParser:
        return ChatCompletionsParser(reply)


@dataclass(slots=True)
class _ToolCallDraft:
    tool_call_id: str = ""
    name: str = ""
    block: OpenBlock | None = None


class ChatCompletionsParser:
    """Reads Chat Completions chunks into events through a :class:`ReplyAssembler`."""

    def __init__(self, reply: ReplyAssembler) -> None:
        self.reply = reply
        self._finished = False
        self._stop: FinishReason | None = None
        self._prose: OpenBlock | None = None  # the open text or thinking block
        self._tools: dict[int, _ToolCallDraft] = {}

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, event: str, data: str) -> list[AssistantMessageEvent]:
        text = data.strip()
        if self._finished or not text:
            return []
        if text == "[DONE]":
            return self._complete()
        chunk = parse_event_data(text)
        if event == "error" or chunk.get("error"):
            detail = vendor_error_text(chunk, with_type=True) or text[:SNIPPET_LENGTH]
            raise VendorStreamError(f"the server sent an error mid-stream: {detail}")
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.reply.usage = _usage(usage)
        choices = chunk.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict) and choice.get("index", 0) == 0:
                    self._read_choice(choice)
        return self.reply.take_events()

    def end_of_stream(self) -> list[AssistantMessageEvent]:
        return self._complete()

    def _complete(self) -> list[AssistantMessageEvent]:
        if self._stop is None:
            raise VendorStreamError(f"{STREAM_ENDED_EARLY} (no finish_reason was sent)")
        self._finished = True
        return self.reply.finish(self._stop)

    def _read_choice(self, choice: dict[str, Any]) -> None:
        if self._stop is not None:
            return  # after finish_reason only usage counts
        delta = choice.get("delta")
        if isinstance(delta, dict):
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str):
                self._add_prose("thinking", reasoning)
            content = delta.get("content")
            if isinstance(content, str):
                self._add_prose("text", content)
            tool_calls = delta.get("tool_calls")
            if isinstance(tool_calls, list):
                for position, item in enumerate(tool_calls):
                    if isinstance(item, dict):
                        self._add_tool_call_piece(position, item)
        finish_reason = choice.get("finish_reason")
        if isinstance(finish_reason, str) and finish_reason:
            self._finish(finish_reason)

    def _add_prose(self, kind: str, delta: str) -> None:
        if not delta:
            return
        if self._prose is None or self._prose.kind != kind:
            self._close_prose()
            self._prose = self.reply.open_text() if kind == "text" else self.reply.open_thinking()
        self.reply.append(self._prose, delta)

    def _close_prose(self) -> None:
        if self._prose is not None:
            self.reply.close(self._prose)
            self._prose = None

    def _add_tool_call_piece(self, position: int, item: dict[str, Any]) -> None:
        index = item.get("index")
        key = index if isinstance(index, int) else position
        draft = self._tools.setdefault(key, _ToolCallDraft())
        self._close_prose()
        draft.tool_call_id = _merge(draft.tool_call_id, item.get("id"))
        function = item.get("function")
        if not isinstance(function, dict):
            return
        draft.name = _merge(draft.name, function.get("name"))
        arguments = function.get("arguments")
        if isinstance(arguments, dict):  # a few servers send the object itself
            arguments = orjson.dumps(arguments).decode()
        if isinstance(arguments, str) and arguments:
            self.reply.append(self._started(draft), arguments)

    def _started(self, draft: _ToolCallDraft) -> OpenBlock:
        if draft.block is None:
            draft.block = self.reply.open_tool_call(draft.tool_call_id, draft.name)
        return draft.block

    def _finish(self, finish_reason: str) -> None:
        if finish_reason == "content_filter":
            raise VendorStreamError(
                "the server's content filter stopped the reply (finish_reason 'content_filter')"
            )
        self._close_prose()
        for index in sorted(self._tools):
            self._started(self._tools[index])
        try:
            self.reply.close_all()
        except VendorStreamError as exc:
            if finish_reason == "length":
                raise VendorStreamError(
                    f"{exc} (the reply was cut off at max_tokens: finish_reason 'length')"
                ) from None
            raise
        if finish_reason == "length":
            self._stop = "length"
        elif finish_reason in ("tool_calls", "function_call") or self.reply.has_tool_calls:
            self._stop = "toolUse"
        else:
            self._stop = "stop"


def _merge(current: str, piece: object) -> str:
    """A piece of an id or name: appended, unless it repeats the whole value so far."""
    if not isinstance(piece, str) or not piece or piece == current:
        return current
    return current + piece


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _usage(usage: dict[str, Any]) -> Usage:
    prompt = _count(usage.get("prompt_tokens"))
    completion = _count(usage.get("completion_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(
        input=max(prompt - cached, 0),
        output=completion,
        cache_read=cached,
        total_tokens=_count(usage.get("total_tokens")) or prompt + completion,
    )
