"""The provider registry: the one boundary every model call passes through.

``stream()`` looks up ``model.api`` here. What :func:`get_api_provider` answers is decided by
the innermost active **scope**. A scope holds the providers registered in it and a
*transform* ``(api, registered | None) -> provider | None`` that wraps each of them (and may
answer for an api with no registration):

* the **process scope** is the base: the built-in providers, the providers registered outside
  any scope, and the transform of the configured mode (record wraps every api in a
  ``RecordingProvider``, replay answers every api with one ``ReplayProvider``, blocked
  refuses every call); every thread and task sees it. The provider runtime
  (:mod:`openprogram.providers.runtime`) builds them; this module installs them into the
  process scope, in one place, before the first lookup, registration or binding read that
  needs them (:func:`initialize_provider_runtime`), so a lookup never returns a provider the
  configured mode would have wrapped, and a user's registration is never overwritten by a
  later built-in one;
* :func:`provider_scope` enters a scope **in the current context** (a ``ContextVar``): the
  block, the asyncio tasks it starts and whatever runs in a copy of its context
  (``asyncio.to_thread``, ``contextvars.copy_context().run``) see it; other threads and
  contexts do not. It starts as a copy of the enclosing scope's registrations; its transform
  is the enclosing one unless it names its own (so a block can answer in place of the
  configured mode). Registrations, removals and transforms made inside it stay in it, and the
  enclosing state returns exactly when the block ends;
* an **isolated** scope (``provider_scope(resolve=...)``) answers every lookup with
  ``resolve(api)`` alone, and never starts the provider runtime (``recordings verify`` and the
  demo run this way);
* :func:`process_wide_scope` enters a scope **for the whole process**: every thread and every
  task sees it for the length of the block, including threads started before it and worker
  threads of an executor (the pytest fixture and ``record_replay()`` install record or replay
  this way, so that no thread of the code under test can reach past them to a live provider).
  Process-wide scopes nest: the one entered last is in force, and they must be left in the
  reverse order (leaving another one first raises :class:`ScopeOrderError`). The context that
  entered one sees it even from inside a per-context scope it had entered before; a
  per-context scope entered in any thread while one is active starts from it.

A scope also carries *bindings*: values other boundaries look up by name in the same context
(:func:`scope_binding`; the tape deck is one), so that one scope can switch record or replay
on for the provider registry, for tapes and for HTTP at once. A scope inherits its enclosing
scope's bindings, except an isolated one, and may add or replace some.

The transform's result is cached per scope and api, so each registered provider is wrapped
once. Importing this module registers nothing and reads no configuration."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from openprogram.errors import UnknownApiError
from openprogram.providers import runtime
from openprogram.providers.runtime import RuntimeStatus

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from openprogram.config.settings import LoadedConfig
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.types import Context, Model, SimpleStreamOptions, StreamOptions

__all__ = [
    "INHERIT",
    "PROCESS_SCOPE",
    "ApiProvider",
    "ProviderScope",
    "RegistryTransform",
    "ScopeOrderError",
    "current_scope",
    "get_api_provider",
    "initialize_provider_runtime",
    "process_wide_scope",
    "provider_scope",
    "register_api_provider",
    "registered_apis",
    "reset_provider_runtime",
    "runtime_configuration",
    "scope_binding",
    "unregister_api_provider",
]


@runtime_checkable
class ApiProvider(Protocol):
    """What a provider implements. ``stream*`` return async iterators of events.

    A provider may also define ``api_key_env``: the environment variable its key is read
    from when ``options.api_key`` is not given."""

    @property
    def requires_credentials(self) -> bool: ...

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]: ...


RegistryTransform = Callable[[str, ApiProvider | None], ApiProvider | None]
"""``(api, the provider registered for it or None) -> the provider that answers, or None``."""


class Inherit:
    __slots__ = ()

    def __repr__(self) -> str:
        return "INHERIT"


INHERIT: Final = Inherit()
"""``provider_scope(transform=INHERIT)``: keep the enclosing scope's transform."""


class ProviderScope:
    """One layer of the registry: its registrations, its transform, its bindings."""

    __slots__ = (
        "_lock",
        "_wrapped",
        "bindings",
        "parent",
        "providers",
        "starts_runtime",
        "transform",
    )

    def __init__(
        self,
        providers: dict[str, ApiProvider],
        transform: RegistryTransform | None,
        *,
        bindings: Mapping[str, object] | None = None,
        starts_runtime: bool = True,
        parent: ProviderScope | None = None,
    ) -> None:
        self.providers = providers
        self.transform = transform
        self.bindings: dict[str, object] = dict(bindings or {})
        self.starts_runtime = starts_runtime
        """False inside an isolated scope: its lookups never start the provider runtime."""
        self.parent = parent
        self._lock = threading.RLock()
        # api -> (the registered provider, what the transform made of it): one per entry.
        self._wrapped: dict[str, tuple[ApiProvider | None, ApiProvider | None]] = {}

    def lookup(self, api: str) -> ApiProvider:
        """The provider that answers for ``api``; raises :class:`UnknownApiError`."""
        with self._lock:
            raw = self.providers.get(api)
            transform = self.transform
            if transform is None:
                provider = raw
            else:
                cached = self._wrapped.get(api)
                if cached is not None and cached[0] is raw:
                    provider = cached[1]
                else:
                    provider = transform(api, raw)
                    self._wrapped[api] = (raw, provider)
            if provider is None:
                raise UnknownApiError(api, sorted(self.providers))
            return provider

    def register(self, api: str, provider: ApiProvider) -> None:
        with self._lock:
            self._wrapped.pop(api, None)
            self.providers[api] = provider

    def unregister(self, api: str) -> ApiProvider | None:
        with self._lock:
            self._wrapped.pop(api, None)
            return self.providers.pop(api, None)

    def set_transform(self, transform: RegistryTransform | None) -> None:
        with self._lock:
            self.transform = transform
            self._wrapped.clear()

    def apis(self) -> list[str]:
        with self._lock:
            return sorted(self.providers)

    def clear(self) -> None:
        """Forget every registration, the transform and the bindings."""
        with self._lock:
            self.providers.clear()
            self.transform = None
            self.bindings.clear()
            self._wrapped.clear()

    def child(
        self, transform: RegistryTransform | Inherit | None, bindings: Mapping[str, object] | None
    ) -> ProviderScope:
        """A scope starting from this one's registrations (and transform, unless given)."""
        with self._lock:
            return ProviderScope(
                dict(self.providers),
                self.transform if isinstance(transform, Inherit) else transform,
                bindings={**self.bindings, **(bindings or {})},
                starts_runtime=self.starts_runtime,
                parent=self,
            )


PROCESS_SCOPE: Final = ProviderScope({}, None)
"""The base every scope starts from: what is registered outside any scope, and the
transform the runtime installed from the configured mode."""

_current: ContextVar[ProviderScope | None] = ContextVar("openprogram_provider_scope", default=None)


class ScopeOrderError(RuntimeError):
    """A process-wide scope was left while one entered after it was still active."""


class _ProcessWideScopes:
    """The process-wide scopes entered and not yet left, innermost last; ``top`` is read on
    every lookup without a lock (one attribute read)."""

    __slots__ = ("lock", "stack", "top")

    def __init__(self) -> None:
        self.top: ProviderScope = PROCESS_SCOPE
        self.stack: list[ProviderScope] = []
        self.lock = threading.Lock()


_PROCESS_WIDE = _ProcessWideScopes()


def current_scope() -> ProviderScope:
    """The innermost scope active in this context: its own per-context scope, else the
    innermost process-wide scope, else the process scope."""
    return _current.get() or _PROCESS_WIDE.top


def _leave_process_wide(scope: ProviderScope) -> None:
    with _PROCESS_WIDE.lock:
        stack = _PROCESS_WIDE.stack
        position = next((i for i, entered in enumerate(stack) if entered is scope), None)
        if position is None:
            return
        later = len(stack) - 1 - position
        del stack[position]
        _PROCESS_WIDE.top = stack[-1] if stack else PROCESS_SCOPE
    if later:
        raise ScopeOrderError(
            "process-wide provider scopes must be left in the reverse order they were "
            f"entered: {later} entered after this one {'is' if later == 1 else 'are'} still "
            "active (leave the inner record/replay block first)"
        )


# --- the runtime, installed in one place -----------------------------------------------------


_installed = False
"""True once the runtime started and filled the process scope: read without a lock on every
lookup (a hint that only :func:`reset_provider_runtime` turns back)."""


def initialize_provider_runtime() -> RuntimeStatus:
    """Build the built-in providers and the configured mode, once a process, and install
    them into the process scope; later calls are cheap (see
    :mod:`openprogram.providers.runtime` for its states)."""
    global _installed
    status = runtime.start(PROCESS_SCOPE)  # raises unless the runtime is ready
    _installed = True
    return status


def reset_provider_runtime() -> None:
    """Test-only: forget every registration of the process scope and start the runtime
    afresh at ``NEW``."""
    global _installed
    _installed = False
    runtime.reset(PROCESS_SCOPE)


def runtime_configuration() -> LoadedConfig | None:
    """The configuration this process's runtime started with (starting it if need be), so
    that nothing in the process reads the file a second time; None if it could not be read."""
    initialize_provider_runtime()
    return runtime.configuration()


def _ensure_runtime(scope: ProviderScope) -> None:
    if not _installed and scope.starts_runtime:
        initialize_provider_runtime()


# --- the public registry ---------------------------------------------------------------------


def register_api_provider(api: str, provider: ApiProvider) -> None:
    """Make ``provider`` answer for ``api`` in the current scope, replacing any earlier
    registration there."""
    _ensure_runtime(current_scope())
    current_scope().register(api, provider)


def unregister_api_provider(api: str) -> ApiProvider | None:
    """Remove the provider registered for ``api`` in the current scope; returns it, or None
    if there was none."""
    _ensure_runtime(current_scope())
    return current_scope().unregister(api)


def get_api_provider(api: str) -> ApiProvider:
    """The provider that answers for ``api`` in the current scope, after its transform;
    raises :class:`~openprogram.errors.UnknownApiError`."""
    _ensure_runtime(current_scope())
    return current_scope().lookup(api)


def registered_apis() -> list[str]:
    """The apis with a registered provider in the current scope, sorted."""
    _ensure_runtime(current_scope())
    return current_scope().apis()


def scope_binding(name: str) -> object | None:
    """The value bound to ``name`` by the innermost scope of this context (or the process
    scope), or None; the runtime is started first unless the scope is isolated, so the
    configured mode's bindings are there from the first read. Once the runtime is ready, one
    ``ContextVar`` read and one dict lookup: cheap enough for every call a boundary sees."""
    _ensure_runtime(current_scope())
    return current_scope().bindings.get(name)


@contextmanager
def provider_scope(
    *,
    transform: RegistryTransform | Inherit | None = INHERIT,
    resolve: Callable[[str], ApiProvider | None] | None = None,
    bindings: Mapping[str, object] | None = None,
) -> Iterator[ProviderScope]:
    """Run a block in a registry scope of its own, in the current context; yields the scope.

    ``transform`` replaces the enclosing scope's transform inside the block, over whatever
    mode the configuration set (None: no transform). ``resolve`` makes the scope isolated:
    every lookup is ``resolve(api)`` (None raises ``UnknownApiError``), nothing is inherited,
    the runtime is never started. ``bindings`` adds or replaces values other boundaries look
    up (:func:`scope_binding`). Otherwise the runtime is started first, so the scope starts
    from the built-ins and the configured mode."""
    if resolve is not None:
        if not isinstance(transform, Inherit):
            raise TypeError("an isolated scope answers with resolve(); it takes no transform")

        def answer(api: str, registered: ApiProvider | None) -> ApiProvider | None:
            return resolve(api)

        scope = ProviderScope(
            {}, answer, bindings=bindings, starts_runtime=False, parent=current_scope()
        )
    else:
        _ensure_runtime(current_scope())
        scope = current_scope().child(transform, bindings)
    token = _current.set(scope)
    try:
        yield scope
    finally:
        try:
            _current.reset(token)
        except ValueError:  # left in another context than it was entered in
            _current.set(scope.parent if scope.parent is not PROCESS_SCOPE else None)


@contextmanager
def process_wide_scope(
    *,
    transform: RegistryTransform | Inherit | None = INHERIT,
    bindings: Mapping[str, object] | None = None,
) -> Iterator[ProviderScope]:
    """Run a block in a registry scope that every thread and task of the process sees;
    yields the scope.

    What the pytest fixture and ``record_replay()`` install record or replay with. It starts
    from the scope of the context entering it (the runtime started first); ``transform`` and
    ``bindings`` are as for :func:`provider_scope`. Leaving it while a process-wide scope
    entered after it is still active raises :class:`ScopeOrderError` (the scope is removed
    all the same, so the registry does not keep answering from it)."""
    _ensure_runtime(current_scope())
    previous = _current.get()
    with _PROCESS_WIDE.lock:
        scope = current_scope().child(transform, bindings)
        _PROCESS_WIDE.stack.append(scope)
        _PROCESS_WIDE.top = scope
    # A context already inside a per-context scope would not see the new one otherwise.
    token = _current.set(scope) if previous is not None else None
    try:
        yield scope
    finally:
        if token is not None:
            try:
                _current.reset(token)
            except ValueError:  # left in another context than it was entered in
                _current.set(previous)
        _leave_process_wide(scope)
