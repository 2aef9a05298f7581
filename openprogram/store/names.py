"""Recording names, and where a ``NAME|PATH`` argument points.

A name is letters, digits, ``.``, ``_`` and ``-``, not starting with ``.`` or ``-``, 1 to 128
characters; the recording it names is ``<store>/<name>.jsonl``. An argument holding a path
separator or ending in ``.jsonl`` is a path instead.

The store folder may be a symbolic link (to another disk, a shared folder): it is resolved
once (:func:`resolve_store`), and listing, deleting and pruning act inside the folder it
resolved to, never following a link found inside it.

The recording the configuration names, worked out in one place.

``record_replay.file`` holds a name in the store (``<store>/<name>.jsonl``) or a path.
:func:`configured_recording_path` turns it into the file; the provider runtime (at its next
start), ``status``, ``list`` (which marks the active recording), ``delete`` and ``prune``
(which never touch it) all ask it, so they always agree on which file it is.

When the configuration cannot be read, ``delete`` and ``prune`` still protect what it names:
:func:`protected_recordings` reads ``record_replay.file`` from the raw TOML (and the
``OPENPROGRAM_RECORD_REPLAY…`` variables), and raises :class:`ActiveRecordingUnknownError`
when even that cannot be read, so nothing is deleted blindly.

Cheap to import: the configuration is read only when a function is called.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import (
    ActiveRecordingUnknownError,
    OpenProgramError,
    RecordingFileError,
    RecordingNameError,
)

if TYPE_CHECKING:
    from openprogram.config.models import Mode
    from openprogram.config.settings import LoadedConfig

__all__ = [
    "MAX_NAME_LENGTH",
    "MAX_TEST_PART_LENGTH",
    "RECORDING_SUFFIX",
    "RecordingRef",
    "active_recording",
    "configured_recording_path",
    "default_name",
    "file_not_set_problem",
    "file_setting_problem",
    "is_path_argument",
    "is_same_file",
    "protected_recordings",
    "recording_files",
    "resolve_recording",
    "resolve_store",
    "suggested_name",
    "validate_name",
]


MAX_NAME_LENGTH = 128
"""Longest recording name the store accepts (``recordings record NAME``, a
``record_replay.file`` name)."""
MAX_TEST_PART_LENGTH = 120
"""Longest ``<module>`` or ``<test>`` part of a test's recording path that the pytest plugin
keeps whole; a longer part is cut and ends in ``-`` and an 8-hex hash. Shorter than
:data:`MAX_NAME_LENGTH` on purpose, so that each part is a name the store accepts too, and it
stays 120: raising it to 128 would move the committed recording of every test whose name is
121 to 128 characters long."""


RECORDING_SUFFIX = ".jsonl"


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


_ALLOWED = "use letters, digits, '.', '_' and '-', not starting with '.' or '-'"


def validate_name(name: str) -> str:
    """Return ``name`` if it is a valid recording name; raise :class:`RecordingNameError`."""
    if not name:
        raise RecordingNameError(name, f"the recording name is empty: {_ALLOWED}")
    if len(name) > MAX_NAME_LENGTH:
        raise RecordingNameError(
            name,
            f"recording name {name[:20]!r}… is {len(name)} characters long: "
            f"use at most {MAX_NAME_LENGTH}",
        )
    if _NAME.fullmatch(name) is None:
        raise RecordingNameError(name, f"invalid recording name {name!r}: {_ALLOWED}")
    return name


def default_name(now: datetime | None = None) -> str:
    """``rec-YYYYMMDD-HHMMSS`` in UTC (a naive ``now`` is taken as UTC)."""
    moment = datetime.now(UTC) if now is None else now
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("rec-%Y%m%d-%H%M%S")


def is_path_argument(arg: str) -> bool:
    """A path holds a path separator or ends in ``.jsonl``; anything else is a name."""
    separators = {"/", os.sep} | ({os.altsep} if os.altsep else set())
    return any(separator in arg for separator in separators) or arg.endswith(RECORDING_SUFFIX)


def suggested_name(arg: str) -> str | None:
    """The name a path-like argument most likely meant: ``demo.jsonl`` → ``demo``; ``None``
    when that is not a valid name."""
    candidate = arg.removesuffix(RECORDING_SUFFIX)
    try:
        return validate_name(candidate)
    except RecordingNameError:
        return None


def file_setting_problem(value: str) -> str | None:
    """Why ``record_replay.file = value`` can name no recording (an invalid name), or
    ``None`` when it names one (a valid name, or a path)."""
    if is_path_argument(value):
        return None
    try:
        validate_name(value)
    except RecordingNameError as error:
        return error.problem
    return None


def resolve_store(store: Path) -> Path:
    """The store folder as an absolute path with every symbolic link resolved.

    A symlinked store is a legitimate setup; resolving it once and acting inside the result
    means a link changed meanwhile cannot send a deletion elsewhere.
    """
    return Path(os.path.realpath(store))


@dataclass(frozen=True)
class RecordingRef:
    """Where a ``NAME|PATH`` argument points; ``name`` is set when it is in the store."""

    path: Path
    name: str | None


def resolve_recording(arg: str, store: Path) -> RecordingRef:
    """Turn a ``NAME|PATH`` argument into an absolute path (a name is validated first)."""
    store = Path(os.path.abspath(store))
    if not is_path_argument(arg):
        return RecordingRef(store / f"{validate_name(arg)}{RECORDING_SUFFIX}", arg)
    path = Path(os.path.abspath(Path(arg).expanduser()))
    in_store = path.suffix == RECORDING_SUFFIX and path.parent.resolve() == store.resolve()
    return RecordingRef(path, path.stem if in_store else None)


def is_same_file(path: Path, other: Path | None) -> bool:
    """Whether two spellings of a path (relative, ``~``, through symlinks) name one file."""
    if other is None:
        return False
    return Path(path).expanduser().resolve() == Path(other).expanduser().resolve()


def recording_files(store: Path) -> list[tuple[Path, os.stat_result]]:
    """The recordings in ``store``: regular ``*.jsonl`` files, not symlinks, not hidden.

    Returned with their ``lstat`` and absolute paths inside the resolved store folder
    (:func:`resolve_store`), sorted by name; a missing store holds none.
    """
    store = resolve_store(store)
    found: list[tuple[Path, os.stat_result]] = []
    try:
        entries = list(os.scandir(store))
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError as exc:
        raise RecordingFileError(
            str(store),
            f"cannot list the recordings store ({exc.strerror or exc})",
            advice="check the folder's permissions",
        ) from None
    for entry in entries:
        if entry.name.startswith(".") or not entry.name.endswith(RECORDING_SUFFIX):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            continue  # deleted while we looked
        if stat.S_ISREG(info.st_mode):
            found.append((store / entry.name, info))
    found.sort(key=lambda item: item[0].name)
    return found


def configured_recording_path(file: str, environ: Mapping[str, str] | None = None) -> Path:
    """The recording ``record_replay.file = file`` names: ``<store>/<file>.jsonl`` for a name,
    the absolute path for a path. Raises ``RecordingNameError`` for an invalid name."""
    from openprogram.config.paths import recordings_dir

    return resolve_recording(file, recordings_dir(environ)).path


def file_not_set_problem(mode: Mode) -> str:
    """What is wrong when ``mode`` (record or replay) has no ``record_replay.file`` to use;
    the runtime blocks with it and ``status`` reports it."""
    return f"record_replay.mode is {mode!r} but record_replay.file is not set"


def active_recording(loaded: LoadedConfig | None = None) -> Path | None:
    """The recording the configuration records into or replays from; ``None`` when the mode
    is off, no file is set, or the configuration cannot be read."""
    if loaded is None:
        from openprogram.config.settings import load_config

        loaded = load_config()
    if loaded.settings is None:
        return None
    settings = loaded.settings.record_replay
    if settings.mode == "off" or not settings.file:
        return None
    try:
        return configured_recording_path(settings.file)
    except OpenProgramError:
        return None


def protected_recordings(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The recordings ``delete`` and ``prune`` must leave alone.

    With a readable configuration, the active recording (if any). With a broken one, every
    recording ``record_replay.file`` names in the raw file or in the environment, whatever
    the mode; raises :class:`ActiveRecordingUnknownError` when that cannot be read either.
    """
    import os

    from openprogram.config.settings import load_config

    env = os.environ if environ is None else environ
    loaded = load_config(env)
    if loaded.error is None:
        active = active_recording(loaded)
        return [] if active is None else [active]
    files = _raw_file_settings(loaded, env)
    protected = []
    for file in files:
        try:
            protected.append(configured_recording_path(file, env))
        except OpenProgramError:
            continue  # an invalid name names no recording
    return protected


def _raw_file_settings(loaded: LoadedConfig, environ: Mapping[str, str]) -> list[str]:
    """Every ``record_replay.file`` the raw file and the variables hold."""
    from openprogram.config.environment import FILE_VARIABLE, RECORD_REPLAY_VARIABLE
    from openprogram.config.settings import parse_config, read_config_bytes

    path = loaded.location.path
    files: list[str] = []
    try:
        data = read_config_bytes(path)
        values: dict[str, Any] = parse_config(data, path=path)[1] if data is not None else {}
    except OpenProgramError as error:
        raise ActiveRecordingUnknownError(path, getattr(error, "problem", str(error))) from None
    table = values.get("record_replay")
    if isinstance(table, dict) and isinstance(table.get("file"), str):
        files.append(table["file"])
    for name, value in environ.items():
        upper = name.upper()
        if upper == FILE_VARIABLE:
            files.append(value)
        elif upper == RECORD_REPLAY_VARIABLE:
            try:
                whole = json.loads(value)
            except (ValueError, RecursionError):
                raise ActiveRecordingUnknownError(path, f"{name} is not JSON") from None
            if isinstance(whole, dict) and isinstance(whole.get("file"), str):
                files.append(whole["file"])
    return files
