"""Where the configuration file and the recordings store live.

``OPENPROGRAM_CONFIG`` names the configuration file; ``OPENPROGRAM_HOME`` puts the file and
the recordings store under one folder; otherwise the platform's user folders are used
(``platformdirs``). An empty variable counts as unset.

:func:`configured_recording_path` is the one place the recording ``record_replay.file`` names is
worked out (a name in the store, ``<store>/<name>.jsonl``, or a path): the provider runtime (at its
next start), ``status``, ``list`` (which marks the active recording), ``delete`` and ``prune``
(which never touch it) all ask it, so they always agree on which file it is."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import platformdirs

from openprogram.store.names import resolve_recording

CONFIG_FILE_NAME = "config.toml"
RECORDINGS_FOLDER_NAME = "recordings"
APP_NAME = "openprogram"

ConfigSource = Literal["OPENPROGRAM_CONFIG", "OPENPROGRAM_HOME", "default"]


@dataclass(frozen=True)
class ConfigLocation:
    """The configuration file in force, and what chose it."""

    path: Path
    source: ConfigSource


def config_location(environ: Mapping[str, str] | None = None) -> ConfigLocation:
    """The configuration file: ``OPENPROGRAM_CONFIG``, else ``OPENPROGRAM_HOME/config.toml``,
    else ``config.toml`` in the user config folder. ``environ`` defaults to ``os.environ``."""
    env = os.environ if environ is None else environ
    named = env.get("OPENPROGRAM_CONFIG")
    if named:
        return ConfigLocation(_expand(named, env), "OPENPROGRAM_CONFIG")
    home = env.get("OPENPROGRAM_HOME")
    if home:
        return ConfigLocation(_expand(home, env) / CONFIG_FILE_NAME, "OPENPROGRAM_HOME")

    return ConfigLocation(
        Path(platformdirs.user_config_dir(APP_NAME)) / CONFIG_FILE_NAME, "default"
    )


def recordings_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The recordings store: ``OPENPROGRAM_HOME/recordings``, else ``recordings`` in the user
    data folder. ``environ`` defaults to ``os.environ``."""
    env = os.environ if environ is None else environ
    home = env.get("OPENPROGRAM_HOME")
    if home:
        return _expand(home, env) / RECORDINGS_FOLDER_NAME

    return Path(platformdirs.user_data_dir(APP_NAME)) / RECORDINGS_FOLDER_NAME


def _expand(value: str, env: Mapping[str, str]) -> Path:
    """``~`` is the ``HOME`` of ``env`` when it has one; relative paths become absolute."""
    home = env.get("HOME")
    if home and (value == "~" or value.startswith("~/")):
        path = Path(home) / value[2:]
    else:
        path = Path(value).expanduser()
    return path.absolute()


def configured_recording_path(file: str, environ: Mapping[str, str] | None = None) -> Path:
    """The recording ``record_replay.file = file`` names: ``<store>/<file>.jsonl`` for a name,
    the absolute path for a path. Raises ``RecordingNameError`` for an invalid name."""
    return resolve_recording(file, recordings_dir(environ)).path
