"""The one table of vendors: every vendor test that holds for each vendor is parametrised
over :data:`VENDORS`, and reads from its row what differs between them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openprogram.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    Model,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider
from tests.support.sse_server import ScriptedServer
from tests.support.tool_sessions import LOOKUP_TOOL
from tests.support.vendor_wire import AnthropicWire, OpenAIWire, Wire

HELLO = Context(messages=[UserMessage(content="hi", timestamp=1)])


@dataclass(frozen=True)
class Vendor:
    """One vendor: its provider and model, what its server sends, what a request carries."""

    api: str
    model: Model
    provider_class: type[HttpVendorProvider]
    wire: Wire
    url_path: str
    """What the vendor's ``base_url`` adds to a server's address."""
    request_path: str
    """The path a streamed request is sent to."""
    key_variable: str
    """The variable the key comes from unless ``api_key_env`` names another."""
    key_header: str
    key_prefix: str
    """What comes before the key in ``key_header``."""
    fixed_headers: dict[str, str]
    """Headers every request carries."""
    finish_reasons: tuple[tuple[str, bool, str], ...]
    """The vendor's reason a reply finished (after a tool call, or not), and ours."""
    refusal: tuple[str, str]
    """The vendor's reason for a reply it refused to finish, and words of the error it is."""
    server_error: str
    """How the error message introduces the server's own error sent mid-stream."""
    signs_thinking: bool
    """Thinking comes with a signature, kept with it."""

    def base_url(self, server_url: str) -> str:
        return server_url + self.url_path

    def provider(self, server_url: str, **settings: Any) -> HttpVendorProvider:
        """The vendor's provider with its ``base_url`` at the server ``server_url``."""
        return self.provider_class(base_url=self.base_url(server_url), **settings)

    def model_at(self, server_url: str) -> Model:
        """The vendor's model with its own ``base_url`` at the server ``server_url``."""
        return self.model.model_copy(update={"base_url": self.base_url(server_url)})

    def sent_key(self, server: ScriptedServer) -> str | None:
        """The key the server's last request carried, if any."""
        value = server.received[-1].headers.get(self.key_header)
        return value.removeprefix(self.key_prefix) if value else None


OPENAI = Vendor(
    api="openai-completions",
    model=Model(id="gpt-test", api="openai-completions", provider="openai"),
    provider_class=OpenAICompletionsProvider,
    wire=OpenAIWire(),
    url_path="/v1",
    request_path="/v1/chat/completions",
    key_variable="OPENAI_API_KEY",
    key_header="authorization",
    key_prefix="Bearer ",
    fixed_headers={"content-type": "application/json", "accept": "text/event-stream"},
    finish_reasons=(
        ("stop", False, "stop"),
        ("length", False, "length"),
        ("tool_calls", True, "toolUse"),
        ("stop", True, "toolUse"),  # servers that say "stop" after a tool call
    ),
    refusal=("content_filter", "content filter"),
    server_error="the server sent an error mid-stream",
    signs_thinking=False,
)
ANTHROPIC = Vendor(
    api="anthropic-messages",
    model=Model(id="claude-test", api="anthropic-messages", provider="anthropic"),
    provider_class=AnthropicMessagesProvider,
    wire=AnthropicWire(),
    url_path="",
    request_path="/v1/messages",
    key_variable="ANTHROPIC_API_KEY",
    key_header="x-api-key",
    key_prefix="",
    fixed_headers={"content-type": "application/json", "anthropic-version": "2023-06-01"},
    finish_reasons=(
        ("end_turn", False, "stop"),
        ("stop_sequence", False, "stop"),
        ("max_tokens", False, "length"),
        ("tool_use", False, "toolUse"),
    ),
    refusal=("refusal", "refusal"),
    server_error="the server sent an error",
    signs_thinking=True,
)
VENDORS = [OPENAI, ANTHROPIC]


def vendor_id(vendor: Vendor) -> str:
    return vendor.api


def conversation(vendor: Vendor) -> Context:
    """A conversation with every kind of content a request carries, the model's turn made by
    ``vendor``: thinking (signed and not), text, two tool calls, their results (one an error
    holding an image), and a user turn with an image."""
    return Context(
        system_prompt="You are terse.",
        messages=[
            UserMessage(content="Look up 'café' twice.", timestamp=1),
            AssistantMessage(
                content=[
                    ThinkingContent(thinking="Two lookups.", signature="sig-1"),
                    ThinkingContent(thinking="unsigned, from elsewhere"),
                    TextContent(text="Looking."),
                    ToolCall(id="toolu_1", name="lookup", arguments={"q": "café"}),
                    ToolCall(id="toolu_2", name="lookup", arguments={"q": "cafe"}),
                ],
                api=vendor.api,
                provider=vendor.model.provider,
                model=vendor.model.id,
                stop_reason="toolUse",
                timestamp=2,
            ),
            ToolResultMessage(
                tool_call_id="toolu_1", tool_name="lookup", content="a drink", timestamp=3
            ),
            ToolResultMessage(
                tool_call_id="toolu_2",
                tool_name="lookup",
                content=[
                    TextContent(text="see image"),
                    ImageContent(data="AAAA", mime_type="image/png"),
                ],
                is_error=True,
                timestamp=4,
            ),
            UserMessage(
                content=[
                    TextContent(text="And this?"),
                    ImageContent(data="QkJC", mime_type="image/jpeg"),
                ],
                timestamp=5,
            ),
        ],
        tools=[LOOKUP_TOOL],
    )
