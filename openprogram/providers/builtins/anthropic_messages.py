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
"""

from __future__ import annotations

from typing import Any

from openprogram.providers.builtins.anthropic_request import messages_body
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
