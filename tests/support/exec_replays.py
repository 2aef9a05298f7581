"""A recording of one call, for the tests that run a program under ``openprogram exec
--replay`` in a new process: a recording must hold a call to be replayed, so each such
program makes :data:`ONE_CALL` first, then does what its test is about."""

from __future__ import annotations

import sys

from tests.support.child_processes import openprogram_process

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
