"""The plan ``openprogram exec`` runs a command with, from its flags and the configuration.

:func:`exec_plan` reads the configuration once and decides:

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

``record_replay.ignore_fields``, ``match``, ``http_passthrough_hosts``, ``http_headers`` and
``tools`` come from the configuration in every case.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import ExecSetupError, OpenProgramError
from openprogram.plural import plural

if TYPE_CHECKING:
    from openprogram.config.models import RecordReplaySettings
    from openprogram.config.settings import LoadedConfig

__all__ = ["exec_plan"]


def exec_plan(
    *, record: str | None = None, replay: str | None = None, loaded: LoadedConfig | None = None
) -> RecordReplayPlan | None:
    """The plan for ``openprogram exec`` (None: record/replay is off, run as it is).

    Raises :class:`ExecSetupError` for both flags at once or a ``--record`` target that
    holds calls, ``RecordingNameError`` for an invalid name, and
    :class:`~openprogram.errors.RecordingFileError` for a ``--replay`` recording that cannot
    be read or a ``--record`` one that cannot be written.
    """
    from openprogram.config.paths import recordings_dir
    from openprogram.config.settings import load_config
    from openprogram.store.names import resolve_recording

    if record is not None and replay is not None:
        raise ExecSetupError("--record and --replay exclude each other: give one of them")
    if record is not None or replay is not None:
        argument = record if record is not None else replay
        assert argument is not None
        path = resolve_recording(argument, recordings_dir()).path
        if replay is not None:
            _check_replay_source(path)
    if loaded is None:
        loaded = load_config()
    if record is not None:
        # After the configuration: a new recording's header names its redaction patterns.
        usable = loaded.settings if loaded.error is None else None
        _check_record_target(path, record, None if usable is None else usable.record_replay)
    if loaded.error is not None:
        return RecordReplayPlan.blocked(str(loaded.error))
    assert loaded.settings is not None
    settings = loaded.settings.record_replay
    if record is not None:
        return _plan("record", path, settings)
    if replay is not None:
        return _plan("replay", path, settings)
    return _configured(settings)


def _configured(settings: RecordReplaySettings) -> RecordReplayPlan | None:
    from openprogram.store.names import configured_recording_path, file_not_set_problem

    if settings.mode == "off":
        return None
    if not settings.file:
        return RecordReplayPlan.blocked(file_not_set_problem(settings.mode))
    try:
        path = configured_recording_path(settings.file)
        if settings.mode == "record":
            _open_for_recording(path, settings)
        else:
            _check_replay_source(path)
    except OpenProgramError as error:
        return RecordReplayPlan.blocked(str(error))
    return _plan(settings.mode, path, settings)


def _plan(mode: str, path: Path, settings: RecordReplaySettings) -> RecordReplayPlan:
    return RecordReplayPlan(
        "record" if mode == "record" else "replay",
        path,
        ignore_fields=tuple(settings.ignore_fields),
        match=settings.match,
        passthrough_hosts=frozenset(settings.http_passthrough_hosts),
        http_headers=frozenset(settings.http_headers),
        redact_patterns=tuple(settings.redact_patterns),
        tools=tuple(settings.tools.items()),
    )


def _check_record_target(path: Path, argument: str, settings: RecordReplaySettings | None) -> None:
    existing = _open_for_recording(path, settings)
    if existing:
        raise ExecSetupError(
            f"{path} already holds {plural(existing, 'call')}: record into a new name, or "
            f"delete it first (`openprogram recordings delete {argument}`) to record it again"
        )


def _open_for_recording(path: Path, settings: RecordReplaySettings | None) -> int:
    """Create the recording (with its header, naming the user redaction in effect: the
    settings' patterns and the registered function), or check it can be appended to;
    returns the calls it already holds. Raises ``RecordingFileError``."""
    from openprogram.recording.user_redaction import user_redaction_in_effect
    from openprogram.recording.writer import forget_writer, writer_for

    patterns = () if settings is None else settings.redact_patterns
    try:
        writer = writer_for(path)
        writer.user_redaction = user_redaction_in_effect(patterns=patterns)
        return writer.open()
    finally:
        forget_writer(path)  # the command's processes open their own


def _check_replay_source(path: Path) -> None:
    """Read the recording strictly, as replay will; raises ``RecordingFileError``."""
    from openprogram.activation.boundaries import read_for_replay

    read_for_replay(path)
