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

The OpenAI Chat Completions request body, built from our context and options.

The body is a plain dict built in a fixed key order, so the same input always gives the same
bytes on the wire (no random id, no clock). Conversion:

* the system prompt is the first message, ``{"role": "system"}``;
* a user message keeps its text, or becomes ``text`` / ``image_url`` (a ``data:`` URL) parts;
* an assistant message sends its text and its tool calls (arguments as JSON text); thinking
  is not sent back, and a reply with neither text nor tool calls is left out;
* a tool result is a ``{"role": "tool", "tool_call_id": …}`` message with its text; images
  a tool returned follow the run of tool messages in one user message (tool messages carry
  text only);
* tools are ``{"type": "function", "function": {name, description, parameters}}``, in order.

Options: ``max_tokens`` (else ``model.max_tokens``) — sent as ``max_completion_tokens`` to
api.openai.com, whose reasoning models refuse ``max_tokens``, and as ``max_tokens`` to every
compatible server; ``temperature``; ``tool_choice`` (``auto`` / ``none`` / ``required``, or a
tool name); the ``reasoning`` level as ``reasoning_effort``, only for a ``model.reasoning``
model. ``metadata`` and ``session_id`` are not sent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson

from openprogram.providers.builtins import DEFAULT_API_KEY_VARIABLES
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
from openprogram.providers.builtins.vendor_provider import (
    HttpVendorProvider,
    VendorRequest,
)
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    ReasoningLevel,
    StreamOptions,
    TextContent,
    Tool,
    ToolResultMessage,
    Usage,
    UserMessage,
)

OPENAI_HOST = "api.openai.com"


def chat_completions_body(
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    base_url: str,
    reasoning: ReasoningLevel | None,
) -> dict[str, Any]:
    """The JSON body of ``POST {base_url}/chat/completions`` for one streamed reply."""
    body: dict[str, Any] = {
        "model": model.id,
        "messages": chat_messages(context),
        "stream": True,
        "stream_options": {"include_usage": True},
        max_tokens_field(base_url): options.max_tokens or model.max_tokens,
    }
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if context.tools:
        body["tools"] = [tool_definition(tool) for tool in context.tools]
    if options.tool_choice is not None:
        body["tool_choice"] = tool_choice(options.tool_choice)
    if reasoning is not None and model.reasoning:
        body["reasoning_effort"] = reasoning
    return body


def max_tokens_field(base_url: str) -> str:
    """``max_completion_tokens`` for OpenAI itself, ``max_tokens`` for compatible servers."""
    host = urlsplit(base_url).hostname or ""
    return "max_completion_tokens" if host.lower() == OPENAI_HOST else "max_tokens"


def chat_messages(context: Context) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if context.system_prompt:
        messages.append({"role": "system", "content": context.system_prompt})
    tool_images: list[dict[str, Any]] = []
    for message in context.messages:
        if tool_images and not isinstance(message, ToolResultMessage):
            messages.append(_tool_images_message(tool_images))
            tool_images = []
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message)})
        elif isinstance(message, AssistantMessage):
            converted = _assistant_message(message)
            if converted is not None:
                messages.append(converted)
        else:
            messages.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.text}
            )
            tool_images.extend(
                _image_part(block) for block in message.content if isinstance(block, ImageContent)
            )
    if tool_images:
        messages.append(_tool_images_message(tool_images))
    return messages


def _user_content(message: UserMessage) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    return [
        {"type": "text", "text": block.text}
        if isinstance(block, TextContent)
        else _image_part(block)
        for block in message.content
    ]


def _image_part(image: ImageContent) -> dict[str, Any]:
    url = f"data:{image.mime_type};base64,{image.data}"
    return {"type": "image_url", "image_url": {"url": url}}


def _tool_images_message(images: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "Images returned by the tools above:"}, *images],
    }


def _assistant_message(message: AssistantMessage) -> dict[str, Any] | None:
    text = message.text
    calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": orjson.dumps(call.arguments).decode()},
        }
        for call in message.tool_calls
    ]
    if not text and not calls:
        return None
    converted: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        converted["tool_calls"] = calls
    return converted


def tool_definition(tool: Tool) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


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
