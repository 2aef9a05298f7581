"""``recordings status`` says plainly that the configured mode covers openprogram's
providers only: SDK (HTTP) traffic needs ``openprogram exec``, the fixture or
``record_replay()``."""

from __future__ import annotations

import json

import pytest

from tests.support.cli_runner import run
from tests.support.config_files import configure
from tests.support.recording_rows import write_recording

NOTE = "SDK (HTTP) traffic — the openai and anthropic SDKs, httpx — is captured only under"


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_status_says_sdk_traffic_needs_exec_the_fixture_or_record_replay(mode: str) -> None:
    write_recording("session", calls=1)
    configure(mode, "session")
    result = run("status")
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert NOTE in text
    assert "`openprogram exec -- COMMAND`, the pytest fixture or `openprogram.record_replay()`" in (
        text
    )
    assert f"a plain `python agent.py` {mode}s only its provider calls" in text
    notes = json.loads(run("status", "--json").stdout)["notes"]
    assert any(NOTE in note for note in notes)


def test_with_record_replay_off_there_is_nothing_to_say() -> None:
    assert NOTE not in " ".join(run("status").stdout.split())
