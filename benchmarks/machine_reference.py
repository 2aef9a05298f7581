"""How fast, and how loaded, the machine is while a benchmark runs.

Each benchmark prints :func:`machine_reference` before and after its figures, so figures
taken on different machines or under different loads can be read against each other.
Imported by the benchmark scripts from their own folder (``python benchmarks/bench_*.py``).
"""

from __future__ import annotations

import statistics
import time


def machine_reference() -> float:
    """Median µs of ``sum(range(10_000))`` over 200 runs."""
    samples: list[int] = []
    for _ in range(200):
        start = time.perf_counter_ns()
        sum(range(10_000))
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1_000
