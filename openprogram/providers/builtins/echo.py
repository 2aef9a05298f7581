"""``echo``: the offline, deterministic provider every feature can run on with no key.

* It replies ``echo:<last user text>``.
* A user text ``/tool NAME {json}`` makes it call tool ``NAME`` with that JSON object.
* After a tool result it replies ``echo:<tool result text>``.

Tool call ids are derived from the conversation length, so the same session always
produces the same requests."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import orjson

from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    Model,
    StreamingProvider,
    StreamMethod,
    StreamOptions,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

ECHO_MODEL = Model(id="echo", api="echo", provider="echo")
"""The offline echo model: ``Model(id="echo", api="echo", provider="echo")``."""

_TOOL_COMMAND = re.compile(r"/tool\s+(?P<name>\S+)\s*(?P<arguments>.*)", re.DOTALL)


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def _tokens(text: str) -> int:
    return (len(text) + 3) // 4


class EchoProvider(StreamingProvider):
    """The ``echo`` api. Needs no credentials and opens no socket."""

    requires_credentials = False
    api_key_env: str | None = None

    async def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        prompt = "".join(_message_text(message) for message in context.messages)
        usage = Usage(input=_tokens(prompt))
        if options.signal is not None and options.signal.is_set():
            yield _error(model, usage, "aborted", "request aborted by signal")
            return
        last = context.messages[-1] if context.messages else None
        command = (
            _TOOL_COMMAND.fullmatch(_user_text(last).strip())
            if isinstance(last, UserMessage)
            else None
        )
        if command is not None:
            try:
                arguments = _tool_arguments(command["arguments"])
            except ValueError as exc:
                yield _error(model, usage, "error", f"echo: {exc}")
                return
            call = ToolCall(
                id=f"echo_call_{len(context.messages)}", name=command["name"], arguments=arguments
            )
            arguments_json = orjson.dumps(arguments).decode()
            yield ToolCallStartEvent(content_index=0, id=call.id, name=call.name)
            yield ToolCallDeltaEvent(content_index=0, delta=arguments_json)
            yield ToolCallEndEvent(content_index=0, tool_call=call)
            usage = _with_output(usage, arguments_json)
            yield DoneEvent(reason="toolUse", message=_message(model, [call], usage, "toolUse"))
            return
        text = "echo:" + (_message_text(last) if last is not None else "")
        yield TextStartEvent(content_index=0)
        yield TextDeltaEvent(content_index=0, delta=text)
        yield TextEndEvent(content_index=0, content=text)
        usage = _with_output(usage, text)
        yield DoneEvent(
            reason="stop", message=_message(model, [TextContent(text=text)], usage, "stop")
        )


def _message_text(message: UserMessage | AssistantMessage | ToolResultMessage) -> str:
    if isinstance(message, UserMessage):
        return _user_text(message)
    return message.text


def _tool_arguments(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"/tool arguments are not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ValueError('/tool arguments must be a JSON object, e.g. /tool NAME {"q": 1}')
    return value


def _with_output(usage: Usage, text: str) -> Usage:
    output = _tokens(text)
    return usage.model_copy(update={"output": output, "total_tokens": usage.input + output})


def _message(
    model: Model, content: list[TextContent | ToolCall], usage: Usage, stop_reason: str
) -> AssistantMessage:
    return AssistantMessage.model_validate(
        {
            "content": content,
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "usage": usage,
            "stop_reason": stop_reason,
        }
    )


def _error(model: Model, usage: Usage, reason: str, message: str) -> ErrorEvent:
    error = AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=usage,
        stop_reason="aborted" if reason == "aborted" else "error",
        error_message=message,
    )
    return ErrorEvent.model_validate({"reason": reason, "error": error})
