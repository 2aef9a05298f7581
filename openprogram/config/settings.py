"""The typed, read-only view of the configuration: the TOML file, with ``OPENPROGRAM_…``
environment variables over it (pydantic-settings).

:func:`load_config` never raises for a missing, unreadable, unparseable or invalid file, nor
for a bad environment variable: the problem comes back as a :class:`ConfigError` in
:attr:`LoadedConfig.error`, naming the file, line and key, or the variable. The file is read
with ``tomllib``; editing it is :mod:`openprogram.config.editing`'s job.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from pydantic_settings import SettingsError

from openprogram.config.environment import (
    forced_mode,
    ignored_variables,
    is_secret_variable,
    setting_variables,
)
from openprogram.config.models import (
    FIELDS,
    NESTED_FIELDS,
    ProviderSettings,
    RecordReplaySettings,
    Settings,
    build_settings,
    known_keys,
    split_model_reference,
)
from openprogram.config.paths import ConfigLocation, config_location
from openprogram.config.problems import (
    ConfigError,
    dotted_key,
    encoding_problem,
    syntax_problem,
    value_problem,
)

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "ConfigError",
    "LoadedConfig",
    "ProviderSettings",
    "RecordReplaySettings",
    "Settings",
    "load_config",
    "read_settings",
    "split_model_reference",
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
    A missing file means the defaults.
    """
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
    """The file's bytes; ``None`` when there is no file. Raises :class:`ConfigError`."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        problem, advice = "is a folder, not a file", "remove it or set OPENPROGRAM_CONFIG"
    except OSError as failure:
        problem = f"cannot be read ({failure.strerror or failure})"
        advice = "fix its permissions or set OPENPROGRAM_CONFIG to another file"
    raise ConfigError(problem, path=path, advice=advice)


def parse_config(data: bytes, *, path: Path) -> tuple[str, dict[str, Any]]:
    """The text and values of a TOML file. Raises :class:`ConfigError` with the line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as failure:
        problem, byte_line = encoding_problem(failure, data)
        raise ConfigError(problem, path=path, line=byte_line) from None
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as failure:
        problem, line, column = syntax_problem(failure, text)
        raise ConfigError(
            f"not valid TOML: {problem}", path=path, line=line, column=column
        ) from None


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
    from openprogram.config.key_lines import find_key_line  # only needed when reporting

    location = error["loc"]
    return ConfigError(
        value_problem(error, known_keys(location[:-1])),
        path=path,
        line=find_key_line(text, location),
        key=dotted_key(location),
        advice=advice,
    )


def _with_environment(values: Mapping[str, Any], overrides: Mapping[str, str]) -> Settings:
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
            problem = value_problem(error, known_keys(location[:-1]))
            raise _variable_error(name, value, problem, key=dotted_key(location)) from None
        except SettingsError:
            problem = 'must be JSON here (a list like ["a"] or a table like {"k": 1})'
            raise _variable_error(name, value, problem, key=None) from None
    raise ConfigError(
        "these variables are not valid settings together", env_var=", ".join(overrides)
    )


def _variable_error(name: str, value: str, problem: str, *, key: str | None) -> ConfigError:
    shown = None if is_secret_variable(name, value) else value
    return ConfigError(problem, key=key, env_var=name, env_value=shown)
