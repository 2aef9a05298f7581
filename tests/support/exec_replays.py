"""A recording of one call, for the tests that run a program under ``openprogram exec
--replay`` in a new process: a recording must hold a call to be replayed, so each such
program makes :data:`ONE_CALL` first, then does what its test is about
(:func:`replay_program`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.child_processes import openprogram_process, user_environment

ONE_CALL = """
import asyncio
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")])))
"""
"""A program's one call, to the built-in echo model: what ``quiet`` records, and what the
programs replaying it ask for before what is refused."""


def record_one_call(env: dict[str, str]) -> None:
    """``exec --record quiet`` of :data:`ONE_CALL` in ``env``."""
    recorded = openprogram_process(
        "exec", "--record", "quiet", "--", sys.executable, "-c", ONE_CALL, env=env
    )
    assert recorded.returncode == 0, recorded.stderr


def replay_program(program: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``openprogram exec --replay quiet -- python PROGRAM ARGS...`` in a new home under
    ``tmp_path``, with no keys: ``quiet`` recorded first (``program`` must start with
    :data:`ONE_CALL`)."""
    env = user_environment(tmp_path / "exec-home")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    path = tmp_path / "program.py"
    path.write_text(program)
    record_one_call(env)
    return openprogram_process(
        "exec", "--replay", "quiet", "--", sys.executable, str(path), *args, env=env
    )
