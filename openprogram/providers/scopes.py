"""The provider registry's lookup, and its one scoping mechanism.

What ``get_api_provider(api)`` answers is decided by the innermost active **scope**. A scope
holds the providers registered in it and a *transform* ``(api, registered | None) ->
provider | None`` that wraps each of them (and may answer for an api with no registration):

* the **process scope** is the base: the providers registered outside any scope, and the
  transform the provider runtime installed at its start from the configured mode (record
  wraps every api in a ``RecordingProvider``, replay answers every api with one
  ``ReplayProvider``, blocked refuses every call); every thread and task sees it;
* :func:`provider_scope` enters a scope **in the current context** (a ``ContextVar``): the
  block, the asyncio tasks it starts and whatever runs in a copy of its context
  (``asyncio.to_thread``, ``contextvars.copy_context().run``) see it; other threads and
  contexts do not. It starts as a copy of the enclosing scope's registrations; its transform
  is the enclosing one unless it names its own (so a block can answer in place of the
  configured mode). Registrations, removals and transforms made
  inside it stay in it, and the enclosing state returns exactly when the block ends.
* an **isolated** scope (``provider_scope(resolve=...)``) answers every lookup with
  ``resolve(api)`` alone, and never starts the provider runtime (``recordings verify`` and the
  demo run this way).
* :func:`process_wide_scope` enters a scope **for the whole process**: every thread and every
  task sees it for the length of the block, including threads started before it and worker
  threads of an executor (the pytest fixture and ``record_replay()`` install record or replay
  this way, so that no thread of the code under test can reach past them to a live provider).
  Process-wide scopes nest: the one entered last is in force, and they must be left in the
  reverse order (leaving another one first raises :class:`ScopeOrderError`). The context that
  entered one sees it even from inside a per-context scope it had entered before; a
  per-context scope entered in any thread while one is active starts from it.

A scope also carries *bindings*: values other boundaries look up by name in the same context
(:func:`scope_binding`), so that one scope can switch record or replay on for the provider
registry and for HTTP at once. A scope inherits its enclosing scope's bindings, except an
isolated one, and may add or replace some.

The transform's result is cached per scope and api, so each registered provider is wrapped
once. This module only looks up: it imports neither the runtime nor record/replay
(``api_registry`` starts the runtime before a lookup).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Protocol, runtime_checkable

from openprogram.errors import UnknownApiError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

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
        self,
        transform: RegistryTransform | Inherit | None,
        bindings: Mapping[str, object] | None,
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


def scope_binding(name: str) -> object | None:
    """The value bound to ``name`` by the innermost scope of this context (or the process
    scope), or None. One ``ContextVar`` read and one dict lookup: cheap enough for every
    request a boundary sees."""
    return (_current.get() or _PROCESS_WIDE.top).bindings.get(name)


@contextmanager
def provider_scope(
    *,
    transform: RegistryTransform | Inherit | None = INHERIT,
    resolve: Callable[[str], ApiProvider | None] | None = None,
    bindings: Mapping[str, object] | None = None,
) -> Iterator[ProviderScope]:
    """Run a block in a scope of its own (see the module's docstring); yields the scope.

    ``transform`` replaces the enclosing scope's transform inside the block (None: no
    transform). ``resolve`` makes the scope isolated: every lookup is ``resolve(api)`` (None
    raises ``UnknownApiError``), nothing is inherited, the runtime is never started.
    ``bindings`` adds or replaces values other boundaries look up (:func:`scope_binding`).
    """
    enclosing = current_scope()
    if resolve is not None:
        if not isinstance(transform, Inherit):
            raise TypeError("an isolated scope answers with resolve(); it takes no transform")

        def answer(api: str, registered: ApiProvider | None) -> ApiProvider | None:
            return resolve(api)

        scope = ProviderScope({}, answer, bindings=bindings, starts_runtime=False, parent=enclosing)
    else:
        scope = enclosing.child(transform, bindings)
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
    """Run a block in a scope that every thread and task of the process sees (see the
    module's docstring); yields the scope.

    It starts from the scope of the context entering it. ``transform`` and ``bindings`` are
    as for :func:`provider_scope`. Leaving it while a process-wide scope entered after it is
    still active raises :class:`ScopeOrderError` (the scope is removed all the same, so the
    registry does not keep answering from it).
    """
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
