"""A tape mismatch ends a run under ``openprogram exec --replay`` and ``recordings verify --
COMMAND``: the program stops, the run ends with the two-line report, and the exit status is
not 0 — for each kind of tape drift: the clock read once more than recorded, a taped
function called with another argument, and a tool under ``check`` whose result changed.

Each used to hang for ever: the child reported the mismatch at once, from inside the tapes'
lock its report then asked for again. The runs are real processes (the process boundary is
what is tested), each given a generous time to end, so a regression fails instead of hanging
the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, user_environment
from tests.support.config_files import write_config
from tests.support.recording_rows import stored

HANG_GUARD = 120.0
"""Seconds a run may take before the test calls it hung (it takes about one)."""

PROGRAM = """\
import asyncio
import sys

import openprogram
from openprogram.agent import run_agent, tool
from openprogram.providers import ECHO_MODEL

KIND = sys.argv[1]


@openprogram.taped
def lookup(word: str) -> str:
    return word.upper()


@tool
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "rainy" if KIND == "check" else "sunny"


print(openprogram.now() > 0)
if KIND == "clock":
    print(openprogram.now() > 0)
print(lookup("b" if KIND == "argument" else "a"))
done = asyncio.run(run_agent(ECHO_MODEL, '/tool weather {"city": "Paris"}', tools=[weather]))
print(done.final.text)
"""
"""Recorded as ``record``: the clock read once, ``lookup("a")``, and an agent run on the
echo model calling the tool ``weather`` once. Each other kind drifts in one tape."""

REPORTS = {
    "clock": (
        "replay mismatch at tape openprogram.now[1], field tape:\n"
        "the recording holds 1 entry on tape openprogram.now (openprogram.now[0..0]), all "
        "read: the run calls it more often than the recorded run did"
    ),
    "argument": "replay mismatch at tape lookup[0], field args.word:\nrecorded 'a', incoming 'b'",
    "check": (
        "replay mismatch at tape tool:weather[0], field result.text:\n"
        "recorded 'sunny', incoming 'rainy'"
    ),
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = user_environment(tmp_path / "openprogram-home")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH"):
        environ.pop(name, None)
    return environ


@pytest.fixture
def program(tmp_path: Path, env: dict[str, str]) -> Path:
    """The program, recorded into ``session``."""
    path = tmp_path / "program.py"
    path.write_text(PROGRAM)
    recorded = run(
        "exec", "--record", "session", "--", sys.executable, str(path), "record", env=env
    )
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout == "True\nA\necho:sunny\n"
    return path


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``openprogram ARGS``; the test fails if it has not ended after :data:`HANG_GUARD`."""
    try:
        return openprogram_process(*args, env=env, timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        pytest.fail(f"openprogram {' '.join(args)} did not end within {HANG_GUARD:.0f} s: it hangs")


@pytest.mark.parametrize("kind", list(REPORTS))
def test_exec_replay_ends_with_the_report(kind: str, program: Path, env: dict[str, str]) -> None:
    if kind == "check":
        write_config('[record_replay.tools]\n"*" = "check"\n')
    result = run("exec", "--replay", "session", "--", sys.executable, str(program), kind, env=env)
    assert result.returncode == 1, result.stderr
    assert result.stderr.endswith(f"openprogram: {REPORTS[kind]}\n")
    # The program stopped at the drift, or (a tool's check lets it run on) at the model call
    # whose request carries the changed result: it never printed the model's answer.
    assert "echo:" not in result.stdout


@pytest.mark.parametrize("kind", list(REPORTS))
def test_verify_command_ends_with_the_report(kind: str, program: Path, env: dict[str, str]) -> None:
    policy = ("--tool-policy", "check") if kind == "check" else ()
    command = ("--", sys.executable, str(program), kind)
    result = run("recordings", "verify", "session", *policy, *command, env=env)
    assert result.returncode == 1, result.stderr
    diverged = f"✘ {stored('session')}: the session diverged from the recording"
    assert result.stdout.endswith(f"{diverged}\n{REPORTS[kind]}\n")
