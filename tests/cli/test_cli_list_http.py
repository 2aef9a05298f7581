"""``openprogram recordings list`` on recordings holding HTTP calls: their models (host and
the body's ``model``) in the models column, and how many calls were HTTP calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from openprogram.config.paths import recordings_dir
from openprogram.store.summary_cache import CACHE_FILE_NAME
from tests.support.cli_runner import run
from tests.support.http_call_rows import write_calls
from tests.support.vendor_http_rows import documented_agent, mixed_session

MODELS = [
    "echo:echo",
    "api.openai.com:gpt-4o-mini",
    "api.openai.com:gpt-4.1-mini",
    "api.anthropic.com:claude-sonnet-4-5",
    "GET api.example.com/v1/models",
]


def test_http_calls_are_counted_and_their_models_listed() -> None:
    write_calls(recordings_dir() / "sdk.jsonl", *mixed_session())

    result = run("list", "--json")

    assert result.exit_code == 0, result.stderr
    (listed,) = json.loads(result.stdout)
    assert (listed["calls"], listed["http_calls"]) == (9, 8)
    assert listed["models"] == MODELS
    assert (listed["valid"], listed["truncated"]) == (True, True)  # call 8 is cut short


def test_the_table_shows_the_models(monkeypatch: pytest.MonkeyPatch) -> None:
    write_calls(recordings_dir() / "sdk.jsonl", *mixed_session())

    monkeypatch.setenv("COLUMNS", "300")
    result = run("list")

    assert result.exit_code == 0, result.stderr
    assert ", ".join(MODELS) in result.stdout
    assert " 9 " in result.stdout.splitlines()[-1]


@pytest.mark.parametrize(
    ("columns", "calls"),
    [("100", mixed_session), ("80", documented_agent)],
    ids=["100-truncated", "80-valid"],
)
def test_a_narrow_table_shortens_the_models_before_it_gives_way(
    columns: str, calls: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_calls(recordings_dir() / "sdk.jsonl", *calls())
    monkeypatch.setenv("COLUMNS", columns)

    header, row = run("list").stdout.splitlines()  # still a table: one line a recording

    assert header.split() == ["name", "created", "calls", "size", "models", "state", "hash"]
    assert max(map(len, (header, row))) <= int(columns)
    assert "api.openai.com" not in row  # the models without their hosts first
    assert "gpt-4o-mini" in row
    (listed,) = json.loads(run("list", "--json").stdout)
    assert any(model.startswith("api.openai.com:") for model in listed["models"])


def test_a_summary_cached_before_http_calls_were_counted_is_read_again() -> None:
    write_calls(recordings_dir() / "sdk.jsonl", *mixed_session())
    assert run("list").exit_code == 0
    cache = recordings_dir() / CACHE_FILE_NAME
    document = orjson.loads(cache.read_bytes())
    for entry in document["entries"].values():
        del entry["summary"]["http_calls"]
    cache.write_bytes(orjson.dumps(document))

    (listed,) = json.loads(run("list", "--json").stdout)

    assert listed["http_calls"] == 8
