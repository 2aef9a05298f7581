"""The request types every provider speaks: model, context, messages, options.

Everything here is a pydantic v2 model that serialises with ``model_dump(mode="json")``;
that dump (redacted) is what a recording stores. Field names are snake_case in Python and
in JSON alike, so a mismatch path such as ``context.messages[2].content[0].text`` reads the
same in code and in the file.

:class:`StreamingProvider` is the base a provider written as one method stands on: it
derives ``stream`` and ``stream_simple`` from :meth:`~StreamingProvider.respond`.

Runtime-only option fields (``api_key``, ``signal``, ``on_payload``) are excluded from every
dump: they are never written to a recording and never compared on replay, so a keyless
replay in CI matches a recording made with a key."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from openprogram.recording.url_comparison import is_loopback_host

if TYPE_CHECKING:
    from openprogram.providers.events import AssistantMessageEvent

StopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
ReasoningLevel = Literal["minimal", "low", "medium", "high"]
StreamMethod = Literal["stream", "stream_simple"]
"""Which of a provider's two methods a call came through."""


def now_ms() -> int:
    """Wall-clock milliseconds, the unit of every ``timestamp`` field."""
    return time.time_ns() // 1_000_000


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Model(_Strict):
    """Which model to call, and through which registered api."""

    id: str
    api: str
    provider: str
    base_url: str | None = None
    headers: dict[str, str] | None = None
    context_window: int = 128_000
    max_tokens: int = 4_096
    reasoning: bool = False


class TextContent(_Strict):
    type: Literal["text"] = "text"
    text: str


class ThinkingContent(_Strict):
    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str | None = None


class ImageContent(_Strict):
    type: Literal["image"] = "image"
    data: str
    """Base64-encoded image bytes."""
    mime_type: str


class ToolCall(_Strict):
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


UserContent = Annotated[TextContent | ImageContent, Field(discriminator="type")]
AssistantContent = Annotated[TextContent | ThinkingContent | ToolCall, Field(discriminator="type")]


class Usage(_Strict):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0


class UserMessage(_Strict):
    role: Literal["user"] = "user"
    content: str | list[UserContent]
    timestamp: int = Field(default_factory=now_ms)


class AssistantMessage(_Strict):
    role: Literal["assistant"] = "assistant"
    content: list[AssistantContent] = Field(default_factory=list)
    api: str
    provider: str
    model: str
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | None = None
    timestamp: int = Field(default_factory=now_ms)

    @property
    def text(self) -> str:
        """The concatenated text blocks of this reply."""
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [block for block in self.content if isinstance(block, ToolCall)]


class ToolResultMessage(_Strict):
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[UserContent]
    is_error: bool = False
    timestamp: int = Field(default_factory=now_ms)

    @field_validator("content", mode="before")
    @classmethod
    def _text_as_block(cls, value: object) -> object:
        # A plain string is the common case for a tool result; store it as one text block.
        return [{"type": "text", "text": value}] if isinstance(value, str) else value

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextContent))


Message = Annotated[UserMessage | AssistantMessage | ToolResultMessage, Field(discriminator="role")]


class Tool(_Strict):
    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    """A JSON Schema describing the arguments."""


class Context(_Strict):
    system_prompt: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tools: list[Tool] | None = None


ToolChoice = Literal["auto", "none", "required"] | str


class StreamOptions(_Strict):
    """Per-call options. ``api_key``, ``signal`` and ``on_payload`` are runtime-only."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    temperature: float | None = None
    max_tokens: int | None = None
    headers: dict[str, str] | None = None
    session_id: str | None = None
    metadata: dict[str, Any] | None = None
    tool_choice: ToolChoice | None = None

    api_key: str | None = Field(default=None, exclude=True, repr=False)
    """Runtime-only: never recorded, never compared."""
    signal: asyncio.Event | None = Field(default=None, exclude=True, repr=False)
    """Runtime-only: set it to ask the provider to stop; the stream ends with ``aborted``."""
    on_payload: Callable[[dict[str, Any]], None] | None = Field(
        default=None, exclude=True, repr=False
    )
    """Runtime-only: called with the vendor request body before it is sent."""


class SimpleStreamOptions(StreamOptions):
    """Options for ``stream_simple``: one portable ``reasoning`` level for every vendor."""

    reasoning: ReasoningLevel | None = None


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is this machine: ``localhost``, 127.0.0.0/8 or ``::1`` (the
    rule replay's URL comparison applies, :func:`is_loopback_host`)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    return host is not None and is_loopback_host(host)


class StreamingProvider:
    """A provider written as one method, :meth:`respond`: ``stream`` and ``stream_simple``
    hand it the call with its options (a fresh ``StreamOptions`` or ``SimpleStreamOptions``
    when none were given) and the method the call came through."""

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self.respond("stream", model, context, options or StreamOptions())

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self.respond("stream_simple", model, context, options or SimpleStreamOptions())

    def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        """The events of one call; ``options`` is a ``SimpleStreamOptions`` when ``method``
        is ``stream_simple``."""
        raise NotImplementedError(f"{type(self).__name__} does not implement respond()")
