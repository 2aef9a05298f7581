"""What ``pytest --openprogram-isolate`` adds to a test session's start, run by hand.

    python benchmarks/bench_pytest_isolate.py           # 15 alternated pairs; a few minutes
    python benchmarks/bench_pytest_isolate.py --runs 3  # a smoke run

A session of one empty test in a folder of its own (``python -m pytest -q -p
no:cacheprovider``), run without and with ``--openprogram-isolate``, alternately; the median
and the fastest wall time of each from ``subprocess.run`` to its end, and what isolation adds
to each. With the option pytest starts twice (the first start, outside, goes as far as
loading its plugins, then runs the same command inside the namespace), so the cost is close
to one start of pytest up to its plugins plus the namespace's own (``bench_isolation.py``).
Nothing is asserted. The first and last lines print the machine reference
(``benchmarks/machine_reference.py``): if they differ much, the machine was busy.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from machine_reference import machine_reference

from openprogram.isolation import unavailable_reason


def _timed(argv: list[str], folder: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return elapsed * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="alternated pairs (default 15)")
    runs = parser.parse_args().runs
    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"no namespace can be made here: {reason}")
    print(f"machine reference: {machine_reference():.1f} µs")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "test_one.py").write_text("def test_one():\n    pass\n")
        env = {**os.environ, "OPENPROGRAM_HOME": str(root / "home")}
        base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
        plain: list[float] = []
        isolated: list[float] = []
        for _ in range(runs):
            plain.append(_timed(base, root, env))
            isolated.append(_timed([*base, "--openprogram-isolate"], root, env))
    for name, samples in (("without", plain), ("with --openprogram-isolate", isolated)):
        median = statistics.median(samples)
        print(f"{name:28} median {median:7.0f} ms   fastest {min(samples):7.0f} ms")
    added = statistics.median(isolated) - statistics.median(plain)
    print(f"{'added':28} median {added:+7.0f} ms   fastest {min(isolated) - min(plain):+7.0f} ms")
    print(f"machine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
