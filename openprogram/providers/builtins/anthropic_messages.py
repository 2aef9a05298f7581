"""``anthropic-messages``: the Anthropic Messages API, streaming.

``POST {base_url}/v1/messages`` with ``stream: true`` and the headers ``x-api-key`` (when there is a
key) and ``anthropic-version: 2023-06-01``. The request body is built in ``anthropic_request``.

The events are read by :class:`~openprogram.vendors.anthropic_messages.MessagesStream`, the reader
``show`` reads a recorded call with: text, thinking (its signature kept with it) and tool-use blocks
by index (input that is not a JSON object is an ``error`` event naming the tool; blocks of other
kinds, a server's own tools among them, are skipped), the stop reason (``max_tokens`` → length,
``tool_use`` → toolUse, a refusal → error, any other → stop), the usage (input, output, cache read
and written), ``done`` at the message's stop, and the server's own error as an ``error`` event.
Event types not known are ignored, as the API's versioning policy asks.

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

Options: ``max_tokens`` (required by the API: ``options.max_tokens``, else ``model.max_tokens``);
``temperature``; ``tool_choice`` (``auto``, ``none``, ``required`` → ``any``, or a tool name);
``metadata["user_id"]`` → ``metadata.user_id`` (other metadata is not sent). For a
``model.reasoning`` model the ``reasoning`` level turns on extended thinking with a token budget
(:data:`THINKING_BUDGETS`), which comes on top of ``max_tokens`` so the answer keeps its room."""

from __future__ import annotations

from typing import Any

from openprogram.providers.builtins import DEFAULT_API_KEY_VARIABLES
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider, VendorRequest
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
    UserContent,
    UserMessage,
)
from openprogram.vendors.anthropic_messages import ANTHROPIC_WIRE, MESSAGES_PATH, MessagesStream

THINKING_BUDGETS: dict[str, int] = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
"""Thinking tokens allowed per ``reasoning`` level (the API's minimum is 1024)."""


def messages_body(
    model: Model, context: Context, options: StreamOptions, *, reasoning: ReasoningLevel | None
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


class AnthropicMessagesProvider(HttpVendorProvider):
    """The ``anthropic-messages`` api over httpx. Settings: ``base_url`` (default
    ``https://api.anthropic.com``), ``api_key_env`` (default ``ANTHROPIC_API_KEY``), ``timeout``."""

    api = "anthropic-messages"
    default_base_url = f"https://{ANTHROPIC_WIRE.hosts[0]}"
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
            **dict(ANTHROPIC_WIRE.version_headers),
        }
        if api_key:
            headers[ANTHROPIC_WIRE.key_header] = api_key
        body = messages_body(model, context, options, reasoning=reasoning)
        return VendorRequest(f"{base_url}{MESSAGES_PATH}", headers, body)

    def new_stream(self) -> MessagesStream:
        return MessagesStream()
