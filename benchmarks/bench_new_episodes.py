"""What the pytest plugin's ``new_episodes`` mode costs against plain replay, run by hand.

    python benchmarks/bench_new_episodes.py           # 2,000 calls (about a minute)
    python benchmarks/bench_new_episodes.py --quick   # 200 calls, a smoke run

One recording of N independent calls to the offline echo model (through the provider
registry, as a test makes them) is made once; then, each 5 times, the same N calls are run

1. under plain replay (``none``);
2. under ``new_episodes`` with nothing drifted: every call served from the recording, a
   placeholder written per call, and at the end nothing rewritten;
3. under ``new_episodes`` with 1% of the calls drifted: those called live and recorded, the
   merged recording written with ``rewrite_recording``;

each timed from opening the session to its ``finish`` (the merge and its comparison with the
old recording included), on a fresh copy of the recording, the three cases alternating.
Medians, and the ratio of each to plain replay, are printed between two machine references
(median µs of ``sum(range(10_000))``: far apart, the machine was busy); see
``benchmarks/README.md`` for the figures on this machine.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from machine_reference import machine_reference

RUNS = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 calls instead of 2,000")
    calls = 200 if parser.parse_args().quick else 2_000
    cases = [
        ("replay (none)", "none", prompts(calls, drifted=False)),
        ("new_episodes, nothing drifted", "new_episodes", prompts(calls, drifted=False)),
        ("new_episodes, 1% drifted, merged", "new_episodes", prompts(calls, drifted=True)),
    ]
    print(f"machine reference: {machine_reference():.0f} µs")
    with tempfile.TemporaryDirectory() as folder:
        os.environ["OPENPROGRAM_HOME"] = str(Path(folder, "home"))  # no user configuration
        recording = Path(folder, "recording.jsonl")
        run_session(recording, "once", prompts(calls, drifted=False))
        size = recording.stat().st_size / 1e6
        print(f"{calls:,} calls, {size:.1f} MB; medians of {RUNS} runs, the cases alternating")
        times: list[list[float]] = [[] for _ in cases]
        for run in range(RUNS):
            for position, (_, mode, asked) in enumerate(cases):
                copy = Path(folder, f"run-{run}-{position}.jsonl")
                shutil.copyfile(recording, copy)
                start = time.perf_counter()
                run_session(copy, mode, asked)
                times[position].append(time.perf_counter() - start)
        medians = [statistics.median(found) for found in times]
        for (label, _, _), seconds in zip(cases, medians, strict=True):
            print(f"  {label:<34}{seconds:8.3f} s   {seconds / medians[0]:.2f}×")
    print(f"machine reference: {machine_reference():.0f} µs")


def prompts(calls: int, *, drifted: bool) -> list[str]:
    """The calls' prompts; with ``drifted``, one call in a hundred changed."""
    return [
        f"question {index}" + (" (changed)" if drifted and index % 100 == 99 else "")
        for index in range(calls)
    ]


def run_session(path: Path, mode: str, asked: list[str]) -> None:
    from openprogram.testing.recording_session import open_recording_session

    session = open_recording_session(
        path, record_mode=mode, display_path=path.name, test_argument="bench", environ={}
    )
    with session.installed():
        asyncio.run(ask_each(asked))
    problem = session.problem_after_call()
    if problem is not None and mode != "new_episodes":
        raise SystemExit(problem)
    session.finish(passed=True)


async def ask_each(asked: list[str]) -> None:
    from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

    for prompt in asked:
        await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=prompt)]))


if __name__ == "__main__":
    main()
