"""Where a test's recording settings come from, gathered in their order for each test.

The layers (lowest first; :mod:`~openprogram.testing.recording_settings` combines them):
openprogram's configuration (:func:`configured_layer`: the file, then the environment, read
once per run when the first test uses the fixture), the ini file (:func:`ini_layer`, read at
start-up), the command line, the ``openprogram_config`` fixture's dict and the test's markers
(:func:`marker_layers`). :func:`settings_of_test` puts them together for one test.

A new setting that the ini file or the configuration carries is a line in
:data:`INI_SETTINGS` or :data:`CONFIGURED_SETTINGS`.
"""

from __future__ import annotations

from typing import Any

import pytest

from openprogram.testing.recording_settings import (
    Layer,
    RecordingSettings,
    SettingsError,
    check_setting,
    checked_layer,
    combine_layers,
)

__all__ = [
    "CONFIGURED_SETTINGS",
    "INI_SETTINGS",
    "configured_layer",
    "ini_layer",
    "marker_layers",
    "settings_of_test",
]

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
    "match",
    "http_passthrough_hosts",
    "http_headers",
    "tools",
    "redact_patterns",
)
"""The settings openprogram's configuration carries (``record_replay.<key>``)."""


_CONFIGURED = pytest.StashKey["Layer | str"]()


def ini_layer(config: pytest.Config) -> Layer:
    """The settings the ini file sets, checked (a bad value is a usage error naming the
    option)."""
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
    item: pytest.Item,
    *,
    ini: Layer,
    command_line: Layer,
    fixture_settings: dict[str, Any],
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
            from openprogram.recording.matching import MATCHINGS

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
