"""A session whose output carries the time — shown in the local zone — and random draws: the
subject of the deterministic sources' tests (a seed and a clock make two recordings of it
hash alike; without them they differ).

``PROGRAM`` is the session as a program ``openprogram exec`` runs; :func:`run_session` the
same in this process. Its one model call (the built-in ``echo``) says the time and the draws,
so they reach the transcript hash. ``ZONES`` are two time zones far apart, written as POSIX
``TZ`` strings so that they work without the system's zone files; :func:`local_zone` puts
this process in one of them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import openprogram
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

ZONES = ("JST-9", "EST+5")
"""UTC+9 and UTC-5: a local time shown in one differs from the other by fourteen hours."""

START_MS = 1_751_500_800_000
"""2025-07-03T00:00:00Z."""


def session_text() -> str:
    """What the session says: the time in the local zone, a draw, a seeded generator's pick."""
    at = datetime.fromtimestamp(openprogram.now())  # the local zone
    draw = openprogram.random()
    pick = openprogram.seeded_random().randint(1, 10**6)
    return f"at {at:%Y-%m-%d %H:%M:%S} drew {draw:.9f} picked {pick}"


def run_session() -> str:
    """The session in this process: its one model call says :func:`session_text`."""
    context = Context(messages=[UserMessage(content=session_text())])
    return asyncio.run(complete_simple(ECHO_MODEL, context)).text


PROGRAM = """\
from tests.support.seeded_session import run_session

print(run_session())
"""
"""The session as a program (run with the repository root on ``PYTHONPATH``)."""


@contextmanager
def local_zone(zone: str) -> Iterator[None]:
    """This process in the time zone ``zone`` for the block, then back in its own."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = zone
    time.tzset()
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        time.tzset()
