"""Wall time of the commands people run most, against the floor set by their dependencies.

    python benchmarks/bench_cli.py [--runs N]

Runs, interleaved so that machine noise hits each alike:

* ``python -c "import typer, rich, pydantic_settings, tomlkit, orjson"`` — the floor: a
  command built on these libraries cannot start faster than importing them;
* ``openprogram recordings status`` (mode off, and mode replay on a 200-call recording);
* ``openprogram recordings list`` of an empty store;
* ``openprogram --help``.

Prints the median wall time of each and its ratio to the floor (target: within 1.2×).

openprogram's own modules are byte-compiled first, as ``pip install`` does for an
installed package (the floor's libraries are already compiled; this machine sets
``PYTHONDONTWRITEBYTECODE``, so an editable checkout would otherwise recompile every run).
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

FLOOR = [sys.executable, "-c", "import typer, rich, pydantic_settings, tomlkit, orjson"]
OPENPROGRAM = [sys.executable, "-m", "openprogram"]


def wall_time(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    return time.perf_counter() - started


def make_replay_home(home: Path, calls: int) -> None:
    """A store with a ``calls``-call echo recording, and a config replaying it."""
    from openprogram.recording.format import encode_row, new_header

    store = home / "recordings"
    store.mkdir(parents=True)
    rows = [new_header("bench")]
    for index in range(calls):
        rows.append(
            {
                "type": "request",
                "call_index": index,
                "model": {"id": "echo", "api": "echo", "provider": "echo"},
                "context": {"messages": [{"role": "user", "content": f"call {index}"}]},
                "options": {},
            }
        )
        events = [
            {"type": "start"},
            {"type": "text_start", "content_index": 0},
            {"type": "text_delta", "content_index": 0, "delta": f"echo:call {index}"},
            {"type": "text_end", "content_index": 0, "content": f"echo:call {index}"},
        ]
        for event_index, event in enumerate(events):
            rows.append(
                {"type": "event", "call_index": index, "event_index": event_index, "event": event}
            )
        rows.append(
            {"type": "call_end", "call_index": index, "event_count": 4, "outcome": "complete"}
        )
    (store / "bench.jsonl").write_bytes(b"".join(encode_row(row) for row in rows))
    (home / "config.toml").write_text('[record_replay]\nmode = "replay"\nfile = "bench"\n')


def compile_openprogram() -> None:
    import compileall

    import openprogram

    compileall.compile_dir(Path(openprogram.__file__).parent, quiet=1)


def main() -> None:
    compile_openprogram()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        off_home, replay_home = Path(folder) / "off", Path(folder) / "replay"
        off_home.mkdir()
        make_replay_home(replay_home, calls=200)
        base = {**os.environ, "NO_COLOR": "1"}
        cases = {
            "floor: import typer, rich, pydantic_settings, tomlkit, orjson": (FLOOR, off_home),
            "openprogram recordings status (off)": (
                [*OPENPROGRAM, "recordings", "status"],
                off_home,
            ),
            "openprogram recordings status (replay, 200 calls)": (
                [*OPENPROGRAM, "recordings", "status"],
                replay_home,
            ),
            "openprogram recordings list (empty store)": (
                [*OPENPROGRAM, "recordings", "list"],
                off_home,
            ),
            "openprogram --help": ([*OPENPROGRAM, "--help"], off_home),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):
            for name, (command, home) in cases.items():
                times[name].append(wall_time(command, {**base, "OPENPROGRAM_HOME": str(home)}))
    floor = statistics.median(next(iter(times.values())))
    print(f"{'command':<52} {'median':>9} {'vs floor':>9}   ({runs} runs each, interleaved)")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"{name:<52} {median * 1000:>7.0f}ms {median / floor:>8.2f}x")


if __name__ == "__main__":
    main()
