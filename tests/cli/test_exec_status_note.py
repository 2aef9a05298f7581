"""``recordings status``, ``record`` and ``replay`` say in two short lines what the configured
mode covers — the model traffic of Python processes started from now on — and what not:
other traffic, and programs that are not Python (``exec`` or ``serve`` for those)."""

from __future__ import annotations

import json

import pytest

from openprogram.store.status import WHAT_THE_MODE_COVERS
from tests.support.cli_runner import run
from tests.support.config_files import configure
from tests.support.recording_rows import write_recording

COVERS, LEAVES = WHAT_THE_MODE_COVERS


def test_the_two_lines_say_what_is_covered_and_what_not() -> None:
    assert "model traffic of Python processes started from now on" in COVERS
    assert "other traffic goes live" in LEAVES
    assert "`openprogram exec -- COMMAND`" in LEAVES
    assert "`openprogram serve`" in LEAVES
    assert all(len(line) <= 100 for line in WHAT_THE_MODE_COVERS)


@pytest.mark.parametrize("mode", ["record", "replay"])
def test_status_says_what_the_mode_covers(mode: str) -> None:
    write_recording("session", calls=1)
    configure(mode, "session")
    result = run("status")
    assert result.exit_code == 0, result.output
    lines = [line.removeprefix("note:").strip() for line in result.stdout.splitlines()]
    assert COVERS in lines
    assert LEAVES in lines
    notes = json.loads(run("status", "--json").stdout)["notes"]
    assert COVERS in notes
    assert LEAVES in notes


def test_record_and_replay_say_it_as_they_switch() -> None:
    recorded = run("record", "session")
    assert recorded.exit_code == 0, recorded.output
    assert recorded.stderr.splitlines()[-2:] == [f"note: {COVERS}", f"note: {LEAVES}"]
    write_recording("other", calls=1)
    replayed = run("replay", "other")
    assert replayed.exit_code == 0, replayed.output
    assert replayed.stderr.splitlines()[-2:] == [f"note: {COVERS}", f"note: {LEAVES}"]


def test_with_record_replay_off_there_is_nothing_to_say() -> None:
    text = run("status").stdout
    assert COVERS not in text
    assert LEAVES not in text
