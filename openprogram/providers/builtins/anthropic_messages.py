"""``anthropic-messages``: the Anthropic Messages API, streaming.

``POST {base_url}/v1/messages`` with ``stream: true`` and the headers ``x-api-key`` (when
there is a key) and ``anthropic-version: 2023-06-01``. The request body is built in
``anthropic_request``.

Reading the named server-sent events:

* ``message_start`` — usage: ``input_tokens`` → input, ``cache_read_input_tokens`` →
  cache_read, ``cache_creation_input_tokens`` → cache_write;
* ``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` for ``text``
  (``text_delta``), ``thinking`` (``thinking_delta``; ``signature_delta`` becomes the
  thinking block's ``signature``) and ``tool_use`` (``input_json_delta`` pieces, parsed at
  the block's stop; input that is not a JSON object is an ``error`` event naming the tool).
  Blocks of other types (``redacted_thinking``, server tools) are skipped;
* ``message_delta`` — ``stop_reason`` (``end_turn`` / ``stop_sequence`` → stop,
  ``max_tokens`` → length, ``tool_use`` → toolUse, ``refusal`` → error) and usage
  (``output_tokens``, and any other count it repeats);
* ``message_stop`` → ``done``; ``ping`` is ignored; ``error`` → an ``error`` event with the
  server's error type and message. Event types this module does not know are ignored, as
  the API's versioning policy asks.

The Anthropic Messages request body, built from our context and options.

Built in a fixed key order, so the same input always gives the same bytes. Conversion:

* the system prompt is the top-level ``system``;
* a user message keeps its text, or becomes ``text`` / ``image`` (base64 source) blocks;
* an assistant message sends its text, its tool calls as ``tool_use`` blocks, and its
  thinking blocks *with their signature* (the API checks it; thinking without a signature —
  from another vendor, or cut short — is left out); a reply left empty is left out;
* consecutive tool results become one user message of ``tool_result`` blocks, each with
  ``is_error``; a text-only result is sent as a string, one with images as blocks;
* tools are ``{name, description, input_schema}``, in order.

Options: ``max_tokens`` (required by the API: ``options.max_tokens``, else
``model.max_tokens``); ``temperature``; ``tool_choice`` (``auto``, ``none``, ``required`` →
``any``, or a tool name); ``metadata["user_id"]`` → ``metadata.user_id`` (other metadata is
not sent). For a ``model.reasoning`` model the ``reasoning`` level turns on extended
thinking with a token budget (:data:`THINKING_BUDGETS`), which comes on top of
``max_tokens`` so the answer keeps its room.
"""

from __future__ import annotations

from typing import Any

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
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Thinking tokens allowed per ``reasoning`` level (the API's minimum is 1024)."""


def messages_body(
    model: Model,
    context: Context,
    options: StreamOptions,
    *,
    reasoning: ReasoningLevel | None,
) -> dict[str, Any]:
    """The JSON body of ``POST {base_url}/v1/messages`` for one streamed reply."""
    max_tokens = options.max_tokens or model.max_tokens
    budget = THINKING_BUDGETS[reasoning] if reasoning is not None and model.reasoning else None
    body: dict[str, Any] = {
        "model": model.id,
        "max_tokens": max_tokens + (budget or 0),
        "stream": True,
    }
    if context.system_prompt:
        body["system"] = context.system_prompt
    body["messages"] = anthropic_messages(context)
    if context.tools:
        body["tools"] = [tool_definition(tool) for tool in context.tools]
    if options.tool_choice is not None:
        body["tool_choice"] = tool_choice(options.tool_choice)
    if options.temperature is not None:
        body["temperature"] = options.temperature
    if budget is not None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    user_id = (options.metadata or {}).get("user_id")
    if isinstance(user_id, str) and user_id:
        body["metadata"] = {"user_id": user_id}
    return body


def anthropic_messages(context: Context) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for message in context.messages:
        if isinstance(message, ToolResultMessage):
            results.append(_tool_result(message))
            continue
        if results:
            messages.append({"role": "user", "content": results})
            results = []
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": _user_content(message.content)})
        else:
            blocks = _assistant_blocks(message)
            if blocks:
                messages.append({"role": "assistant", "content": blocks})
    if results:
        messages.append({"role": "user", "content": results})
    return messages


def _user_content(content: str | list[UserContent]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_content_block(block) for block in content]


def _content_block(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type, "data": block.data},
    }


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            if block.text:
                blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ThinkingContent):
            if block.signature:
                blocks.append(
                    {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
                )
        elif isinstance(block, ToolCall):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
            )
    return blocks


def _tool_result(message: ToolResultMessage) -> dict[str, Any]:
    content: str | list[dict[str, Any]]
    if all(isinstance(block, TextContent) for block in message.content):
        content = message.text
    else:
        content = [
            _content_block(block)
            for block in message.content
            if not (isinstance(block, TextContent) and not block.text)
        ]
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }


def tool_definition(tool: Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


ANTHROPIC_VERSION = "2023-06-01"


STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "toolUse",
}


_USAGE_FIELDS = {
    "input_tokens": "input",
    "output_tokens": "output",
    "cache_read_input_tokens": "cache_read",
    "cache_creation_input_tokens": "cache_write",
}


class AnthropicMessagesProvider(HttpVendorProvider):
    """The ``anthropic-messages`` api over httpx. Settings: ``base_url`` (default
    ``https://api.anthropic.com``), ``api_key_env`` (default ``ANTHROPIC_API_KEY``),
    ``timeout``."""

    api = "anthropic-messages"
    default_base_url = "https://api.anthropic.com"
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
        headers = {
            "Content-Type": "application/json",
            "Accept": "text/event-stream",
            "anthropic-version": ANTHROPIC_VERSION,
        }
        if api_key:
            headers["x-api-key"] = api_key
        body = messages_body(model, context, options, reasoning=reasoning)
        return VendorRequest(f"{base_url}/v1/messages", headers, body)

    def new_parser(self, reply: ReplyAssembler) -> MessagesStreamParser:
        return MessagesStreamParser(reply)


class MessagesStreamParser:
    """Reads Messages API stream events into events through a :class:`ReplyAssembler`."""

    def __init__(self, reply: ReplyAssembler) -> None:
        self.reply = reply
        self._finished = False
        self._stop: FinishReason | None = None
        self._blocks: dict[int, OpenBlock] = {}
        self._skipped: set[int] = set()
        self._initial_input: dict[int, dict[str, Any]] = {}
        self._counts = dict.fromkeys(_USAGE_FIELDS.values(), 0)

    @property
    def finished(self) -> bool:
        return self._finished

    def feed(self, event: str, data: str) -> list[AssistantMessageEvent]:
        text = data.strip()
        if self._finished or event == "ping" or not text:
            return []
        payload = parse_event_data(text)
        kind = payload.get("type")
        kind = kind if isinstance(kind, str) else event
        if kind == "message_start":
            message = payload.get("message")
            if isinstance(message, dict):
                self._update_usage(message.get("usage"))
        elif kind == "content_block_start":
            self._start_block(_block_index(payload, kind), payload.get("content_block"))
        elif kind == "content_block_delta":
            self._add_delta(_block_index(payload, kind), payload.get("delta"))
        elif kind == "content_block_stop":
            index = _block_index(payload, kind)
            if index not in self._skipped:
                block = self._open_block(index)
                self.reply.close(block, default_arguments=self._initial_input.get(index))
        elif kind == "message_delta":
            delta = payload.get("delta")
            if isinstance(delta, dict):
                self._read_stop_reason(delta.get("stop_reason"))
            self._update_usage(payload.get("usage"))
        elif kind == "message_stop":
            self._finished = True
            return self.reply.finish(self._stop or "stop")
        elif kind == "error":
            detail = vendor_error_text(payload, with_type=True) or text[:SNIPPET_LENGTH]
            raise VendorStreamError(f"the server sent an error: {detail}")
        return self.reply.take_events()

    def end_of_stream(self) -> list[AssistantMessageEvent]:
        raise VendorStreamError(f"{STREAM_ENDED_EARLY} (no message_stop was sent)")

    def _start_block(self, index: int, block: object) -> None:
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(block, dict) or kind not in ("text", "thinking", "tool_use"):
            self._skipped.add(index)
            return
        if kind == "text":
            opened = self.reply.open_text()
            self.reply.append(opened, _text(block.get("text")))
        elif kind == "thinking":
            opened = self.reply.open_thinking()
            self.reply.append(opened, _text(block.get("thinking")))
            opened.signature = _text(block.get("signature")) or None
        else:
            opened = self.reply.open_tool_call(_text(block.get("id")), _text(block.get("name")))
            initial = block.get("input")
            if isinstance(initial, dict) and initial:
                self._initial_input[index] = initial
        self._blocks[index] = opened

    def _add_delta(self, index: int, delta: object) -> None:
        if index in self._skipped or not isinstance(delta, dict):
            return
        block = self._open_block(index)
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            self.reply.append(block, _text(delta.get("text")))
        elif kind == "thinking_delta" and block.kind == "thinking":
            self.reply.append(block, _text(delta.get("thinking")))
        elif kind == "signature_delta" and block.kind == "thinking":
            block.signature = (block.signature or "") + _text(delta.get("signature")) or None
        elif kind == "input_json_delta" and block.kind == "toolCall":
            self.reply.append(block, _text(delta.get("partial_json")))

    def _open_block(self, index: int) -> OpenBlock:
        block = self._blocks.get(index)
        if block is None:
            raise VendorStreamError(
                f"malformed event stream: content block {index} was never started"
            )
        return block

    def _read_stop_reason(self, stop_reason: object) -> None:
        if not isinstance(stop_reason, str):
            return
        if stop_reason == "refusal":
            raise VendorStreamError("the model declined to answer (stop_reason 'refusal')")
        self._stop = STOP_REASONS.get(stop_reason, "stop")

    def _update_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for field, name in _USAGE_FIELDS.items():
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
                self._counts[name] = value
        self.reply.usage = Usage(**self._counts, total_tokens=sum(self._counts.values()))


def _block_index(payload: dict[str, Any], kind: str) -> int:
    index = payload.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise VendorStreamError(f"malformed event stream: {kind} without a block index")
    return index


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""
