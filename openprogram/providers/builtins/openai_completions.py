"""``openai-completions``: OpenAI Chat Completions streaming, and every server that speaks it.

``POST {base_url}/chat/completions`` with ``stream: true`` and
``stream_options: {include_usage: true}``; the reply is a stream of ``data:`` chunks ending with
``data: [DONE]``. Ollama (``http://localhost:11434/v1``), vLLM, llama.cpp and LM Studio serve the
same format: point ``base_url`` at them. The request body is built in ``openai_request``.

The chunks are read by :class:`~openprogram.vendors.openai_chat.ChatCompletionsStream`, the reader
``show`` reads a recorded call with (choice 0 only; openprogram asks for one): text and thinking
blocks, tool calls whose id, name and arguments arrive in pieces (arguments that are not a JSON
object end the stream with an ``error`` event naming the tool), the stop reason (``length`` →
length, a tool call → toolUse, the content filter → error, any other → stop) and the usage (the
prompt's cached tokens → cache_read, the rest → input). ``done`` comes at the stream's end after a
stop reason; an end before one is an error, and so is the server's own error in a chunk.

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
model. ``metadata`` and ``session_id`` are not sent."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import orjson

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
    Tool,
    ToolResultMessage,
    UserMessage,
)
from openprogram.vendors.openai_chat import (
    CHAT_COMPLETIONS_PATH,
    OPENAI_WIRE,
    ChatCompletionsStream,
)


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
    return "max_completion_tokens" if host.lower() == OPENAI_WIRE.hosts[0] else "max_tokens"


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
    default_base_url = f"https://{OPENAI_WIRE.hosts[0]}/v1"
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
        return VendorRequest(f"{base_url}{CHAT_COMPLETIONS_PATH}", headers, body)

    def new_stream(self) -> ChatCompletionsStream:
        return ChatCompletionsStream()
