"""The typed, read-only view of the configuration: the TOML file, with ``OPENPROGRAM_…``
environment variables over it (pydantic-settings).

:func:`load_config` never raises for a missing, unreadable, unparseable or invalid file, nor
for a bad environment variable: the problem comes back as a :class:`ConfigError` in
:attr:`LoadedConfig.error`, naming the file, line and key, or the variable. The file is read
with ``tomllib``; editing it is :mod:`openprogram.config.editing`'s job.

:func:`active_recording` is the recording the configuration records into or replays from.
When the configuration cannot be read, ``delete`` and ``prune`` still protect what it names:
:func:`protected_recordings` reads ``record_replay.file`` from the raw TOML (and the
``OPENPROGRAM_RECORD_REPLAY…`` variables), and raises ``ActiveRecordingUnknownError`` when
even that cannot be read, so nothing is deleted blindly."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from openprogram.config import paths
from openprogram.config.environment import (
    FILE_VARIABLE,
    RECORD_REPLAY_VARIABLE,
    forced_mode,
    ignored_variables,
    is_secret_variable,
    setting_variables,
    variable_path,
)
from openprogram.config.models import FIELDS, NESTED_FIELDS, Settings, build_settings, known_keys
from openprogram.config.paths import ConfigLocation, config_location
from openprogram.config.problems import (
    dotted_key,
    encoding_problem,
    find_key_line,
    syntax_problem,
    value_problem,
)
from openprogram.errors import ActiveRecordingUnknownError, ConfigError, OpenProgramError
from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    TOO_DEEP,
    exceeds_nesting_limit,
    json_text_may_exceed_nesting_limit,
)

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "LoadedConfig",
    "active_recording",
    "load_config",
    "protected_recordings",
    "read_settings",
]


@dataclass(frozen=True)
class LoadedConfig:
    """The configuration as one process sees it; ``settings`` is ``None`` iff ``error`` is set."""

    location: ConfigLocation
    exists: bool
    settings: Settings | None
    error: ConfigError | None
    env_overrides: dict[str, str]
    """every ``OPENPROGRAM_…`` variable that sets a setting, name → value"""
    ignored_env: dict[str, str] = field(default_factory=dict)
    """``OPENPROGRAM_…`` variables that set nothing (likely misspelt)"""

    @property
    def mode_forced_by_env(self) -> str | None:
        """The ``record_replay.mode`` an environment variable forces, if one does."""
        return forced_mode(self.env_overrides)


def load_config(environ: Mapping[str, str] | None = None) -> LoadedConfig:
    """Read the configuration file and the environment (``os.environ`` by default).

    Never raises for a problem with the file or a variable: see :attr:`LoadedConfig.error`.
    A missing file means the defaults."""
    env = os.environ if environ is None else environ
    location = config_location(env)
    overrides = setting_variables(env, fields=FIELDS, nested=NESTED_FIELDS)
    ignored = ignored_variables(env, overrides)
    try:
        data = read_config_bytes(location.path)
    except ConfigError as problem:
        exists = os.path.lexists(location.path)
        return LoadedConfig(location, exists, None, problem, overrides, ignored)
    try:
        text, values = parse_config(data or b"", path=location.path)
        check_file_values(values, path=location.path, text=text)
        settings = _with_environment(values, overrides)
    except ConfigError as problem:
        return LoadedConfig(location, data is not None, None, problem, overrides, ignored)
    return LoadedConfig(location, data is not None, settings, None, overrides, ignored)


def read_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings, or the :class:`ConfigError` that keeps them from being read."""
    loaded = load_config(environ)
    if loaded.error is not None:
        raise loaded.error
    assert loaded.settings is not None
    return loaded.settings


def read_config_bytes(path: Path) -> bytes | None:
    """The file's bytes; ``None`` when there is no file. Raises :class:`ConfigError`.

    Only a regular file is read: a FIFO or a device (``/dev/zero``) at the config path is
    refused without blocking on it or reading from it."""
    try:
        # O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(
            "is a folder, not a file", path=path, advice="remove it or set OPENPROGRAM_CONFIG"
        ) from None
    except OSError as failure:
        raise _unreadable(path, failure) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise ConfigError(
                "is a folder, not a file", path=path, advice="remove it or set OPENPROGRAM_CONFIG"
            )
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(
                "is not a regular file (a FIFO, a device or a socket)",
                path=path,
                advice="remove it or set OPENPROGRAM_CONFIG to a file",
            )
        with open(fd, "rb", buffering=0, closefd=False) as stream:
            return stream.readall()
    except OSError as failure:
        raise _unreadable(path, failure) from None
    finally:
        os.close(fd)


def _unreadable(path: Path, failure: OSError) -> ConfigError:
    return ConfigError(
        f"cannot be read ({failure.strerror or failure})",
        path=path,
        advice="fix its permissions or set OPENPROGRAM_CONFIG to another file",
    )


def parse_config(data: bytes, *, path: Path) -> tuple[str, dict[str, Any]]:
    """The text and values of a TOML file. Raises :class:`ConfigError` with the line.

    Values nested deeper than :data:`~openprogram.json_nesting.MAX_NESTING_DEPTH` (counting the file
    itself as one level) are refused, naming the key or the line, before anything walks them."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as failure:
        problem, byte_line = encoding_problem(failure, data)
        raise ConfigError(problem, path=path, line=byte_line) from None
    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as failure:
        problem, line, column = syntax_problem(failure, text)
        raise ConfigError(
            f"not valid TOML: {problem}", path=path, line=line, column=column
        ) from None
    except RecursionError:  # tomllib recurses once per level: far too deep to be a setting
        raise ConfigError(TOO_DEEP, path=path, line=deep_line(text)) from None
    if json_text_may_exceed_nesting_limit(text) and exceeds_nesting_limit(values):
        raise _too_deep(values, path=path, text=text)
    return text, values


def _too_deep(values: dict[str, Any], *, path: Path, text: str) -> ConfigError:
    """The error for a document nested too deeply, naming its deepest top-level key."""
    location: list[str] = []
    current: Any = values
    while isinstance(current, dict):  # follow the tables down to the value that is too deep
        limit = MAX_NESTING_DEPTH - len(location) - 1
        deep = [key for key, item in current.items() if exceeds_nesting_limit(item, limit)]
        if not deep:
            break
        location.append(deep[0])
        current = current[deep[0]]
    return ConfigError(
        TOO_DEEP,
        path=path,
        line=find_key_line(text, location) if location else deep_line(text),
        key=dotted_key(location) if location else None,
    )


def deep_line(text: str) -> int | None:
    """The first line where brackets outside strings and comments open more than
    :data:`~openprogram.json_nesting.MAX_NESTING_DEPTH` levels (a scan, for messages)."""
    depth = 0
    for number, line in enumerate(text.splitlines(), start=1):
        quote: str | None = None
        escaped = False
        for char in line:
            if quote is not None:
                if escaped:
                    escaped = False
                elif char == "\\" and quote == '"':
                    escaped = True
                elif char == quote:
                    quote = None
            elif char in "\"'":
                quote = char
            elif char == "#":
                break
            elif char in "[{":
                depth += 1
                if depth > MAX_NESTING_DEPTH:
                    return number
            elif char in "]}":
                depth = max(0, depth - 1)
    return None


def file_value_errors(values: Mapping[str, Any]) -> list[ErrorDetails]:
    """What is wrong with the file's values on their own (no environment); ``[]`` if nothing."""
    try:
        build_settings(values, {})
    except ValidationError as failure:
        return failure.errors()
    return []


def check_file_values(
    values: Mapping[str, Any], *, path: Path, text: str, advice: str | None = None
) -> None:
    """Raise :class:`ConfigError` for the first invalid value in the file, naming its line."""
    errors = file_value_errors(values)
    if errors:
        raise file_value_error(errors[0], path=path, text=text, advice=advice)


def file_value_error(
    error: ErrorDetails, *, path: Path, text: str, advice: str | None = None
) -> ConfigError:
    """One pydantic error about the file's values, as a :class:`ConfigError`."""
    location = error["loc"]
    return ConfigError(
        value_problem(error, known_keys(location[:-1])),
        path=path,
        line=find_key_line(text, location),
        key=dotted_key(location),
        advice=advice,
    )


def _with_environment(values: Mapping[str, Any], overrides: Mapping[str, str]) -> Settings:
    for name, value in overrides.items():
        if json_text_may_exceed_nesting_limit(value) and _json_too_deep(name, value):
            raise _variable_error(name, value, TOO_DEEP, key=None)
    try:
        return build_settings(values, overrides)
    except (ValidationError, SettingsError):
        pass
    # Find the variable at fault by trying each alone (there are only ever a few).
    for name, value in overrides.items():
        try:
            build_settings(values, {name: value})
        except ValidationError as failure:
            error = failure.errors()[0]
            location = error["loc"]
            shown = not is_secret_variable(name, value)  # a JSON value might hold anything
            problem = value_problem(error, known_keys(location[:-1]), show_input=shown)
            raise _variable_error(name, value, problem, key=dotted_key(location)) from None
        except SettingsError:
            problem = 'must be JSON here (a list like ["a"] or a table like {"k": 1})'
            raise _variable_error(name, value, problem, key=None) from None
    raise ConfigError(
        "these variables are not valid settings together", env_var=", ".join(overrides)
    )


def _json_too_deep(name: str, value: str) -> bool:
    """Whether a variable's JSON value, where its name puts it in the configuration, nests
    deeper than the limit (or too deep to parse at all)."""
    try:
        parsed = json.loads(value)
    except RecursionError:
        return True
    except ValueError:
        return False  # not JSON: pydantic-settings reports it
    levels_above = len(variable_path(name) or ())  # the file itself and the tables around it
    return exceeds_nesting_limit(parsed, MAX_NESTING_DEPTH - levels_above)


def _variable_error(name: str, value: str, problem: str, *, key: str | None) -> ConfigError:
    shown = None if is_secret_variable(name, value) else value
    return ConfigError(problem, key=key, env_var=name, env_value=shown)


def active_recording(loaded: LoadedConfig | None = None) -> Path | None:
    """The recording the configuration records into or replays from; ``None`` when the mode
    is off, no file is set, or the configuration cannot be read."""
    if loaded is None:
        loaded = load_config()
    if loaded.settings is None:
        return None
    settings = loaded.settings.record_replay
    if settings.mode == "off" or not settings.file:
        return None
    try:
        return paths.configured_recording_path(settings.file)
    except OpenProgramError:
        return None


def protected_recordings(environ: Mapping[str, str] | None = None) -> list[Path]:
    """The recordings ``delete`` and ``prune`` must leave alone.

    With a readable configuration, the active recording (if any). With a broken one, every
    recording ``record_replay.file`` names in the raw file or in the environment, whatever
    the mode; raises :class:`ActiveRecordingUnknownError` when that cannot be read either."""
    env = os.environ if environ is None else environ
    loaded = load_config(env)
    if loaded.error is None:
        active = active_recording(loaded)
        return [] if active is None else [active]
    files = _raw_file_settings(loaded, env)
    protected = []
    for file in files:
        try:
            protected.append(paths.configured_recording_path(file, env))
        except OpenProgramError:
            continue  # an invalid name names no recording
    return protected


def _raw_file_settings(loaded: LoadedConfig, environ: Mapping[str, str]) -> list[str]:
    """Every ``record_replay.file`` the raw file and the variables hold."""
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
