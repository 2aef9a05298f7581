"""Running ``openprogram run`` in this process, and providers that stand in for a vendor.

:class:`ScriptedProvider` answers call N with the N-th scripted reply (the last again once
the script runs out) and keeps every ``(model, context)`` it was asked with.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner, Result

from openprogram.cli.app import app
from openprogram.config.paths import config_location
from openprogram.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    Model,
    SimpleStreamOptions,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ToolCall,
    ToolCallEndEvent,
    ToolCallStartEvent,
    register_api_provider,
    scoped_api_providers,
)
from openprogram.providers.recorder import close_recording_writers
from openprogram.providers.runtime import reset_provider_runtime


def openprogram(*argv: str) -> Result:
    """``openprogram ARGV`` in this process; stdout and stderr kept apart."""
    return CliRunner().invoke(app, list(argv))


def next_start() -> None:
    """What a new process would do: close the recording and read the configuration afresh."""
    close_recording_writers()
    reset_provider_runtime()


def write_config(text: str) -> Path:
    path = config_location().path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def error_lines(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("error: ")]


class ScriptedProvider:
    """Replies from a script of content-block lists; text blocks may skip their deltas."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, *replies: list[TextContent | ToolCall], deltas: bool = True) -> None:
        self.replies = list(replies)
        self.deltas = deltas
        self.requests: list[tuple[Model, Context]] = []

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        self.requests.append((model, context.model_copy(deep=True)))
        blocks = self.replies[min(len(self.requests), len(self.replies)) - 1]
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        for index, block in enumerate(blocks):
            if isinstance(block, TextContent):
                yield TextStartEvent(content_index=index)
                if self.deltas:
                    yield TextDeltaEvent(content_index=index, delta=block.text)
                yield TextEndEvent(content_index=index, content=block.text)
            else:
                yield ToolCallStartEvent(content_index=index, id=block.id, name=block.name)
                yield ToolCallEndEvent(content_index=index, tool_call=block)
        uses_tools = any(isinstance(block, ToolCall) for block in blocks)
        reason = "toolUse" if uses_tools else "stop"
        message = AssistantMessage(
            content=list(blocks),
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason=reason,
        )
        yield DoneEvent(reason=reason, message=message)


class KeyedProvider(ScriptedProvider):
    """Needs a key from ``FAKE_API_KEY``."""

    requires_credentials = True
    api_key_env = "FAKE_API_KEY"


class RaisingProvider(ScriptedProvider):
    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        raise RuntimeError("the connection dropped")


@contextmanager
def serving(api: str, provider: ScriptedProvider) -> Iterator[ScriptedProvider]:
    with scoped_api_providers():
        register_api_provider(api, provider)
        yield provider


def text(value: str) -> TextContent:
    return TextContent(text=value)


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))
