"""What record/replay is configured to do, and whether the next start would work.

:func:`configured_status` reads the configuration and checks the configured recording the
way the provider runtime will at its next start — without starting it, importing a vendor
provider, or opening a socket — so ``openprogram recordings status`` can say what is wrong
and what to do while the config or the recording is broken.

:func:`check_record_target` is that check for recording, the one every way of recording
into a named recording makes before it writes anything (``exec --record``, the configured
record mode in exec's plan, in ``serve`` and at every process's start): ``status`` calls
INVALID exactly what it refuses, and names a link in the store as a link.

Switching record/replay on and off: the library behind ``record``, ``replay`` and ``off``.

Each writes the configuration through :mod:`openprogram.config.editing` (only the keys
concerned change) and takes effect at the next start of a process. ``record`` creates the
recording first and removes it again if the configuration cannot be written; ``replay``
checks the recording before switching."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.config import paths  # called through the module: one function answers for all
from openprogram.config.environment import (
    MODE_VARIABLE,
    RECORD_REPLAY_VARIABLE,
    is_secret_variable,
    suggest_variable,
)
from openprogram.config.models import Mode
from openprogram.config.paths import recordings_dir
from openprogram.config.problems import file_not_set_problem
from openprogram.config.settings import load_config
from openprogram.config.startup_marker import file_state, same_state, write_startup_marker
from openprogram.errors import OpenProgramError, RecordingFileError
from openprogram.recording.not_recorded import connection_text
from openprogram.store import names
from openprogram.wording import plural

if TYPE_CHECKING:
    from openprogram.config.editing import ConfigEdit
    from openprogram.config.models import RecordReplaySettings
    from openprogram.deterministic_sources import RecordingSources
    from openprogram.recording.format import Recording


REPAIR_ADVICE = "run `openprogram recordings off` to turn record/replay off"

WHAT_THE_MODE_COVERS = (
    "it covers the model traffic of Python processes started from now on",
    "other traffic goes live; non-Python programs: `openprogram exec -- COMMAND` or "
    "`openprogram serve`",
)
"""What the configured mode covers and what not, in two lines: said whenever it records or
replays."""


@dataclass(frozen=True)
class FileState:
    """The configured recording as the next start would find it."""

    path: Path
    exists: bool
    valid: bool
    calls: int = 0
    truncated_calls: list[int] = field(default_factory=list)
    format_version: int | None = None
    problem: str | None = None
    not_recorded: list[dict[str, Any]] = field(default_factory=list)
    """The connections the recorded session opened that no boundary captured."""
    sessions: int = 1
    """How many sessions were recorded into it one after the other (a replay serves them as one)."""
    link: str | None = None
    """What the store's file is a symbolic link to, when it is one (record refuses it;
    replay reads through it)."""


@dataclass(frozen=True)
class StatusReport:
    config_path: Path
    config_source: str
    """``OPENPROGRAM_CONFIG``, ``OPENPROGRAM_HOME`` or ``default``."""
    config_exists: bool
    config_changed_at: str | None
    """When the config file last changed (ISO-8601 UTC): processes started before then run
    with the previous settings until they restart."""
    mode: Mode | None
    """The mode the next start would use (file and environment), None if the config is broken."""
    file_setting: str | None
    recording: FileState | None
    env_overrides: dict[str, str]
    """Each ``OPENPROGRAM_…`` variable that sets a setting, with its value — or
    :data:`HIDDEN` for a variable that may hold a secret — and secrets removed."""
    problems: list[str]
    advice: list[str]
    notes: list[str]
    ignored_env: dict[str, str | None] = field(default_factory=dict)
    """``OPENPROGRAM_…`` variables that set nothing (likely misspelt), each with the variable
    it most likely meant, or None."""

    @property
    def broken(self) -> bool:
        return bool(self.problems)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["broken"] = self.broken
        data["config_path"] = str(self.config_path)
        if self.recording is not None:
            data["recording"]["path"] = str(self.recording.path)
        return data


HIDDEN = "[value hidden]"
"""Shown instead of the value of a variable that may hold a secret."""


def configured_status() -> StatusReport:
    """Read the configuration and check its recording; never raises for a broken state.

    No secret reaches the report: the value of a variable that may hold one is
    :data:`HIDDEN`, and every other text has credentials removed."""
    loaded = load_config()
    problems: list[str] = []
    advice: list[str] = []
    notes: list[str] = []
    mode: Mode | None = None
    file_setting: str | None = None
    recording: FileState | None = None
    if loaded.error is not None:
        problems.append(str(loaded.error))
        if loaded.error.env_var is not None:
            advice.append(f"unset {loaded.error.env_var} or fix its value")
        else:
            advice.append(f"fix the file, or {REPAIR_ADVICE} (it keeps a backup of the file)")
    else:
        assert loaded.settings is not None
        settings = loaded.settings.record_replay
        mode, file_setting = settings.mode, settings.file
        if mode != "off" and not file_setting:
            problems.append(file_not_set_problem(mode))
            advice.append(f"run `openprogram recordings {mode} NAME`, or {REPAIR_ADVICE}")
        elif file_setting:
            try:
                path = paths.configured_recording_path(file_setting)
            except OpenProgramError as error:
                if mode == "off":  # the file is not used: worth a note, not a failure
                    notes.append(
                        f"record_replay.file: {error} (it does not matter while the mode is "
                        "off; `openprogram recordings off` removes it)"
                    )
                else:
                    problems.append(f"record_replay.file: {error}")
                    advice.append(f"{REPAIR_ADVICE} (it also removes the invalid file setting)")
            else:
                recording = check_recording(path, mode=mode, argument=file_setting)
                _judge_recording(mode, recording, problems, advice, notes)
    forced = loaded.mode_forced_by_env
    if forced is not None:
        notes.append(f"{MODE_VARIABLE}={forced} forces the mode")
    ignored = {name: suggest_variable(name) for name in loaded.ignored_env}
    for name, suggestion in ignored.items():
        meant = f": did you mean {suggestion}?" if suggestion else ""
        notes.append(f"{name} is not a setting, so it is ignored{meant}")
    if mode in ("record", "replay") or loaded.error is not None:
        notes.append("changes take effect at the next start of a process")
    if mode in ("record", "replay"):
        notes.extend(WHAT_THE_MODE_COVERS)
    if mode is not None and loaded.settings is not None:
        sources_note = _sources_note(mode, loaded.settings.record_replay)
        if sources_note is not None:
            notes.append(sources_note)
    redact = _secret_remover()
    return StatusReport(
        config_path=loaded.location.path,
        config_source=loaded.location.source,
        config_exists=loaded.exists,
        config_changed_at=_changed_at(loaded.location.path),
        mode=mode,
        file_setting=None if file_setting is None else redact(file_setting),
        recording=None if recording is None else _without_secrets(recording, redact),
        env_overrides={
            name: HIDDEN if is_secret_variable(name, value) else redact(value)
            for name, value in loaded.env_overrides.items()
        },
        problems=[redact(text) for text in problems],
        advice=[redact(text) for text in advice],
        notes=[redact(text) for text in notes],
        ignored_env=ignored,
    )


def _secret_remover() -> Callable[[str], str]:
    """The redactor of the report's texts, built on the first text (a status of mode off with
    defaults has none, and the patterns cost a few milliseconds to compile)."""
    redactor: list[Callable[[str], str]] = []

    def redact(text: str) -> str:
        if not redactor:
            from openprogram.recording.redaction import SecretRedactor

            redactor.append(SecretRedactor().redact_text)
        return redactor[0](text)

    return redact


def _without_secrets(state: FileState, redact: Callable[[str], str]) -> FileState:
    if state.problem is None:
        return state
    return replace(state, problem=redact(state.problem))


def _judge_recording(
    mode: Mode, recording: FileState, problems: list[str], advice: list[str], notes: list[str]
) -> None:
    if mode == "replay":
        if not recording.exists:
            problems.append(f"the replay recording {recording.path} does not exist")
            advice.append(f"record it first (`openprogram recordings record`), or {REPAIR_ADVICE}")
        elif not recording.valid:
            problems.append(recording.problem or f"{recording.path} is not a valid recording")
            advice.append(f"re-record it, or {REPAIR_ADVICE}")
        elif recording.truncated_calls:
            notes.append(f"{_cut_short(recording)}: replay fails when it reaches it")
    elif mode == "record":
        if recording.exists and not recording.valid:
            problems.append(recording.problem or f"{recording.path} is not a valid recording")
            advice.append(f"record into a new name, or {REPAIR_ADVICE}")
        elif not _can_create(recording.path):
            problems.append(f"cannot create or write {recording.path}")
            advice.append(f"check the folder's permissions, or {REPAIR_ADVICE}")
        elif recording.truncated_calls:
            notes.append(
                f"{_cut_short(recording)}: new calls are appended after it, and replay of this "
                "recording fails when it reaches it; record into a new name"
            )
        elif recording.calls:
            notes.append(
                f"the recording already holds {plural(recording.calls, 'call')}: "
                "new calls are appended"
            )


def _cut_short(recording: FileState) -> str:
    """``call 3 was cut short; calls 4..7 follow it`` (a crash, then another session
    appended), or ``call 1 was cut short`` when it is the last."""
    first, *others = recording.truncated_calls
    text = f"call {first} was cut short"
    after, last = first + 1, recording.calls - 1
    if after == last:
        text += f"; call {after} follows it"
    elif after < last:
        text += f"; calls {after}..{last} follow it"
    if others:
        text += f" (also cut short: {', '.join(str(index) for index in others)})"
    return text


def not_recorded_note(connections: list[dict[str, Any]]) -> str:
    """What ``status`` and ``show`` say of the connections a recording did not capture."""
    listed = ", ".join(map(connection_text, connections))
    return (
        f"{plural(len(connections), 'connection')} of the recorded session not recorded: "
        f"{listed} — a replay refuses them unless record_replay.allowed_hosts lists them"
    )


def check_recording(path: Path, *, mode: Mode, argument: str) -> FileState:
    """Check the recording ``argument`` (a NAME or a PATH) names, at ``path``, as the next
    start in ``mode`` will: for recording, :func:`check_record_target`; else read strictly,
    as replay reads it, and a drift snapshot refused as replay refuses it. Never raises."""
    link = _link_in_the_store(path, argument)
    if mode == "record":
        try:
            parsed = check_record_target(path, argument)
        except OpenProgramError as error:
            exists = os.path.lexists(path)
            return FileState(path, exists=exists, valid=False, problem=str(error), link=link)
        if parsed is None:  # nothing yet, or an empty file: the writer starts it anew
            return FileState(path, exists=path.exists(), valid=path.exists(), link=link)
        return _valid(parsed, link)
    if not path.exists():
        return FileState(
            path, exists=False, valid=False, problem=f"{path} does not exist", link=link
        )
    from openprogram.provider_boundary.codec import read_recording  # only once a file is set
    from openprogram.recording.format import refuse_a_snapshot

    try:
        parsed = read_recording(path)  # replay builds every event: check them all
        refuse_a_snapshot(parsed)  # a drift snapshot is refused as replay refuses it
    except OpenProgramError as error:
        return FileState(path, exists=True, valid=False, problem=str(error), link=link)
    return _valid(parsed, link)


def _valid(parsed: Recording, link: str | None) -> FileState:
    return FileState(
        parsed.path,
        exists=True,
        valid=True,
        calls=len(parsed.calls),
        truncated_calls=parsed.truncated_calls,
        format_version=parsed.format_version,
        not_recorded=parsed.not_recorded,
        sessions=1 + len(parsed.appended_sessions),
        link=link,
    )


def _link_in_the_store(path: Path, argument: str) -> str | None:
    """What the store's ``path`` links to, when ``argument`` is a name and it is a link."""
    if names.is_path_argument(argument):
        return None
    try:
        return os.readlink(path)
    except OSError:
        return None  # not a link (or not there)


RECORD_ELSEWHERE = "calls appended to it could never be read: record into a new name"
"""The advice of a refusal to record into a recording replay would refuse."""


def check_record_target(path: Path, argument: str) -> Recording | None:
    """Refuse to record into ``path`` — which ``argument``, a NAME or a PATH, named — what
    nothing records into, before anything is written; the recording it holds (None: no
    file yet, or an empty one, which the writer makes a new recording).

    * a name: its file in the store, or a folder on the way, is a symbolic link, dangling
      or not (:func:`~openprogram.store.names.refuse_links_below`): openprogram writes into
      its store only;
    * whatever names it: a recording replay would refuse (a line that is not JSON, an
      event row out of order, a newer format version) — calls appended to it could never
      be read; or one of an older format version, which replay reads but no writer appends
      to.

    Raises ``RecordingFileError`` naming the file (and the line), saying what to do."""
    if not names.is_path_argument(argument):
        names.refuse_links_below(path.parent, path)
    return read_appendable(path)


def read_appendable(path: Path) -> Recording | None:
    """The recording at ``path`` read strictly, as replay reads it, to be appended to (None:
    no file yet, or an empty one); ``RecordingFileError`` naming the line, as replay does,
    for one replay would refuse."""
    try:
        info = os.stat(path)
    except OSError:
        return None  # not there yet: the writer creates it (or says why it cannot)
    regular = stat.S_ISREG(info.st_mode)
    if regular and info.st_size == 0:
        return None
    from openprogram.provider_boundary.codec import read_for_replay
    from openprogram.recording.format import version_refusal
    from openprogram.recording.open_recording import START_ANEW

    try:
        recording = read_for_replay(path)  # a FIFO or a device is refused without being read
    except RecordingFileError as error:
        if not regular:
            raise
        raise RecordingFileError(
            error.path,
            error.problem,
            line=error.line,
            call_index=error.call_index,
            advice=RECORD_ELSEWHERE,
        ) from None
    refusal = version_refusal(recording.header.get("format_version"))
    if refusal is not None:  # readable, but the writer would refuse to append to it
        raise RecordingFileError(str(path), refusal, line=1, advice=START_ANEW)
    return recording


def _can_create(path: Path) -> bool:
    if path.exists():
        return os.access(path, os.W_OK) and path.is_file()
    folder = path.parent
    while not folder.exists():
        folder = folder.parent
    return folder.is_dir() and os.access(folder, os.W_OK | os.X_OK)


def _changed_at(path: Path) -> str | None:
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    return datetime.fromtimestamp(mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class ModeChange:
    mode: Mode
    config: ConfigEdit
    recording: Path | None = None
    name: str | None = None
    calls: int = 0
    env_forced_mode: str | None = None
    """Another mode an environment variable still forces, if any."""
    env_overrides: dict[str, str] | None = None
    """The ``OPENPROGRAM_RECORD_REPLAY…`` variables that override what was just written."""
    sources: RecordingSources | None = None
    """record: the deterministic sources the recording draws the clock and randomness from."""


def start_recording(
    name: str | None = None, *, sources: RecordingSources | None = None
) -> ModeChange:
    """Create recording ``name`` (default ``rec-YYYYMMDD-HHMMSS``) and set mode=record, with
    the deterministic ``sources`` its recording draws ``now()`` and ``random()`` from (None:
    the real ones; the sources an earlier recording had are removed)."""
    from openprogram.config.editing import set_record_replay
    from openprogram.store.store import create_recording

    name = name if name is not None else names.default_name()
    path = create_recording(recordings_dir(), name)
    try:
        edit = set_record_replay(mode="record", file=name, sources=sources)
    except BaseException:
        path.unlink(missing_ok=True)  # roll back: no recording without the mode that uses it
        raise
    return ModeChange("record", edit, path, name, sources=sources, **_overrides_of("record"))


def _sources_note(mode: Mode, settings: RecordReplaySettings) -> str | None:
    """What the configured deterministic sources do in ``mode`` (None: there are none)."""
    sources = settings.sources()
    if sources is None:
        return None
    zone = "; processes run in UTC" if sources.clock is not None else ""
    if mode == "off":
        return (
            f"record_replay.file keeps its sources ({sources}): `openprogram recordings "
            f"replay {settings.file}` uses them again, a `record` of another name clears them"
        )
    if mode == "record":
        return f"openprogram.now() and random() draw from {sources} while recording{zone}"
    return (
        f"the recording was made with {sources}: the times and draws replayed are the "
        f"recorded ones{zone}, as when it was recorded"
    )


def _sources_kept(setting: str) -> bool:
    """Whether the configured sources stay when ``setting`` becomes the recording to replay:
    they do for the recording they were made for (``record_replay.file`` already names it),
    so that its replay runs in the zone it was recorded in; another one's are removed."""
    loaded = load_config()
    return loaded.settings is not None and loaded.settings.record_replay.file == setting


def start_replay(argument: str) -> ModeChange:
    """Check the recording ``argument`` (a name or a path) and set mode=replay. The
    deterministic sources of the configured recording stay when it is that recording, and
    are removed otherwise (:attr:`ConfigEdit.sources_removed` says which)."""
    from openprogram.config.editing import KEEP, set_record_replay
    from openprogram.provider_boundary.codec import read_recording
    from openprogram.recording.format import refuse_a_snapshot

    ref = names.resolve_recording(argument, recordings_dir())
    recording = read_recording(ref.path)  # refuses a missing, corrupt or other-version file
    refuse_a_snapshot(recording)
    setting = ref.name if ref.name is not None else str(ref.path)
    edit = set_record_replay(
        mode="replay", file=setting, sources=KEEP if _sources_kept(setting) else None
    )
    return ModeChange(
        "replay", edit, ref.path, ref.name, calls=len(recording.calls), **_overrides_of("replay")
    )


def turn_off() -> ModeChange:
    """Set mode=off, whatever state the configuration is in (a broken one is repaired)."""
    from openprogram.config.editing import set_record_replay

    edit = set_record_replay(mode="off")
    return ModeChange("off", edit, **_overrides_of("off"))


def _overrides_of(mode: Mode) -> dict[str, Any]:
    """Which environment variables still override the record/replay settings just written
    (values that may hold a secret hidden, as ``status`` shows them). Reading the
    configuration again for that, it writes the start-up marker of what it decides (a
    starting process's hook then tells ``off`` at once)."""

    location = paths.config_location()
    try:
        before = file_state(location.path)
    except OSError:
        before = None
    loaded = load_config()
    if loaded.settings is not None:
        try:
            after = file_state(location.path)
        except OSError:
            after = None
        if same_state(before, after):
            decided = loaded.settings.record_replay.mode
            write_startup_marker(location.path, decided, after, os.environ)
    forced = loaded.mode_forced_by_env
    redact = _secret_remover()
    variables = {
        name: HIDDEN if is_secret_variable(name, value) else redact(value)
        for name, value in loaded.env_overrides.items()
        if name.upper().startswith(RECORD_REPLAY_VARIABLE)
    }
    if mode == "off" and (forced is None or forced == "off"):
        variables = {}  # with the mode off, a forced file does not matter
    return {
        "env_forced_mode": forced if forced is not None and forced != mode else None,
        "env_overrides": variables,
    }
