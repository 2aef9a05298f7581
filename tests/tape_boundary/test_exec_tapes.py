"""Tapes under ``openprogram exec``: a program's taped calls are recorded from its first
line, and replayed offline; an entry it no longer reads fails the command."""

from __future__ import annotations

import sys
from pathlib import Path

from openprogram.recording.reader import read_recording
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.recording_rows import stored

PROGRAM = """\
import sys

import openprogram

RUNS = []


@openprogram.taped
def lookup(word: str) -> str:
    RUNS.append(word)
    return word.upper()


for word in sys.argv[1:]:
    print(lookup(word), openprogram.now() > 0)
print("ran:", RUNS)
"""


def test_a_program_records_and_replays_its_taped_calls(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    env = user_environment(tmp_path / "openprogram-home")
    env.pop("PYTHONPATH", None)
    run = [sys.executable, str(program)]

    recorded = openprogram_process("exec", "--record", "words", "--", *run, "a", "b", env=env)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "A True\nB True\nran: ['a', 'b']\n"
    assert [entry.label for entry in read_recording(stored("words")).tapes] == [
        "lookup[0]",
        "openprogram.now[0]",
        "lookup[1]",
        "openprogram.now[1]",
    ]

    replayed = openprogram_process("exec", "--replay", "words", "--", *run, "b", "a", env=env)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == "B True\nA True\nran: []\n"

    short = openprogram_process("exec", "--replay", "words", "--", *run, "a", env=env)
    assert short.returncode == 1
    assert "tape lookup: 1 of 2 entries never read (entry 1)" in short.stderr

    # A run that reads no entry at all never starts replay in any process: the command
    # still fails, naming every entry left unread.
    none = openprogram_process("exec", "--replay", "words", "--", *run, env=env)
    assert none.returncode == 1
    assert "tape lookup: 2 of 2 entries never read (entries 0..1)" in none.stderr
    assert "tape openprogram.now: 2 of 2 entries never read" in none.stderr
