"""The provider runtime: the built-ins made, then record/replay activated, once a process.

Importing ``openprogram.providers`` does none of this. The registry
(:mod:`openprogram.providers.registry`) calls :func:`start` with its process scope before the
first lookup that needs it; :func:`start` makes the built-in providers (which reads no
configuration and opens no file), reads the configuration once, builds the configured mode
(:mod:`openprogram.activation.configured`) and puts all of it into that scope before anyone
can look up, moving ``NEW → INITIALIZING → READY | FAILED``:

* concurrent first callers (threads) wait for the one initialization and share its result;
* the initializing thread calling it again (from a built-in's constructor, say) gets a
  clear error instead of a deadlock;
* a built-in that fails to register leaves the runtime ``FAILED``: every later call raises a
  fresh :class:`ProviderRuntimeError` with the same stage and cause (its message redacted,
  and the factory's own exception chained to none, so no traceback prints what it held);
* record/replay is then activated from the configuration and installed as the transform
  of the process scope, the base every scope starts from; if that fails the runtime is still
  ``READY``, in mode ``blocked``.

This module knows the process scope only as the few methods it calls
(:class:`ProcessScope`): the registry imports it, never the other way round. Importing it
loads only the built-ins' factory table: the configured mode, and the recording core it
builds, are imported by :func:`start`, so importing the registry stays light."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from openprogram.errors import ProviderRuntimeError
from openprogram.providers.builtins import BUILTIN_PROVIDER_FACTORIES, DEFAULT_API_KEY_VARIABLES

if TYPE_CHECKING:
    from openprogram.activation.configured import Activation, Mode
    from openprogram.config.models import Settings
    from openprogram.config.settings import LoadedConfig
    from openprogram.providers.registry import ApiProvider, RegistryTransform


class ProcessScope(Protocol):
    """What the runtime fills: the registry's process scope."""

    bindings: dict[str, object]

    def register(self, api: str, provider: ApiProvider) -> None: ...

    def set_transform(self, transform: RegistryTransform | None) -> None: ...

    def clear(self) -> None: ...


def remember_key_variables(settings: Settings | None) -> None:
    """Remember the built-in apis' default key variables and every ``api_key_env`` the
    configuration names (none when it could not be read)."""
    from openprogram.recording.redaction import remember_secret_variable  # with the runtime

    for variable in DEFAULT_API_KEY_VARIABLES.values():
        remember_secret_variable(variable)
    for provider in settings.providers.values() if settings is not None else ():
        if provider.api_key_env:
            remember_secret_variable(provider.api_key_env)


class RuntimeState(StrEnum):
    NEW = "new"
    INITIALIZING = "initializing"
    READY = "ready"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class RuntimeStatus:
    state: RuntimeState
    mode: Mode
    recording: Path | None = None
    blocked_reason: str | None = None


_condition = threading.Condition(threading.RLock())
_state = RuntimeState.NEW
_activation: Activation | None = None
"""What the configured mode turned on; None before the runtime is ready (mode ``off``)."""
_configuration: LoadedConfig | None = None
_failure: tuple[str, str] | None = None
_initializing_thread: int | None = None


def start(into: ProcessScope) -> RuntimeStatus:
    """Make the built-ins and activate record/replay into the process scope ``into``, once;
    later calls are cheap."""
    global _state, _initializing_thread, _configuration
    with _condition:
        while _state is RuntimeState.INITIALIZING:
            if _initializing_thread == threading.get_ident():
                raise ProviderRuntimeError(
                    "initialization",
                    "initialize_provider_runtime() was called again by the thread that is "
                    "initializing it; a built-in provider must not look up the registry "
                    "while it is being constructed",
                )
            _condition.wait()
        if _state is RuntimeState.READY:
            return _status()
        if _state is RuntimeState.FAILED:
            assert _failure is not None
            raise ProviderRuntimeError(*_failure)
        _state = RuntimeState.INITIALIZING
        _initializing_thread = threading.get_ident()
    try:
        # The configured mode (and the recording core it builds) is loaded only now, as the
        # runtime starts: importing the registry loads neither.
        from openprogram.activation.configured import activate_record_replay

        loaded = _configuration = _load_configuration()
        remember_key_variables(loaded.settings if loaded is not None else None)
        _register_builtins(loaded, into)
        activation = activate_record_replay(loaded)
        if activation.transform is not None:
            into.set_transform(activation.transform)
        into.bindings.update(activation.bindings)
    except ProviderRuntimeError as error:
        _finish(RuntimeState.FAILED, failure=(error.stage, error.cause))
        raise
    except BaseException:
        _finish(RuntimeState.NEW)  # interrupted (Ctrl-C): let the next caller try again
        raise
    _finish(RuntimeState.READY, activation=activation)
    return provider_runtime_status()


def _load_configuration() -> LoadedConfig | None:
    """The process configuration, read once; None if even that failed (activation then
    blocks, naming the cause)."""
    try:
        from openprogram.config.settings import load_config

        return load_config()
    except Exception:
        return None


def _register_builtins(loaded: LoadedConfig | None, into: ProcessScope) -> None:
    from openprogram.recording.redaction import SecretRedactor  # with the runtime

    providers = loaded.settings.providers if loaded and loaded.settings else {}
    for api, factory in BUILTIN_PROVIDER_FACTORIES.items():
        cause = None
        try:
            provider = factory(providers.get(api))
        except Exception as exc:
            # A factory's message may quote its settings (a base_url with a password in it).
            cause = SecretRedactor().redact_text(f"{type(exc).__name__}: {exc}")
        if cause is not None:
            # Raised outside the handler, so that the factory's own exception — its message
            # and its frames' settings unredacted — is neither the cause nor the context a
            # printed traceback would show.
            raise ProviderRuntimeError(f"built-in registration of {api!r}", cause)
        into.register(api, provider)


def _finish(
    state: RuntimeState,
    *,
    failure: tuple[str, str] | None = None,
    activation: Activation | None = None,
) -> None:
    global _state, _failure, _initializing_thread, _activation
    with _condition:
        _state, _failure, _initializing_thread = state, failure, None
        _activation = activation
        _condition.notify_all()


def _status() -> RuntimeStatus:
    if _activation is None:
        return RuntimeStatus(_state, "off")
    return RuntimeStatus(
        _state, _activation.mode, _activation.recording, _activation.blocked_reason
    )


def configuration() -> LoadedConfig | None:
    """The configuration the runtime started with; None if it could not be read, or before
    it started (the registry's ``runtime_configuration()`` starts it first)."""
    with _condition:
        return _configuration


def provider_runtime_status() -> RuntimeStatus:
    """Where the runtime stands, without initializing it."""
    with _condition:
        return _status()


def reset(into: ProcessScope) -> None:
    """Test-only: forget every registration of ``into`` and start the runtime afresh at ``NEW``."""
    global _state, _activation, _failure, _initializing_thread, _configuration
    with _condition:
        if _state is RuntimeState.INITIALIZING:
            raise ProviderRuntimeError("reset", "cannot reset while initializing")
        if _activation is not None and _activation.release is not None:
            _activation.release()
        into.clear()
        _configuration = None
        _state, _activation, _failure, _initializing_thread = (RuntimeState.NEW, None, None, None)
