"""The providers openprogram ships, and how the runtime makes each one.

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
    from openprogram.providers.api_registry import ApiProvider

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
