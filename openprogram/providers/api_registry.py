"""The provider registry: the one boundary every model call passes through.

``stream()`` looks up ``model.api`` here. Record and replay are providers installed at this
boundary, through the registry's one scoping mechanism (:mod:`openprogram.providers.scopes`:
the process scope the runtime sets up from the configured mode, and the scopes a block
enters for its own context), so no vendor module knows about them.

Every public function makes sure the provider runtime is initialized first (built-ins
registered, configuration read once), so a user's registration is never overwritten by a
later built-in registration — except inside an isolated scope, which never starts it.
Importing this module does nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from openprogram.providers import scopes
from openprogram.providers.runtime import RuntimeState, initialize_provider_runtime, runtime_state
from openprogram.providers.scopes import (
    INHERIT,
    ApiProvider,
    ProviderScope,
    RegistryTransform,
    ScopeOrderError,
    current_scope,
    scope_binding,
)

__all__ = [
    "INHERIT",
    "ApiProvider",
    "ProviderScope",
    "RegistryTransform",
    "ScopeOrderError",
    "get_api_provider",
    "process_wide_scope",
    "provider_scope",
    "register_api_provider",
    "registered_apis",
    "scope_binding",
    "unregister_api_provider",
]


def _ensure_runtime() -> None:
    if runtime_state() is not RuntimeState.READY and current_scope().starts_runtime:
        initialize_provider_runtime()


def register_api_provider(api: str, provider: ApiProvider) -> None:
    """Make ``provider`` answer for ``api`` in the current scope, replacing any earlier
    registration there."""
    _ensure_runtime()
    current_scope().register(api, provider)


def unregister_api_provider(api: str) -> ApiProvider | None:
    """Remove the provider registered for ``api`` in the current scope; returns it, or None
    if there was none."""
    _ensure_runtime()
    return current_scope().unregister(api)


def get_api_provider(api: str) -> ApiProvider:
    """The provider that answers for ``api`` in the current scope, after its transform;
    raises :class:`~openprogram.errors.UnknownApiError`."""
    _ensure_runtime()
    return current_scope().lookup(api)


def registered_apis() -> list[str]:
    """The apis with a registered provider in the current scope, sorted."""
    _ensure_runtime()
    return current_scope().apis()


@contextmanager
def provider_scope(
    *,
    transform: RegistryTransform | scopes.Inherit | None = INHERIT,
    resolve: Callable[[str], ApiProvider | None] | None = None,
    bindings: Mapping[str, object] | None = None,
) -> Iterator[ProviderScope]:
    """Run a block in a registry scope of its own, in the current context; yields the scope.

    A way to change what lookups answer for a block, in this context only (for every thread,
    :func:`process_wide_scope`): ``transform`` replaces the enclosing scope's transform inside
    it, over whatever mode the configuration set; ``resolve`` makes it
    isolated (every lookup is ``resolve(api)``, the runtime is never started); ``bindings``
    adds values other boundaries look up (``scope_binding``). Otherwise the runtime is
    started first, so the scope starts from the built-ins. See
    :mod:`openprogram.providers.scopes`.
    """
    if resolve is None:
        _ensure_runtime()
    with scopes.provider_scope(transform=transform, resolve=resolve, bindings=bindings) as scope:
        yield scope


@contextmanager
def process_wide_scope(
    *,
    transform: RegistryTransform | scopes.Inherit | None = INHERIT,
    bindings: Mapping[str, object] | None = None,
) -> Iterator[ProviderScope]:
    """Run a block in a registry scope that every thread and task of the process sees;
    yields the scope.

    What the pytest fixture and ``record_replay()`` install record or replay with: a thread
    or an executor's worker started by the code under test cannot reach past it to a live
    provider. Process-wide scopes nest and must be left in the reverse order they were
    entered (:class:`ScopeOrderError` otherwise). The runtime is started first, so the scope
    starts from the built-ins. See :mod:`openprogram.providers.scopes`.
    """
    _ensure_runtime()
    with scopes.process_wide_scope(transform=transform, bindings=bindings) as scope:
        yield scope
