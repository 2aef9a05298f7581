"""What the configured mode turns on: for the provider runtime of this process, and for the
command ``openprogram exec`` runs.

**The runtime's activation.** The provider runtime calls :func:`activate_record_replay` at
its start, after making the built-ins. It reads the configuration once ("next start": a
change affects the next process) and returns the :class:`Activation` the runtime installs
on the registry's process scope (the base every scope starts from):

* ``record`` — every current and future api is wrapped in a ``RecordingProvider``; all of
  them share one writer, so the whole process forms one call sequence in one recording;
* ``replay`` — every api, registered in this process or not, resolves to one shared
  ``ReplayProvider``;
* ``off`` — nothing is installed.

Each activation also binds the tape deck taped functions and agent tools use
(``openprogram.tape_boundary.deck``): record appends tape rows with the same writer, replay
serves them from the ``ReplayProvider``'s session (agent tools by ``record_replay.tools``),
blocked refuses them.

If activation fails — the config cannot be read or validated, the replay file is missing,
corrupt or of another version, the record target is not writable — the runtime does not
fail: a fail-closed ``BlockedProvider`` answers for every api, and every stream call raises
``RecordReplayBlockedError``, naming the cause and the recovery commands. Nothing falls
through to a live provider.

The configured mode covers the provider registry and tapes. ``openprogram exec`` starts a
program with both boundaries active from its first line: its ``sitecustomize`` decides the
activation before anything starts the runtime (:func:`preset_activation`), so the runtime
installs that one instead of reading the mode from the configuration.

**The plan of ``openprogram exec``.** :func:`exec_plan` reads the configuration once and decides:

* ``--record NAME|PATH`` — record into it: a recording that does not exist yet is created
  (in the store for a name, ``0600``); one that exists but holds no call is recorded into;
  one that holds calls is refused, so a good recording is never spoiled by appending a second
  session to it (delete it, or record into a new name);
* ``--replay NAME|PATH`` — replay it: it is read strictly first, and a missing, unreadable or
  damaged recording is refused;
* neither — the configured mode: ``off`` runs the command as it is (None); ``record`` and
  ``replay`` use ``record_replay.file`` as the runtime does at its start (a recording that
  holds calls is appended to).

Refusals of a flag's argument raise (a usage error: exit 2). A broken configuration, or a
configured recording that cannot be used, makes a *blocked* plan instead: the command runs
with both boundaries refusing every call, naming the cause and the commands that say why
(``recordings status``) and recover (``recordings off``) — no request leaves the machine.

``record_replay.ignore_fields``, ``compare_loopback_ports``, ``match``, ``http_passthrough_hosts``,
``http_headers`` and ``tools`` come from the configuration in every case.

The configured recording's deterministic sources (``record_replay.seed``, ``clock_start``,
``clock_step``: :mod:`openprogram.deterministic_sources`) are what ``now()`` and ``random()``
draw from while it records, in the runtime's activation and in exec's configured plan; with
a clock, the process (or the command) runs in UTC, under record and under replay of that
recording alike. ``--record`` and ``--replay`` do not take them from the configuration:
exec's own ``--seed`` and ``--clock-*`` are theirs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from openprogram.activation.plan import RecordReplayPlan
from openprogram.config import paths  # called through the module: one function answers for all
from openprogram.config.problems import file_not_set_problem
from openprogram.deterministic_sources import set_local_time_to_utc
from openprogram.errors import ExecSetupError, OpenProgramError
from openprogram.recording.user_redaction import user_redaction_in_effect
from openprogram.recording.writer import forget_writer, writer_for
from openprogram.store.names import resolve_recording
from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, BlockedTapes, TapePlayer, TapeRecorder
from openprogram.wording import plural

if TYPE_CHECKING:
    from openprogram.config.models import RecordReplaySettings
    from openprogram.config.settings import LoadedConfig
    from openprogram.deterministic_sources import RecordingSources
    from openprogram.providers.registry import RegistryTransform
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "Activation",
    "Mode",
    "activate_record_replay",
    "configured_plan",
    "exec_plan",
    "preset_activation",
    "recording_plan",
]

logger = logging.getLogger("openprogram")

Mode = Literal["off", "record", "replay", "blocked"]
"""What record/replay is in a process: as configured, or ``blocked`` when it could not start."""


@dataclass(frozen=True, slots=True)
class Activation:
    """What the configuration turned on: the mode, and the transform that implements it."""

    mode: Mode
    transform: RegistryTransform | None = None
    recording: Path | None = None
    blocked_reason: str | None = None
    bindings: Mapping[str, object] = field(default_factory=dict)
    """Values other boundaries look up in the process scope (the registry's
    ``scope_binding``): the tape deck."""
    release: Callable[[], None] | None = None
    """What undoes what the activation holds for the process beyond the registry: under replay, the
    refusal of every connection no recording serves (the runtime's reset calls it)."""


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


def blocked(cause: str, recording: Path | None = None) -> Activation:
    """The activation that refuses every model call and every taped call with ``cause``."""
    # The transforms stand on the record/replay providers and their pydantic models: loaded
    # only when a process activates record/replay, not when it imports the registry.
    from openprogram.provider_boundary.transforms import blocked_transform

    bindings = {TAPE_DECK_BINDING: BlockedTapes(cause)}
    return Activation("blocked", blocked_transform(cause), recording, cause, bindings)


def _activate(loaded: LoadedConfig | None) -> Activation:
    # The configuration's models cost ~100 ms to import: a process pays for them only when it
    # starts the runtime (and not at all when exec preset the activation).
    from openprogram.config.settings import load_config

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
    path = paths.configured_recording_path(settings.file)
    user = user_redaction_in_effect(patterns=settings.redact_patterns)
    if settings.mode == "record":
        return _activate_record(path, settings.file, user, sources=settings.sources())
    return _activate_replay(path, settings, user)


def _activate_record(
    path: Path, setting: str, user: UserRedaction | None, *, sources: RecordingSources | None = None
) -> Activation:
    from openprogram.provider_boundary.transforms import record_transform

    check_record_target(path, setting)  # as exec's plan does: nothing is written otherwise
    writer = writer_for(path)
    writer.user_redaction = user
    existing = writer.open()  # creates the file, or checks it can be appended to
    if existing:
        writer.mark_new_session()
        logger.warning(
            "openprogram: recording into %s, which already holds %s; new calls are "
            "appended after them (replay serves every call in order from call 0)",
            path,
            plural(existing, "call"),
        )
    bindings = {TAPE_DECK_BINDING: TapeRecorder(writer, sources)}  # now(), random()
    release = _zone_of_the_clock(sources)
    return Activation("record", record_transform(path), path, bindings=bindings, release=release)


def _activate_replay(
    path: Path, settings: RecordReplaySettings, user: UserRedaction | None
) -> Activation:
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.provider_boundary.transforms import replay_transform

    provider = ReplayProvider(
        path,
        ignore_fields=settings.ignore_fields,
        compare_loopback_ports=settings.compare_loopback_ports,
        match=settings.match,
        redaction=user,
        tools=settings.tools,
    )
    bindings = {TAPE_DECK_BINDING: TapePlayer(provider.session)}
    # The configured mode is the model layer's: the process's other connections are its own
    # (exec, record_replay() and the fixture are the hermetic ways in).
    release = _zone_of_the_clock(settings.sources())
    return Activation(
        "replay", replay_transform(provider), path, bindings=bindings, release=release
    )


def _zone_of_the_clock(sources: RecordingSources | None) -> Callable[[], None] | None:
    """With a clock among the configured ``sources``, the process's local zone is UTC from
    now on, recording or replaying, as under ``exec`` (a time shown in the local zone reads
    the same on every machine): what puts the zone back."""
    return None if sources is None or sources.clock is None else set_local_time_to_utc()


def exec_plan(
    *, record: str | None = None, replay: str | None = None, loaded: LoadedConfig | None = None
) -> RecordReplayPlan | None:
    """The plan for ``openprogram exec`` (None: record/replay is off, run as it is).

    Raises :class:`ExecSetupError` for both flags at once or a ``--record`` target that
    holds calls, ``RecordingNameError`` for an invalid name, and
    :class:`~openprogram.errors.RecordingFileError` for a ``--replay`` recording that cannot
    be read or a ``--record`` one that cannot be written."""
    from openprogram.config.settings import load_config

    if record is not None and replay is not None:
        raise ExecSetupError("--record and --replay exclude each other: give one of them")
    if record is not None or replay is not None:
        argument = record if record is not None else replay
        assert argument is not None
        path = resolve_recording(argument, paths.recordings_dir()).path
        if replay is not None:
            _check_replay_source(path)
        else:
            check_record_target(path, argument)
    if loaded is None:
        loaded = load_config()
    if record is not None:
        # After the configuration: a new recording's header names its redaction patterns.
        usable = loaded.settings if loaded.error is None else None
        _refuse_a_target_with_calls(path, record, None if usable is None else usable.record_replay)
    if loaded.error is not None:
        return RecordReplayPlan.blocked(str(loaded.error))
    assert loaded.settings is not None
    settings = loaded.settings.record_replay
    if record is not None:
        return settings_plan("record", path, settings)
    if replay is not None:
        return settings_plan("replay", path, settings)
    return configured_plan(settings)


def recording_plan(
    mode: Literal["record", "replay"], path: Path, settings: RecordReplaySettings
) -> RecordReplayPlan:
    """The plan to record into, or replay, the recording at ``path`` with the configured
    ``settings`` (a session of ``openprogram serve``). record: the recording is created with
    its header, or checked to be appendable; replay: it is read strictly and must hold
    something to replay. Raises ``RecordingFileError`` / :class:`ExecSetupError`."""
    if mode == "record":
        check_appendable(path)
        _open_for_recording(path, settings)
    else:
        _check_replay_source(path)
    return settings_plan(mode, path, settings)


def configured_plan(
    settings: RecordReplaySettings, *, check_recording: bool = True
) -> RecordReplayPlan | None:
    """The plan of the configured mode (None: off): a blocked plan when no recording is set
    or its name cannot be one; with ``check_recording``, also when the recording cannot be
    recorded into (it is created with its header) or replayed. Without, the recording is
    left to whoever prepares the plan's boundaries (the configured mode of a starting
    process: when its first model call needs it)."""
    if settings.mode == "off":
        return None
    if not settings.file:
        return RecordReplayPlan.blocked(file_not_set_problem(settings.mode))
    try:
        path = paths.configured_recording_path(settings.file)
    except OpenProgramError as error:
        return RecordReplayPlan.blocked(f"record_replay.file: {error}")
    try:
        if check_recording and settings.mode == "record":
            check_record_target(path, settings.file)
            _open_for_recording(path, settings)
        elif check_recording:
            _check_replay_source(path)
    except OpenProgramError as error:
        return RecordReplayPlan.blocked(str(error), path)
    # The configured recording's sources: drawn from under record, the zone under replay.
    return replace(settings_plan(settings.mode, path, settings), sources=settings.sources())


def settings_plan(
    mode: Literal["record", "replay"], path: Path, settings: RecordReplaySettings
) -> RecordReplayPlan:
    """The plan that records into or replays ``path`` with ``[record_replay]``'s settings:
    every way in that names its own recording builds its plan here, so none forgets one."""
    return RecordReplayPlan(
        mode,
        path,
        ignore_fields=tuple(settings.ignore_fields),
        compare_loopback_ports=settings.compare_loopback_ports,
        match=settings.match,
        passthrough_hosts=frozenset(settings.http_passthrough_hosts),
        allowed_hosts=frozenset(settings.allowed_hosts),
        model_hosts=frozenset(settings.model_hosts),
        http_headers=frozenset(settings.http_headers),
        redact_patterns=tuple(settings.redact_patterns),
        tools=tuple(settings.tools.items()),
    )


def _refuse_a_target_with_calls(
    path: Path, argument: str, settings: RecordReplaySettings | None
) -> None:
    existing = _open_for_recording(path, settings)
    if existing:
        raise ExecSetupError(
            f"{path} already holds {plural(existing, 'call')}: record into a new name, or "
            f"delete it first (`openprogram recordings delete {argument}`) to record it again"
        )


def _open_for_recording(path: Path, settings: RecordReplaySettings | None) -> int:
    """Create the recording (with its header, naming the user redaction in effect: the
    settings' patterns and the registered function), or open the one there, checked first;
    returns the calls it already holds. Raises ``RecordingFileError``."""
    patterns = () if settings is None else settings.redact_patterns
    try:
        writer = writer_for(path)
        writer.user_redaction = user_redaction_in_effect(patterns=patterns)
        return writer.open()
    finally:
        forget_writer(path)  # the command's processes open their own


def check_record_target(path: Path, argument: str) -> None:
    """:func:`openprogram.store.status.check_record_target`, loaded (with the configuration
    it reads) by the processes that record, when they start to."""
    from openprogram.store.status import check_record_target as check

    check(path, argument)


def check_appendable(path: Path) -> None:
    """Refuse to record into a recording replay would refuse: calls appended to it could
    never be read (:func:`openprogram.store.status.read_appendable`, loaded when used)."""
    from openprogram.store.status import read_appendable

    read_appendable(path)


def _check_replay_source(path: Path) -> None:
    """Read the recording strictly, as replay will; raises ``RecordingFileError``, and
    ``ExecSetupError`` for a recording that holds nothing to replay (a command making no
    call would pass against it, proving nothing)."""
    # The recording's reader and the provider's event models cost ~100 ms to import: paid by
    # the processes that check a recording, not by every one that imports the registry.
    from openprogram.provider_boundary.codec import read_for_replay
    from openprogram.recording.format import refuse_a_snapshot

    recording = read_for_replay(path)
    refuse_a_snapshot(recording)
    if not recording.calls and not recording.tapes:
        raise ExecSetupError(nothing_to_replay(path))


def nothing_to_replay(path: Path) -> str:
    """Why a recording of no call and no tape entry cannot be replayed."""
    return (
        f"{path} holds no calls: there is nothing to replay (was its recording interrupted?); "
        "record the session first: openprogram exec --record NAME -- COMMAND"
    )
