"""``OPENPROGRAM_…`` environment variables: which of them set a setting, and reading them
from any mapping (not only ``os.environ``) through pydantic-settings' own parsing.

``OPENPROGRAM_RECORD_REPLAY__MODE=replay`` sets ``record_replay.mode`` (``__`` nests, names
are case-insensitive, list and table values are JSON). ``OPENPROGRAM_HOME``,
``OPENPROGRAM_CONFIG``, ``OPENPROGRAM_DEBUG`` and the ``OPENPROGRAM_SERVE_…`` variables of the
recording proxy's integrations (``OPENPROGRAM_SERVE_URL``: where ``exec`` tells a command
its proxy is) are not settings."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from pydantic_settings import EnvSettingsSource

if TYPE_CHECKING:
    from pydantic_settings import BaseSettings

ENV_PREFIX = "OPENPROGRAM_"
NESTING = "__"
NOT_SETTINGS = frozenset(
    {"OPENPROGRAM_HOME", "OPENPROGRAM_CONFIG", "OPENPROGRAM_DEBUG", "OPENPROGRAM_SERVE_URL"}
)
SERVE_PREFIX = "OPENPROGRAM_SERVE_"
"""Variables of the recording proxy's integrations (``OPENPROGRAM_SERVE_URL``, and the test
runners' setup files: ``OPENPROGRAM_SERVE_MODE``…): never settings."""
MODE_VARIABLE = "OPENPROGRAM_RECORD_REPLAY__MODE"
FILE_VARIABLE = "OPENPROGRAM_RECORD_REPLAY__FILE"
RECORD_REPLAY_VARIABLE = "OPENPROGRAM_RECORD_REPLAY"
"""The whole ``[record_replay]`` table as JSON; every variable that overrides a record/replay
setting starts with it."""


def variable_path(name: str) -> tuple[str, ...] | None:
    """``OPENPROGRAM_PROVIDERS__X__TIMEOUT`` → ``("providers", "x", "timeout")``; ``None``
    for a name that is not ``OPENPROGRAM_…`` or is one of the variables that are not settings."""
    upper = name.upper()
    if not upper.startswith(ENV_PREFIX) or upper in NOT_SETTINGS or upper.startswith(SERVE_PREFIX):
        return None
    return tuple(name[len(ENV_PREFIX) :].lower().split(NESTING))


def setting_variables(
    environ: Mapping[str, str], *, fields: Collection[str], nested: Collection[str]
) -> dict[str, str]:
    """The variables that set a setting, sorted by name: the first part names one of
    ``fields``, and only ``nested`` fields take a ``__`` path below them."""
    found = {}
    for name, value in environ.items():
        path = variable_path(name)
        if path is None or path[0] not in fields or (len(path) > 1 and path[0] not in nested):
            continue
        found[name] = value
    return dict(sorted(found.items()))


def ignored_variables(environ: Mapping[str, str], settings: Mapping[str, str]) -> dict[str, str]:
    """``OPENPROGRAM_…`` variables that are neither settings nor the known non-settings —
    usually a misspelling such as ``OPENPROGRAM_RECORD_REPLAY_MODE`` (one underscore)."""
    found = {
        name: value
        for name, value in environ.items()
        if variable_path(name) is not None and name not in settings
    }
    return dict(sorted(found.items()))


SETTING_VARIABLES = (
    MODE_VARIABLE,
    FILE_VARIABLE,
    "OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS",
    RECORD_REPLAY_VARIABLE,
    "OPENPROGRAM_DEFAULT_MODEL",
    "OPENPROGRAM_PROVIDERS",
    *sorted(NOT_SETTINGS),
)
"""The variables openprogram reads, but for the per-api ``OPENPROGRAM_PROVIDERS__<API>__…``."""
PROVIDER_FIELDS = ("BASE_URL", "API_KEY_ENV", "TIMEOUT")
_PROVIDER_VARIABLE = re.compile(
    r"OPENPROGRAM_+PROVIDERS?_+(?P<api>.+?)_+(?P<field>BASE_*URL|API_*KEY_*ENV|TIMEOUT)",
    re.IGNORECASE,
)


def suggest_variable(name: str) -> str | None:
    """The variable an ignored ``OPENPROGRAM_…`` name was most likely meant to be:
    ``OPENPROGRAM_RECORD_REPLAY_MODE`` → ``OPENPROGRAM_RECORD_REPLAY__MODE``; ``None`` when
    nothing is close."""
    upper = name.upper()
    squeezed = upper.replace("_", "")
    for known in SETTING_VARIABLES:  # the underscores are the usual mistake
        if known.replace("_", "") == squeezed:
            return known
    provider = _PROVIDER_VARIABLE.fullmatch(upper)
    if provider is not None:
        field = next(
            known
            for known in PROVIDER_FIELDS
            if known.replace("_", "") == provider["field"].replace("_", "")
        )
        return f"OPENPROGRAM_PROVIDERS__{provider['api'].strip('_')}__{field}"
    # Compared without the prefix every candidate shares, which would make anything look close.
    tails = {known.removeprefix(ENV_PREFIX): known for known in SETTING_VARIABLES}
    close = difflib.get_close_matches(upper.removeprefix(ENV_PREFIX), tails, n=1, cutoff=0.75)
    return tails[close[0]] if close else None


def forced_mode(settings: Mapping[str, str]) -> str | None:
    """The ``record_replay.mode`` the setting variables force, if they force one."""
    by_upper = {name.upper(): value for name, value in settings.items()}
    if MODE_VARIABLE in by_upper:
        return by_upper[MODE_VARIABLE]
    whole = by_upper.get(RECORD_REPLAY_VARIABLE)
    if whole is None:
        return None
    try:
        table = json.loads(whole)
    except (ValueError, RecursionError):
        return None
    mode = table.get("mode") if isinstance(table, dict) else None
    return None if mode is None else str(mode)


class MappingEnvSource(EnvSettingsSource):
    """pydantic-settings' environment source, reading ``environ`` instead of ``os.environ``."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    def _load_env_vars(self) -> Mapping[str, str | None]:
        # The hook pydantic-settings' own dotenv source overrides; names are case-insensitive.
        return {name.lower(): value for name, value in self._environ.items()}


def is_secret_variable(name: str, value: str) -> bool:
    """Whether a message may not repeat ``value``: it names a key variable, or is a JSON
    table or list that might hold anything."""
    return "API_KEY_ENV" in name.upper() or value.lstrip().startswith(("{", "["))
