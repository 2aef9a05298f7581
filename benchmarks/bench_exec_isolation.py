"""What the isolated namespace costs ``openprogram exec --replay`` as a user runs it, by hand.

    python benchmarks/bench_exec_isolation.py            # about two minutes
    python benchmarks/bench_exec_isolation.py --quick    # a smoke run

A Python program makes N HTTP calls through ``urllib`` (captured in-process); it is recorded
once against a loopback server for N = 1 and N = 50, then replayed with the server stopped,
by ``openprogram exec --replay`` as it runs by default (in a loopback-only namespace) and with
``--no-isolate``, in alternating runs. Printed: the median wall time of each, what the
namespace adds to a run (goal: at most +50 ms), and the cost of one call served from the
recording, ``(t(50) - t(1)) / 49``, isolated and not (goal: nothing measurable — those calls
never leave the process). Medians throughout; nothing is asserted. The first and last lines
print the machine reference (``benchmarks/machine_reference.py``): if they differ much, the
machine was busy and the figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from machine_reference import machine_reference

from openprogram.isolation import unavailable_reason

AGENT = """\
import json, sys, urllib.request
url, count = sys.argv[1], int(sys.argv[2])
for number in range(count):
    request = urllib.request.Request(url, data=json.dumps({"n": number}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        answer.read()
"""


class _Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _exec(*arguments: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "exec", *arguments],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"exec {' '.join(arguments)} failed: {done.stderr.strip()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few runs only")
    runs = 3 if parser.parse_args().quick else 11
    reason = unavailable_reason()
    if reason is not None:
        raise SystemExit(f"no namespace can be made here: {reason}")
    print("machine reference:", machine_reference())
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "OPENPROGRAM_HOME": str(Path(folder) / "home")}
        agent = Path(folder) / "agent.py"
        agent.write_text(AGENT)
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"
        for count in (1, 50):
            recording = str(Path(folder) / f"calls-{count}.jsonl")
            _exec("--record", recording, "--", sys.executable, str(agent), url, str(count), env=env)
        server.shutdown()
        server.server_close()
        times: dict[tuple[int, bool], list[float]] = {}
        for _ in range(runs):
            for count in (1, 50):
                for isolated in (True, False):
                    recording = str(Path(folder) / f"calls-{count}.jsonl")
                    flags = () if isolated else ("--no-isolate",)
                    command = ("--", sys.executable, str(agent), url, str(count))
                    elapsed = _exec("--replay", recording, *flags, *command, env=env)
                    times.setdefault((count, isolated), []).append(elapsed)
    median = {key: statistics.median(values) * 1000 for key, values in times.items()}
    print(f"exec --replay, median of {runs} alternated runs (ms)")
    print(f"{'calls':>6} {'isolated':>10} {'--no-isolate':>13} {'added':>8}")
    for count in (1, 50):
        isolated, plain = median[count, True], median[count, False]
        print(f"{count:>6} {isolated:>10.1f} {plain:>13.1f} {isolated - plain:>+8.1f}")
    for isolated in (True, False):
        per_call = (median[50, isolated] - median[1, isolated]) / 49
        print(f"one call served from the recording, {'isolated' if isolated else 'not'}: "
              f"{per_call:.2f} ms")  # fmt: skip
    print("machine reference:", machine_reference())


if __name__ == "__main__":
    main()
