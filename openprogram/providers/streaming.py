"""``stream`` / ``complete``: look up ``model.api``, resolve the key, iterate the provider.

The API key comes from ``options.api_key``, else the environment variable the provider
names (``api_key_env``). A provider that needs none (``requires_credentials`` False, as for
``echo``, replay and a server on this machine) gets no key from here; nor does a model whose
``base_url`` is on this machine, unless its variable holds one. The variable a provider
names is remembered as holding a credential, so its value is redacted wherever it would be
written. Keys are never stored in configuration or recordings.

The environment variables API keys are read from, made known to the redactor.

A vendor provider remembers its own variable when it is made (``remember_secret_variable``),
but a process can load the configuration for a run without making one: ``recordings verify``
replays under a registry of its own, and a provider registered for an api openprogram does
not ship may never say which variable it reads. So wherever the configuration is loaded for a
run — the provider runtime's start, ``verify`` — every ``[providers.<api>] api_key_env`` and
the built-in apis' default variables are remembered: a key read from ``GPU_BOX_KEY`` is then
removed from what is recorded, compared on replay and shown, like one from ``OPENAI_API_KEY``.

Whether a URL points at this machine: a server on loopback is a local model server.

A model whose ``base_url`` is on loopback (Ollama, vLLM, llama.cpp on this machine) needs no
API key. This module imports nothing of openprogram, so the built-in providers can ask it
without reaching the registry (which starts the runtime, which registers them)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, TypeVar

from openprogram.errors import MissingApiKeyError
from openprogram.providers.events import AssistantMessageEvent, MessageAccumulator
from openprogram.providers.registry import ApiProvider, get_api_provider
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    Model,
    SimpleStreamOptions,
    StreamOptions,
    is_loopback_url,
)
from openprogram.recording.redaction import remember_secret_variable

if TYPE_CHECKING:
    pass

__all__ = []


OptionsT = TypeVar("OptionsT", bound=StreamOptions)


def provider_api_key_env(provider: ApiProvider) -> str | None:
    """The environment variable ``provider`` reads its key from, if it names one."""
    env = getattr(provider, "api_key_env", None)
    return env if isinstance(env, str) and env else None


def with_api_key(provider: ApiProvider, model: Model, options: OptionsT) -> OptionsT:
    """``options`` with ``api_key`` filled in from the environment when the provider needs
    it. A model served on this machine (``model.base_url`` on ``localhost``, 127.0.0.0/8,
    ``::1``) gets the key when there is one and needs none otherwise."""
    env_var = provider_api_key_env(provider)
    if env_var is not None:
        remember_secret_variable(env_var)
    if options.api_key or not provider.requires_credentials:
        return options
    key = os.environ.get(env_var) if env_var else None
    if key:
        return options.model_copy(update={"api_key": key})
    if model.base_url and is_loopback_url(model.base_url):
        return options
    raise MissingApiKeyError(model.api, env_var)


def stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Stream one reply from the provider registered for ``model.api``."""
    provider = get_api_provider(model.api)
    return provider.stream(
        model, context, with_api_key(provider, model, options or StreamOptions())
    )


def stream_simple(
    model: Model, context: Context, options: SimpleStreamOptions | None = None
) -> AsyncIterator[AssistantMessageEvent]:
    """Like :func:`stream`, with the portable ``reasoning`` option."""
    provider = get_api_provider(model.api)
    return provider.stream_simple(
        model, context, with_api_key(provider, model, options or SimpleStreamOptions())
    )


async def collect_message(
    events: AsyncIterator[AssistantMessageEvent], *, model: Model
) -> AssistantMessage:
    """Drain ``events`` and return the final message (an error reply if the stream failed)."""
    accumulator = MessageAccumulator(api=model.api, provider=model.provider, model=model.id)
    async for event in events:
        accumulator.add(event)
    return accumulator.message


async def complete(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """The whole reply of :func:`stream`."""
    return await collect_message(stream(model, context, options), model=model)


async def complete_simple(
    model: Model, context: Context, options: SimpleStreamOptions | None = None
) -> AssistantMessage:
    """The whole reply of :func:`stream_simple`."""
    return await collect_message(stream_simple(model, context, options), model=model)
