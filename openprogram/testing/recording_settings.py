"""A test's recording settings, combined from every place they can be set.

Each place gives a *layer*: the keys it sets, checked. The layers combine lowest first, a
later one replacing each key an earlier one set (a list is replaced whole, not merged) —
except ``redact_patterns``, which add up (:data:`ADDITIVE_KEYS`): a marker that adds a
pattern for one test cannot drop the configuration's, so no layer un-redacts a secret:

1. openprogram's configuration — ``record_replay.ignore_fields``,
   ``compare_loopback_ports``, ``match``,
   ``http_passthrough_hosts``, ``http_headers``, ``tools`` and ``redact_patterns`` from the
   config file, the environment
   (``OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS='["temperature"]'``) overriding the file as
   everywhere in openprogram;
2. the ini file: ``openprogram_record_mode``, ``openprogram_ignore_fields``,
   ``openprogram_match``, ``openprogram_http_passthrough_hosts``, ``openprogram_http_headers``,
   ``openprogram_tools``, ``openprogram_redact_patterns``;
3. the command line: ``--openprogram-record-mode``, and ``--openprogram-seed``,
   ``--openprogram-clock-start`` and ``--openprogram-clock-step`` (``seed`` and ``clock``);
4. the ``openprogram_config`` fixture, a dict (override it in a test module or a
   ``conftest.py`` for the tests below it);
5. the test's ``@pytest.mark.openprogram(...)`` marker (and the older
   ``@pytest.mark.openprogram_match("order")``), the closest marker winning.

The keys (:data:`SETTING_CHECKS`, the fields of :class:`RecordingSettings`, which say what each one
means) are the same everywhere a dict or keywords are given; ``name`` is set by the marker only,
``redact`` (a function ``str -> str``) by the fixture and the marker only, and ``children`` and
``allowed_commands`` are also in the configuration (:mod:`openprogram.activation.children`). A new
setting is a field of :class:`RecordingSettings`, a line in :data:`SETTING_CHECKS` and, if the ini
file or the configuration carries it, a line in :data:`INI_SETTINGS` or :data:`CONFIGURED_SETTINGS`.

:func:`settings_of_test` gathers them for one test: :func:`configured_layer` reads the
configuration once per run, when the first test uses the fixture; :func:`ini_layer` reads
the ini file at start-up; :func:`marker_layers` the test's markers. This module imports
nothing heavy: the plugin loads it in every pytest run."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal, get_args

import pytest

if TYPE_CHECKING:
    from openprogram.deterministic_sources import Clock, RecordingSources

__all__ = [
    "ADDITIVE_KEYS",
    "CONFIGURED_SETTINGS",
    "DEFAULT_RECORD_MODE",
    "INI_SETTINGS",
    "PER_TEST_KEYS",
    "RECORD_MODES",
    "SETTING_CHECKS",
    "_TRUE_VALUES",
    "RecordMode",
    "RecordingSettings",
    "SettingsError",
    "check_record_mode",
    "check_setting",
    "checked_layer",
    "combine_layers",
    "configured_layer",
    "env_flag",
    "ini_layer",
    "marker_layers",
    "record_command",
    "settings_of_test",
]

RecordMode = Literal["none", "once", "new_episodes", "all", "rewrite", "live", "drift"]

RECORD_MODES: tuple[RecordMode, ...] = get_args(RecordMode)

DEFAULT_RECORD_MODE: RecordMode = "none"

_TRUE_VALUES = frozenset({"1", "true", "yes"})


def check_record_mode(value: object) -> RecordMode:
    """``value`` if it names a record mode; else ``ValueError`` listing them."""
    for mode in RECORD_MODES:
        if value == mode:
            return mode
    raise ValueError(f"must be one of {', '.join(RECORD_MODES)}, not {value!r}")


def env_flag(environ: Mapping[str, str], name: str) -> bool:
    """Whether the variable ``name`` is set to ``true``, ``1`` or ``yes`` (in any case)."""
    return environ.get(name, "").strip().lower() in _TRUE_VALUES


def record_command(record_mode: RecordMode, test_argument: str) -> str:
    """The command that runs one test in ``record_mode``."""
    return f"pytest --openprogram-record-mode={record_mode} {test_argument}"


Layer = dict[str, Any]
"""The keys one place sets, each value checked."""


class SettingsError(ValueError):
    """A setting with a bad value or an unknown key; the message names where it was set."""


@dataclass(frozen=True, slots=True)
class RecordingSettings:
    """What one test's fixture records or replays with."""

    record_mode: RecordMode = DEFAULT_RECORD_MODE
    name: str | None = None
    """The recording's file name (without ``.jsonl``) in the test module's folder; None:
    the test's own name."""
    ignore_fields: tuple[str, ...] = ()
    compare_loopback_ports: bool = False
    """Whether replay compares the port of a URL whose host is a loopback one."""
    match: str = "content"
    http_passthrough_hosts: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()
    """Hosts (``host`` or ``host:port``) a replay may connect to live, besides the
    passthrough hosts and the run's ``--openprogram-allowed-hosts``."""
    http_headers: tuple[str, ...] = ()
    tools: tuple[tuple[str, str], ...] = ()
    """How replay treats each agent tool: (tool name or ``"*"``, policy) pairs."""
    redact_patterns: tuple[str, ...] = ()
    """The user's redaction patterns, applied after the built-in rules."""
    redact: Callable[[str], str] | None = None
    """The user's redaction function, applied after the patterns."""
    seed: int | None = None
    """While recording: the seed ``openprogram.random()`` and ``seeded_random()`` draw from."""
    clock: Clock | None = None
    """While recording: the clock ``openprogram.now()`` reads; under record and replay, the
    test runs in UTC."""
    children: Literal["isolate", "refuse"] | None = None
    """Under replay, a child process of the test that cannot replay in-process (not Python,
    ``python -S``): isolated in a loopback-only network namespace, or refused before it
    starts (None: the configuration's ``record_replay.children``, by default isolate)."""
    allowed_commands: tuple[str, ...] | None = None
    """Commands (the file name of ``argv[0]``) a child process of the test runs as it is
    (None: the configuration's ``record_replay.allowed_commands``)."""

    @property
    def sources(self) -> RecordingSources | None:
        """The deterministic sources the test records with (None: the real ones)."""
        from openprogram.deterministic_sources import RecordingSources

        return RecordingSources.of(self.seed, self.clock)


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,119}")


def _name(value: object) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(
            f"must be a file name of letters, digits, '.', '_' and '-' (not starting with "
            f"'.' or '-', at most 120 characters), not {value!r}"
        )
    return value


def _strings(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"must be a list of strings, not {value!r}")
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise ValueError(f"must be a list of strings, not {value!r}")
    return tuple(item.strip() for item in items if item.strip())


def _ignore_fields(value: object) -> tuple[str, ...]:
    from openprogram.recording.difference import find_first_difference
    from openprogram.recording.url_comparison import check_http_ignore_fields

    entries = _strings(value)
    find_first_difference({}, {}, ignore_fields=entries)  # raises ValueError naming the entry
    check_http_ignore_fields(entries)
    return entries


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"must be True or False, not {value!r}")
    return value


def _match(value: object) -> str:
    from openprogram.recording.difference import MATCHINGS

    if value not in MATCHINGS:
        raise ValueError(f"must be one of {', '.join(MATCHINGS)}, not {value!r}")
    return str(value)


def _by_configuration_rules(key: str) -> Callable[[object], tuple[str, ...]]:
    """A list checked, and normalized, by the configuration's own rule for ``key`` (one copy
    of the rules for hosts and headers)."""

    def check(value: object) -> tuple[str, ...]:
        from pydantic import ValidationError

        from openprogram.config.models import RecordReplaySettings

        entries = _strings(value)
        try:
            checked = RecordReplaySettings.model_validate({key: list(entries)})
        except ValidationError as error:
            first = error.errors()[0]
            raise ValueError(str(first["msg"]).removeprefix("Value error, ")) from None
        return tuple(getattr(checked, key))

    return check


def _tools(value: object) -> tuple[tuple[str, str], ...]:
    """Policies as a mapping (``{"get_weather": "replay", "*": "check"}``) or as lines
    ``NAME=POLICY`` (the ini file)."""
    from openprogram.recording.tape_replay import check_tool_policies, parse_tool_policies

    if isinstance(value, Mapping):
        return tuple(check_tool_policies(value).items())
    return tuple(parse_tool_policies(_strings(value)).items())


def _redact_patterns(value: object) -> tuple[str, ...]:
    from openprogram.recording.user_redaction import compile_redact_pattern

    entries = _strings(value)
    for entry in entries:
        compile_redact_pattern(entry)  # UserRedactionError (a ValueError) naming it
    return entries


def _seed(value: object) -> int | None:
    from openprogram.deterministic_sources import check_seed

    return None if value is None else check_seed(value)


def _clock(value: object) -> Clock | None:
    from openprogram.deterministic_sources import Clock

    if value is not None and not isinstance(value, Clock):
        raise ValueError(
            "must be openprogram.stepping_clock(start_ms, step_ms), "
            f"openprogram.sequence_clock(times) or another clock, not {value!r}"
        )
    return value


def _children(value: object) -> Literal["isolate", "refuse"] | None:
    from openprogram.activation.children import check_children_rule

    return None if value is None else check_children_rule(value)


def _redact(value: object) -> Callable[[str], str] | None:
    if value is not None and not callable(value):
        raise ValueError(f"must be a function taking a string and returning it, not {value!r}")
    return value


SETTING_CHECKS: dict[str, Callable[[object], Any]] = {
    "record_mode": check_record_mode,
    "name": _name,
    "ignore_fields": _ignore_fields,
    "compare_loopback_ports": _boolean,
    "match": _match,
    "http_passthrough_hosts": _by_configuration_rules("http_passthrough_hosts"),
    "allowed_hosts": _by_configuration_rules("allowed_hosts"),
    "http_headers": _by_configuration_rules("http_headers"),
    "tools": _tools,
    "redact_patterns": _redact_patterns,
    "redact": _redact,
    "seed": _seed,
    "clock": _clock,
    "children": _children,
    "allowed_commands": _by_configuration_rules("allowed_commands"),
}
"""Each setting's key and the check that turns a given value into the setting's value
(raising ``ValueError`` saying what is wrong)."""

ADDITIVE_KEYS = frozenset({"redact_patterns", "allowed_hosts"})
"""Keys whose lists add up across layers (in layer order, each entry once) instead of a later
layer replacing an earlier one's: the user's redaction only ever grows, so a pattern set in the
configuration still applies to a test whose marker adds its own; and a host the configuration
lets every replay reach (a telemetry collector) stays allowed for a test that allows one more."""

PER_TEST_KEYS = frozenset({"name"})
"""Keys only a test's own marker may set: two tests never share a recording by accident."""


assert set(SETTING_CHECKS) == {field.name for field in fields(RecordingSettings)}


def checked_layer(values: Mapping[str, object], *, where: str, per_test: bool = False) -> Layer:
    """``values`` checked key by key; :class:`SettingsError` naming ``where`` (``the
    openprogram_config fixture``, ``@pytest.mark.openprogram``) and the key otherwise.
    ``per_test``: the layer belongs to one test, so it may set :data:`PER_TEST_KEYS`."""
    layer: Layer = {}
    for key, value in values.items():
        check = SETTING_CHECKS.get(key)
        if check is None:
            known = ", ".join(SETTING_CHECKS)
            raise SettingsError(f"{where}: unknown setting {key!r}; the settings are {known}")
        if key in PER_TEST_KEYS and not per_test:
            raise SettingsError(
                f"{where}: {key!r} belongs to one test: set it with "
                f"@pytest.mark.openprogram({key}=...)"
            )
        try:
            layer[key] = check(value)
        except ValueError as error:
            raise SettingsError(f"{where}: {key}: {error}") from None
    return layer


def check_setting(key: str, value: object) -> Any:
    """The value of setting ``key`` that ``value`` gives; ``ValueError`` saying what is
    wrong with it."""
    return SETTING_CHECKS[key](value)


def combine_layers(layers: Iterable[Layer]) -> RecordingSettings:
    """The settings the layers give, lowest first: a later layer's key replaces an earlier one's,
    and the lists of :data:`ADDITIVE_KEYS` are joined (each entry once, first place kept)."""
    merged: Layer = {}
    for layer in layers:
        for key, value in layer.items():
            if key in ADDITIVE_KEYS and key in merged:
                value = tuple(dict.fromkeys((*merged[key], *value)))
            merged[key] = value
    return RecordingSettings(**merged)


INI_SETTINGS = {
    "record_mode": "openprogram_record_mode",
    "ignore_fields": "openprogram_ignore_fields",
    "match": "openprogram_match",
    "http_passthrough_hosts": "openprogram_http_passthrough_hosts",
    "http_headers": "openprogram_http_headers",
    "tools": "openprogram_tools",
    "redact_patterns": "openprogram_redact_patterns",
}
"""The settings the ini file carries: key -> ini option."""

CONFIGURED_SETTINGS = (
    "ignore_fields",
    "compare_loopback_ports",
    "match",
    "http_passthrough_hosts",
    "allowed_hosts",
    "http_headers",
    "tools",
    "redact_patterns",
    "children",
    "allowed_commands",
)
"""The settings openprogram's configuration carries (``record_replay.<key>``)."""

_CONFIGURED = pytest.StashKey["Layer | str"]()


def ini_layer(config: pytest.Config) -> Layer:
    """The settings the ini file sets, checked (a bad value is a usage error naming the option)."""
    layer: Layer = {}
    for key, name in INI_SETTINGS.items():
        value = config.getini(name)
        if value is None:
            continue
        try:
            layer[key] = check_setting(key, value.strip() if isinstance(value, str) else value)
        except ValueError as error:
            raise pytest.UsageError(f"{name}: {error}") from None
    return layer


def settings_of_test(
    item: pytest.Item, *, ini: Layer, command_line: Layer, fixture_settings: dict[str, Any]
) -> RecordingSettings:
    """One test's settings: configuration, ``ini``, ``command_line``, the
    ``openprogram_config`` fixture's dict, then its markers. Raises :class:`SettingsError`."""
    if not isinstance(fixture_settings, dict):
        raise SettingsError(
            f"the openprogram_config fixture must return a dict, not {type(fixture_settings)}"
        )
    layers = [
        configured_layer(item.config),
        ini,
        command_line,
        checked_layer(fixture_settings, where="the openprogram_config fixture"),
        *marker_layers(item),
    ]
    return combine_layers(layers)


def configured_layer(config: pytest.Config) -> Layer:
    """The settings openprogram's configuration (file, then environment) sets explicitly;
    read once per run, when the first test uses the fixture."""
    cached = config.stash.get(_CONFIGURED, None)
    if cached is None:
        from openprogram.config.settings import load_config

        loaded = load_config()
        if loaded.error is not None:
            cached = f"openprogram's configuration: {loaded.error}"
        else:
            assert loaded.settings is not None
            record_replay = loaded.settings.record_replay
            chosen = record_replay.model_fields_set & set(CONFIGURED_SETTINGS)
            values = {key: getattr(record_replay, key) for key in sorted(chosen)}
            try:
                cached = checked_layer(values, where="openprogram's configuration")
            except SettingsError as error:
                cached = str(error)
        config.stash[_CONFIGURED] = cached
    if isinstance(cached, str):
        raise SettingsError(cached)
    return cached


def marker_layers(item: pytest.Item) -> list[Layer]:
    """The test's markers, farthest first (a marker on the function beats one on its
    class or module); ``openprogram_match`` before ``openprogram``."""
    layers: list[Layer] = []
    for marker in reversed(list(item.iter_markers("openprogram_match"))):
        value = marker.args[0] if marker.args else marker.kwargs.get("match")
        where = "@pytest.mark.openprogram_match"
        try:
            layers.append(checked_layer({"match": value}, where=where))
        except SettingsError:
            from openprogram.recording.difference import MATCHINGS

            raise SettingsError(
                f"{where} takes one of {', '.join(MATCHINGS)}, not {value!r}"
            ) from None
    for marker in reversed(list(item.iter_markers("openprogram"))):
        if marker.args:
            raise SettingsError(
                "@pytest.mark.openprogram takes keywords only, e.g. "
                "@pytest.mark.openprogram(record_mode='once')"
            )
        layers.append(checked_layer(marker.kwargs, where="@pytest.mark.openprogram", per_test=True))
    return layers
