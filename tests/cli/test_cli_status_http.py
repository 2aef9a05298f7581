"""``openprogram recordings status`` counts the calls of both boundaries."""

from __future__ import annotations

import json

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import run
from tests.support.config_files import configure
from tests.support.http_call_rows import write_calls
from tests.support.vendor_http_rows import mixed_session


@pytest.mark.parametrize("mode", ["replay", "record"])
def test_status_counts_provider_and_http_calls(mode: str) -> None:
    path = write_calls(recordings_dir() / "sdk.jsonl", *mixed_session())
    configure(mode, path)

    result = run("status", "--json")

    assert result.exit_code == 0, result.stdout
    recording = json.loads(result.stdout)["recording"]
    assert (recording["valid"], recording["calls"], recording["truncated_calls"]) == (
        True,
        9,
        [8],
    )
    shown = run("status").stdout
    assert f"{path} (valid, 9 calls, format 2, call 8 truncated)" in shown
