"""A test's settings combine lowest first, a later layer replacing each key it sets; every
key is checked, and a bad one is named with where it was set."""

from __future__ import annotations

import pytest

from openprogram.testing.recording_settings import (
    SETTING_CHECKS,
    RecordingSettings,
    SettingsError,
    checked_layer,
    combine_layers,
)


def test_a_later_layer_replaces_the_keys_it_sets_and_only_those() -> None:
    configured = checked_layer({"ignore_fields": ["seed"], "match": "order"}, where="config")
    ini = checked_layer({"ignore_fields": ["temperature"]}, where="ini")
    marker = checked_layer({"record_mode": "once", "name": "shared"}, where="m", per_test=True)

    settings = combine_layers([configured, ini, {}, marker])

    assert settings == RecordingSettings(
        record_mode="once", name="shared", ignore_fields=("temperature",), match="order"
    )
    assert combine_layers([]) == RecordingSettings()  # none, content, nothing ignored


def test_redact_patterns_add_up_across_layers_so_no_layer_drops_one() -> None:
    configured = checked_layer({"redact_patterns": ["ACME-[0-9]+"]}, where="config")
    ini = checked_layer({"redact_patterns": ["ORD-[0-9]+", "ACME-[0-9]+"]}, where="ini")
    fixture = checked_layer({"ignore_fields": ["seed"]}, where="fixture")
    marker = checked_layer({"redact_patterns": ["cust-[0-9]+"]}, where="m", per_test=True)

    settings = combine_layers([configured, ini, fixture, marker])

    # In layer order, each pattern once; the other lists are still replaced whole.
    assert settings.redact_patterns == ("ACME-[0-9]+", "ORD-[0-9]+", "cust-[0-9]+")
    assert settings.ignore_fields == ("seed",)
    assert combine_layers([marker]).redact_patterns == ("cust-[0-9]+",)


def test_lists_are_checked_by_the_configurations_rules() -> None:
    layer = checked_layer(
        {"http_passthrough_hosts": ["Telemetry.Example.com:4318"], "http_headers": ["X-Run"]},
        where="the openprogram_config fixture",
    )
    assert layer == {
        "http_passthrough_hosts": ("telemetry.example.com:4318",),
        "http_headers": ("x-run",),
    }


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"mode": "once"}, "where: unknown setting 'mode'; the settings are record_mode, name, "),
        ({"record_mode": "sometimes"}, "where: record_mode: must be one of none, once, "),
        ({"match": "fuzzy"}, "where: match: must be one of content, order, not 'fuzzy'"),
        ({"ignore_fields": "temperature"}, "where: ignore_fields: must be a list of strings"),
        ({"ignore_fields": ["a..b"]}, "where: ignore_fields: cannot read ignore path 'a..b'"),
        (
            {"ignore_fields": ["url.hostname"]},
            "where: ignore_fields: 'url.hostname' names no part of an HTTP call's URL: write url, ",
        ),
        ({"compare_loopback_ports": "yes"}, "where: compare_loopback_ports: must be True or False"),
        ({"http_headers": ["authorization"]}, "where: http_headers: 'authorization' may carry"),
        ({"name": "shared"}, "where: 'name' belongs to one test: set it with @pytest.mark"),
    ],
)
def test_a_bad_setting_names_where_it_was_set_and_what_is_wrong(
    values: dict[str, object], message: str
) -> None:
    with pytest.raises(SettingsError) as refused:
        checked_layer(values, where="where")
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("name", ["../up", ".hidden", "-dash", "a b", "x" * 121, ""])
def test_a_recording_name_must_be_a_plain_file_name(name: str) -> None:
    with pytest.raises(SettingsError, match="name: must be a file name"):
        checked_layer({"name": name}, where="m", per_test=True)


def test_every_setting_has_a_check() -> None:
    assert list(SETTING_CHECKS) == list(RecordingSettings.__dataclass_fields__)
