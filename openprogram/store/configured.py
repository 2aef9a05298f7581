"""The recording the configuration names, worked out in one place.

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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import OpenProgramError

if TYPE_CHECKING:
    from openprogram.config.settings import LoadedConfig

__all__ = [
    "ActiveRecordingUnknownError",
    "active_recording",
    "configured_recording_path",
    "file_not_set_problem",
    "protected_recordings",
]


class ActiveRecordingUnknownError(OpenProgramError):
    """The configuration cannot be read, so which recording is active is unknown."""

    def __init__(self, config_path: Path, cause: str) -> None:
        self.config_path = config_path
        self.cause = cause
        super().__init__(
            f"the active recording is unknown: the configuration cannot be read ({cause}); "
            "fix the configuration or run `openprogram recordings off` first; nothing was deleted"
        )


def configured_recording_path(file: str, environ: Mapping[str, str] | None = None) -> Path:
    """The recording ``record_replay.file = file`` names: ``<store>/<file>.jsonl`` for a name,
    the absolute path for a path. Raises ``RecordingNameError`` for an invalid name."""
    from openprogram.config.paths import recordings_dir
    from openprogram.store.names import resolve_recording

    return resolve_recording(file, recordings_dir(environ)).path


def file_not_set_problem(mode: str) -> str:
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
