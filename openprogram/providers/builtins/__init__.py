"""The providers openprogram ships: how the runtime makes each one, the vendor each api
belongs to, and the environment variable each vendor api reads its key from.

    echo                the offline ``echo`` provider, the default model
    vendor_provider     what the vendor providers share (settings, key, request, errors)
    http_streaming      sending a vendor request and reading its server-sent events
    reply_assembly      a streamed reply assembled into provider events
    openai_completions  OpenAI Chat Completions
    anthropic_messages  Anthropic Messages

Each factory receives the ``[providers.<api>]`` settings of the configuration (None when
there are none, or when the configuration is broken — record/replay is then blocked anyway).
Factories import their module only when called, so nothing vendor-specific (nor httpx) is
imported before the runtime starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprogram.config.models import ProviderSettings
    from openprogram.providers.registry import ApiProvider

BuiltinFactory = Callable[["ProviderSettings | None"], "ApiProvider"]


def _echo(settings: ProviderSettings | None) -> ApiProvider:
    from openprogram.providers.builtins.echo import EchoProvider

    return EchoProvider()


def _openai_completions(settings: ProviderSettings | None) -> ApiProvider:
    from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider

    return OpenAICompletionsProvider.from_settings(settings)


def _anthropic_messages(settings: ProviderSettings | None) -> ApiProvider:
    from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider

    return AnthropicMessagesProvider.from_settings(settings)


BUILTIN_PROVIDER_FACTORIES: dict[str, BuiltinFactory] = {
    "echo": _echo,
    "openai-completions": _openai_completions,
    "anthropic-messages": _anthropic_messages,
}
"""The built-in apis and how to make each provider; read at runtime initialization."""

VENDOR_OF_API: dict[str, str] = {
    "echo": "echo",
    "openai-completions": "openai",
    "anthropic-messages": "anthropic",
}
"""The vendor (``Model.provider``) of each built-in api; another api is its own vendor."""

DEFAULT_API_KEY_VARIABLES: dict[str, str] = {
    "openai-completions": "OPENAI_API_KEY",
    "anthropic-messages": "ANTHROPIC_API_KEY",
}
"""Where each built-in vendor api reads its key unless ``api_key_env`` names another."""
