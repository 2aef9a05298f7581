"""Record/replay activation: the configured mode, installed once at runtime start.

``initialize_provider_runtime()`` calls :func:`activate_record_replay` after registering the
built-ins. It reads the configuration once ("next start": a change affects the next
process) and returns the transform the runtime installs on the registry's process scope (the
base every scope starts from, see ``scopes.py``):

* ``record`` — every current and future api is wrapped in a ``RecordingProvider``; all of
  them share one writer, so the whole process forms one call sequence in one recording;
* ``replay`` — every api, registered in this process or not, resolves to one shared
  ``ReplayProvider``;
* ``off`` — nothing is installed.

Each activation also binds the tape deck taped functions and agent tools use
(``openprogram.tape_boundary.deck``): record appends tape rows with the same writer, replay serves
them from the ``ReplayProvider``'s session (agent tools by ``record_replay.tools``), blocked
refuses them.

If activation fails — the config cannot be read or validated, the replay file is missing,
corrupt or of another version, the record target is not writable — the runtime does not
fail: a fail-closed :class:`BlockedProvider` answers for every api, and every stream call
raises :class:`RecordReplayBlockedError`, naming the cause and the recovery commands.
Nothing falls through to a live provider.

The configured mode covers the provider registry only. ``openprogram exec`` starts a program
with both boundaries active from its first line: its ``sitecustomize`` decides the activation
before anything starts the runtime (:func:`preset_activation`), so the runtime installs that
one instead of reading the mode from the configuration. :func:`record_transform`,
:func:`replay_transform` and :func:`blocked_transform` are the three transforms, for
whoever installs record, replay or a refusal on a scope of the registry.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.errors import OpenProgramError, RecordReplayBlockedError
from openprogram.plural import plural
from openprogram.providers.scopes import ApiProvider, RegistryTransform

if TYPE_CHECKING:
    from openprogram.config.settings import LoadedConfig
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.types import Context, Model, SimpleStreamOptions, StreamOptions
    from openprogram.recording.user_redaction import UserRedaction

logger = logging.getLogger("openprogram")


class BlockedProvider:
    """Answers every stream call with the same :class:`RecordReplayBlockedError`."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, cause: str) -> None:
        self.cause = cause

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._refuse()

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._refuse()

    async def _refuse(self) -> AsyncIterator[AssistantMessageEvent]:
        raise RecordReplayBlockedError(self.cause)
        yield  # pragma: no cover - makes this an async generator


@dataclass(frozen=True, slots=True)
class Activation:
    """What the configuration turned on: the mode, and the transform that implements it."""

    mode: str
    """``off``, ``record``, ``replay`` or ``blocked``."""
    transform: RegistryTransform | None = None
    recording: Path | None = None
    blocked_reason: str | None = None
    bindings: Mapping[str, object] = field(default_factory=dict)
    """Values other boundaries look up in the process scope (``scopes.scope_binding``)."""


def blocked_transform(cause: str) -> RegistryTransform:
    """Every api, registered or not, answered by one :class:`BlockedProvider`."""
    provider = BlockedProvider(cause)

    def answer_for_every_api(api: str, registered: ApiProvider | None) -> ApiProvider:
        return provider

    return answer_for_every_api


def record_transform(path: Path) -> RegistryTransform:
    """Every registered api wrapped in a ``RecordingProvider`` writing to ``path`` (all of
    them share the path's one writer, so they form one call sequence)."""

    def record_every_api(api: str, registered: ApiProvider | None) -> ApiProvider | None:
        from openprogram.provider_boundary.recorder import RecordingProvider

        # The registry keeps one wrapper per entry; every wrapper shares the path's writer.
        return None if registered is None else RecordingProvider(registered, path)

    return record_every_api


def replay_transform(provider: ReplayProvider) -> RegistryTransform:
    """Every api, registered in this process or not, answered by ``provider``."""

    def replay_every_api(api: str, registered: ApiProvider | None) -> ApiProvider:
        return provider

    return replay_every_api


def blocked(cause: str, recording: Path | None = None) -> Activation:
    from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, BlockedTapes

    bindings = {TAPE_DECK_BINDING: BlockedTapes(cause)}
    return Activation("blocked", blocked_transform(cause), recording, cause, bindings)


_preset: Callable[[], Activation] | None = None


def preset_activation(make: Callable[[], Activation] | None) -> None:
    """Have the runtime's start install ``make()`` instead of the configured mode (None: back
    to the configuration). ``openprogram exec``'s ``sitecustomize`` calls it, before the
    program's first line, with the activation exec decided for the whole process."""
    global _preset
    _preset = make


def activate_record_replay(loaded: LoadedConfig | None = None) -> Activation:
    """Build the activation the configuration asks for (read now unless given), or the
    preset one (:func:`preset_activation`); never raises."""
    try:
        return _preset() if _preset is not None else _activate(loaded)
    except Exception as exc:  # fail closed whatever went wrong
        cause = str(exc) if isinstance(exc, OpenProgramError) else f"{type(exc).__name__}: {exc}"
        return blocked(cause)


def _activate(loaded: LoadedConfig | None) -> Activation:
    from openprogram.config.settings import load_config
    from openprogram.store.names import configured_recording_path, file_not_set_problem

    if loaded is None:
        loaded = load_config()
    if loaded.error is not None:
        return blocked(str(loaded.error))
    assert loaded.settings is not None
    settings = loaded.settings.record_replay
    if settings.mode == "off":
        return Activation("off")
    if not settings.file:
        return blocked(file_not_set_problem(settings.mode))
    from openprogram.recording.user_redaction import user_redaction_in_effect

    path = configured_recording_path(settings.file)
    user = user_redaction_in_effect(patterns=settings.redact_patterns)
    if settings.mode == "record":
        return _activate_record(path, user)
    return _activate_replay(path, settings.ignore_fields, settings.match, settings.tools, user)


def _activate_record(path: Path, user: UserRedaction | None) -> Activation:
    from openprogram.recording.writer import writer_for
    from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, TapeRecorder

    writer = writer_for(path)
    writer.user_redaction = user
    existing = writer.open()  # creates the file, or checks it can be appended to
    if existing:
        logger.warning(
            "openprogram: recording into %s, which already holds %s; new calls are "
            "appended after them (replay serves every call in order from call 0)",
            path,
            plural(existing, "call"),
        )
    bindings = {TAPE_DECK_BINDING: TapeRecorder(writer)}
    return Activation("record", record_transform(path), path, bindings=bindings)


def _activate_replay(
    path: Path,
    ignore_fields: list[str],
    match: str,
    tools: Mapping[str, str],
    user: UserRedaction | None,
) -> Activation:
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, TapePlayer

    provider = ReplayProvider(
        path, ignore_fields=ignore_fields, match=match, redaction=user, tools=tools
    )
    bindings = {TAPE_DECK_BINDING: TapePlayer(provider.session)}
    return Activation("replay", replay_transform(provider), path, bindings=bindings)
