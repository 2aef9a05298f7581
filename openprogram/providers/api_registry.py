"""The provider registry: the one boundary every model call passes through.

``stream()`` looks up ``model.api`` here. Record and replay are providers registered (or
installed through the registry *transform*) at this boundary, so no vendor module knows
about them. The transform ``(api, provider | None) -> provider | None`` wraps every current
and future entry; it also sees apis with no registered provider, so that replay can answer
for an api this process never registered.

Every public function makes sure the provider runtime is initialized first (built-ins
registered, configuration read once), so a user's registration is never overwritten by a
later built-in registration. Importing this module does nothing.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

from openprogram.errors import UnknownApiError
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.types import Context, Model, SimpleStreamOptions, StreamOptions


@runtime_checkable
class ApiProvider(Protocol):
    """What a provider implements. ``stream*`` return async iterators of events.

    A provider may also define ``api_key_env``: the environment variable its key is read
    from when ``options.api_key`` is not given.
    """

    @property
    def requires_credentials(self) -> bool: ...

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...


RegistryTransform = Callable[[str, ApiProvider | None], ApiProvider | None]

_isolated: ContextVar[Callable[[str], ApiProvider | None] | None] = ContextVar(
    "openprogram_isolated_api_providers", default=None
)
_lock = threading.RLock()
_providers: dict[str, ApiProvider] = {}
_transform: RegistryTransform | None = None
# api -> (the registered provider, what the transform made of it): one wrapper per entry.
_transformed: dict[str, tuple[ApiProvider | None, ApiProvider | None]] = {}


def _ensure_runtime() -> None:
    from openprogram.providers.runtime import initialize_provider_runtime

    initialize_provider_runtime()


def register_api_provider(api: str, provider: ApiProvider) -> None:
    """Make ``provider`` answer for ``api``, replacing any earlier registration."""
    _ensure_runtime()
    register_without_runtime(api, provider)


def unregister_api_provider(api: str) -> ApiProvider | None:
    """Remove the provider registered for ``api``; returns it, or None if there was none."""
    _ensure_runtime()
    with _lock:
        _transformed.pop(api, None)
        return _providers.pop(api, None)


def get_api_provider(api: str) -> ApiProvider:
    """The provider that answers for ``api``, after the registry transform."""
    isolated = _isolated.get()
    if isolated is not None:
        provider = isolated(api)
        if provider is None:
            raise UnknownApiError(api, [])
        return provider
    _ensure_runtime()
    with _lock:
        raw = _providers.get(api)
        if _transform is None:
            provider = raw
        else:
            cached = _transformed.get(api)
            if cached is not None and cached[0] is raw:
                provider = cached[1]
            else:
                provider = _transform(api, raw)
                _transformed[api] = (raw, provider)
        if provider is None:
            raise UnknownApiError(api, sorted(_providers))
        return provider


def registered_apis() -> list[str]:
    """The apis with a registered provider, sorted."""
    _ensure_runtime()
    with _lock:
        return sorted(_providers)


def set_registry_transform(transform: RegistryTransform | None) -> None:
    """Wrap every current and future entry with ``transform`` (None removes it)."""
    _ensure_runtime()
    set_transform_without_runtime(transform)


@contextmanager
def scoped_api_providers() -> Iterator[None]:
    """Run a block with a registry it may change freely; the exact previous state returns.

    Registrations, removals and the transform set inside the block are undone on exit,
    whatever happens in it.
    """
    _ensure_runtime()
    with _lock:
        saved = (dict(_providers), _transform, dict(_transformed))
    try:
        yield
    finally:
        _restore(*saved)


def _restore(
    providers: dict[str, ApiProvider],
    transform: RegistryTransform | None,
    transformed: dict[str, tuple[ApiProvider | None, ApiProvider | None]],
) -> None:
    global _transform
    with _lock:
        _providers.clear()
        _providers.update(providers)
        _transform = transform
        _transformed.clear()
        _transformed.update(transformed)


@contextmanager
def isolated_api_providers(resolve: Callable[[str], ApiProvider | None]) -> Iterator[None]:
    """Answer every lookup in this context (and the tasks it starts) with ``resolve(api)``,
    without starting the provider runtime or reading the configuration.

    ``openprogram recordings verify`` runs a session this way under replay, whatever mode
    the configuration sets. Other threads and contexts see the registry as before.
    """
    token = _isolated.set(resolve)
    try:
        yield
    finally:
        _isolated.reset(token)


# The runtime itself registers through these, since it cannot wait for itself.


def register_without_runtime(api: str, provider: ApiProvider) -> None:
    with _lock:
        _transformed.pop(api, None)
        _providers[api] = provider


def set_transform_without_runtime(transform: RegistryTransform | None) -> None:
    global _transform
    with _lock:
        _transform = transform
        _transformed.clear()


def clear_registry_without_runtime() -> None:
    """Forget every provider and the transform (the runtime's test-only reset)."""
    _restore({}, None, {})
