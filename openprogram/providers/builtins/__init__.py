"""The providers openprogram ships: how the runtime makes each one, the vendor each api
belongs to, and what each vendor api's wire is (:func:`vendor_wire`: its key variable, its
hosts and headers, from :mod:`openprogram.vendors`).

    echo                the offline ``echo`` provider, the default model
    vendor_provider     what the vendor providers share (settings, key, request, errors)
    http_streaming      sending a vendor request and reading its server-sent events
    reply_assembly      a streamed reply assembled into provider events
    openai_completions  OpenAI Chat Completions
    anthropic_messages  Anthropic Messages

Each factory receives the ``[providers.<api>]`` settings of the configuration (None when
there are none, or when the configuration is broken — record/replay is then blocked anyway).
Factories import their module only when called, and the vendors' facts are read when first
asked, so nothing vendor-specific (nor httpx) is imported before the runtime starts."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprogram.config.models import ProviderSettings
    from openprogram.providers.registry import ApiProvider
    from openprogram.vendors.wire import Wire

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


def vendor_wire(api: str) -> Wire:
    """The wire of a built-in vendor api (``KeyError`` for another api)."""
    from openprogram.vendors import VENDOR_APIS

    return {vendor.name: vendor.wire for vendor in VENDOR_APIS if vendor.name in VENDOR_OF_API}[api]


class _DefaultKeyVariables(Mapping[str, str]):
    """Each built-in vendor api's key variable: its vendor's first (read when asked)."""

    def __getitem__(self, api: str) -> str:
        return vendor_wire(api).key_variables[0]

    def __iter__(self) -> Iterator[str]:
        return (api for api in VENDOR_OF_API if api != "echo")

    def __len__(self) -> int:
        return len(VENDOR_OF_API) - 1


DEFAULT_API_KEY_VARIABLES: Mapping[str, str] = _DefaultKeyVariables()
"""Where each built-in vendor api reads its key unless ``api_key_env`` names another."""
