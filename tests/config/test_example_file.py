"""config.example.toml parses, validates, and documents every setting."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel

from openprogram.config.models import ProviderSettings, RecordReplaySettings, Settings
from openprogram.config.settings import load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "config.example.toml"


def setting_keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every dotted key of ``model``, walking nested models and per-api tables."""
    for name, info in model.model_fields.items():
        key = f"{prefix}{name}"
        yield key
        if info.annotation is RecordReplaySettings:
            yield from setting_keys(RecordReplaySettings, f"{key}.")
        elif name == "providers":
            yield from setting_keys(ProviderSettings, f"{key}.<api>.")


def test_the_example_parses_and_validates() -> None:
    loaded = load_config({"OPENPROGRAM_CONFIG": str(EXAMPLE)})
    assert loaded.error is None
    assert loaded.settings is not None
    assert set(loaded.settings.providers) == {"openai-completions", "anthropic-messages"}


def test_the_walk_finds_every_setting() -> None:
    assert set(setting_keys(Settings)) == {
        "record_replay",
        "record_replay.mode",
        "record_replay.file",
        "record_replay.ignore_fields",
        "record_replay.compare_loopback_ports",
        "record_replay.match",
        "record_replay.http_passthrough_hosts",
        "record_replay.allowed_hosts",
        "record_replay.children",
        "record_replay.allowed_commands",
        "record_replay.model_hosts",
        "record_replay.http_headers",
        "record_replay.redact_patterns",
        "record_replay.tools",
        "record_replay.seed",
        "record_replay.clock_start",
        "record_replay.clock_step",
        "default_model",
        "providers",
        "providers.<api>.base_url",
        "providers.<api>.api_key_env",
        "providers.<api>.timeout",
    }


def test_the_example_mentions_every_setting() -> None:
    text = EXAMPLE.read_text()
    for key in setting_keys(Settings):
        leaf = key.rsplit(".", 1)[-1]
        assert re.search(rf"^#?\s*\[?{re.escape(leaf)}\b", text, re.MULTILINE), key


def test_every_provider_table_sets_every_provider_key() -> None:
    providers = tomllib.loads(EXAMPLE.read_text())["providers"]
    for api, table in providers.items():
        assert set(table) == set(ProviderSettings.model_fields), api


def test_the_example_mentions_the_environment_variables() -> None:
    text = EXAMPLE.read_text()
    for name in (
        "OPENPROGRAM_HOME",
        "OPENPROGRAM_CONFIG",
        "OPENPROGRAM_DEBUG",
        "OPENPROGRAM_RECORD_REPLAY__MODE",
    ):
        assert name in text
