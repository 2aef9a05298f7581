"""Benchmarks for tapes (``openprogram.taped``), run by hand.

    python benchmarks/bench_tapes.py           # full sizes (about half a minute)
    python benchmarks/bench_tapes.py --quick   # small sizes, a smoke run

Two measurements, each printed as a table of medians (see ``benchmarks/README.md``):

1. the cost of one taped call against the bare function: with record/replay off (the lookup
   of the active tape deck), under record (a row appended to the recording) and under replay
   (an entry served from the tape, the function not run);
2. a 10,000-entry tape replayed: the per-entry cost of the first 100 entries against the
   last 100, with distinct arguments served in recorded order and in reverse (the last entry
   first, every other entry still unread), and with identical arguments (a clock read 10,000
   times, served in recorded order).

The taped functions are defined below; no network, no key, no model.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from machine_reference import machine_reference

from openprogram import record_replay, taped
from openprogram.providers.registry import initialize_provider_runtime


@dataclass(frozen=True, slots=True)
class Sizes:
    calls: int = 2_000
    """Calls timed for each row of benchmark 1."""
    entries: int = 10_000
    window: int = 100


FULL = Sizes()
QUICK = Sizes(calls=200, entries=1_000, window=50)


def weather(city: str, units: str = "C") -> dict[str, Any]:
    return {"city": city, "units": units, "high": 21.5, "sky": "sunny"}


TAPED_WEATHER = taped(weather, name="weather")


def reading() -> float:
    return 1_767_225_600.25


TAPED_CLOCK = taped(reading, name="clock", nondeterministic=True)


def per_call_us(function: Callable[[str], Any], cities: list[str]) -> list[float]:
    """The time of each call, in µs."""
    times = []
    for city in cities:
        start = time.perf_counter_ns()
        function(city)
        times.append((time.perf_counter_ns() - start) / 1_000)
    return times


def overhead(folder: Path, sizes: Sizes) -> list[tuple[str, float]]:
    cities = [f"city-{index}" for index in range(sizes.calls)]
    bare = statistics.median(per_call_us(weather, cities))
    off = statistics.median(per_call_us(TAPED_WEATHER, cities))
    path = folder / "overhead.jsonl"
    with record_replay(path, mode="record"):
        recorded = statistics.median(per_call_us(TAPED_WEATHER, cities))
    with record_replay(path, mode="replay"):
        replayed = statistics.median(per_call_us(TAPED_WEATHER, cities))
    return [
        ("bare function", bare),
        ("taped, record/replay off", off),
        ("taped, under record (a row appended)", recorded),
        ("taped, under replay (served, not run)", replayed),
    ]


def long_tape(folder: Path, sizes: Sizes) -> list[tuple[str, float]]:
    cities = [f"city-{index}" for index in range(sizes.entries)]
    path = folder / "long.jsonl"
    with record_replay(path, mode="record"):
        for city in cities:
            TAPED_WEATHER(city)
        for _ in cities:
            TAPED_CLOCK()

    def replayed(order: list[str]) -> tuple[list[float], list[float]]:
        """Each weather entry's time in ``order``, then each clock reading's."""
        with record_replay(path, mode="replay"):
            weather_times = per_call_us(TAPED_WEATHER, order)
            clock_times = per_call_us(lambda _: TAPED_CLOCK(), cities)
        return weather_times, clock_times

    in_order, clock = replayed(cities)
    in_reverse, _ = replayed(cities[::-1])
    return [
        *window_rows("distinct arguments, recorded order", in_order, sizes.window),
        *window_rows("distinct arguments, reverse order", in_reverse, sizes.window),
        *window_rows("identical arguments (a clock)", clock, sizes.window),
    ]


def window_rows(label: str, times: list[float], window: int) -> list[tuple[str, float]]:
    """The median of the first ``window`` entries (the very first left out: it indexes the
    tapes) and of the last, and their ratio."""
    first = statistics.median(times[1 : window + 1])
    last = statistics.median(times[-window:])
    return [
        (f"{label}: first {window}", first),
        (f"{label}: last {window}", last),
        (f"{label}: last / first", last / first),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    sizes = QUICK if parser.parse_args().quick else FULL
    os.environ.setdefault("OPENPROGRAM_HOME", tempfile.mkdtemp(prefix="bench-tapes-home-"))
    initialize_provider_runtime()  # the configured mode (off): started once, not timed
    print(f"{platform.system()} {platform.machine()}, Python {sys.version.split()[0]}")
    print(f"machine reference: {machine_reference():.1f} µs")
    with tempfile.TemporaryDirectory() as folder:
        print(f"\n1. one call ({sizes.calls} calls, median µs a call)")
        for label, value in overhead(Path(folder), sizes):
            print(f"  {label:<52} {value:8.2f}")
        print(f"\n2. a {sizes.entries:,}-entry tape replayed (median µs an entry)")
        for label, value in long_tape(Path(folder), sizes):
            unit = "×" if label.endswith("last / first") else ""
            print(f"  {label:<52} {value:8.2f}{unit}")
    print(f"\nmachine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
