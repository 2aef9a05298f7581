"""Taped helpers for the clock and randomness: ``now()``, ``random()``, ``seeded_random()``.

Code that reads the time or draws random numbers through these sees, under replay, exactly
what the recorded run saw; outside record and replay they are ``time.time()``,
``random.random()`` and a freshly seeded ``random.Random``. Nothing is patched: code that
calls ``time.time()`` directly stays live, and a replay shows the drift it causes.

Their results are non-deterministic by nature, so the transcript hash and ``diff`` leave
them out (the calls still count): two recordings of one session made a day apart hash alike.
"""

from __future__ import annotations

import random as _random
import secrets
import time

from openprogram.tape_boundary.taped_functions import taped

__all__ = ["now", "random", "seeded_random"]


@taped(name="openprogram.now", nondeterministic=True)
def now() -> float:
    """The current time in seconds since the epoch, as ``time.time()`` — under replay, the
    time the recorded run read at this point (tape ``openprogram.now``)."""
    return time.time()


@taped(name="openprogram.random", nondeterministic=True)
def random() -> float:
    """A random float in [0, 1), as ``random.random()`` — under replay, the recorded draw
    (tape ``openprogram.random``)."""
    return _random.random()


@taped(name="openprogram.seed", nondeterministic=True)
def _seed() -> int:
    return secrets.randbits(63)


def seeded_random() -> _random.Random:
    """A ``random.Random`` seeded with a fresh random seed — under replay, the seed the
    recorded run drew (tape ``openprogram.seed``), so every draw from it repeats. One entry
    per generator, however many numbers it gives."""
    return _random.Random(_seed())
