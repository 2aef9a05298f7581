"""What running a command in the isolated namespace costs, run by hand.

    python benchmarks/bench_isolation.py           # about a minute
    python benchmarks/bench_isolation.py --quick   # a smoke run of a few seconds

1. **Start-up**: ``true`` and ``python -c pass`` run directly, through the bridge alone
   (``bridge_argv``: the namespace, the packet observer, no relay) and through a relay with one
   bridged endpoint (``Relay.wrap``: a listener inside, and the report sent to the relay at
   the end), in alternating runs; the median wall time of each from ``subprocess.run`` to its
   end, what the namespace adds to the direct run (beside it, the direct run plus a bare
   start of the interpreter the bridge runs on, ``python -I -S -c pass``: the part of the
   cost that is Python's own start), and what it adds between the fastest runs
   of each (the floor, the least disturbed by a busy machine). Goal: at most +50 ms.
2. **Per request** to a loopback HTTP server outside (``http.server``, HTTP/1.1): a client
   written with ``http.client`` makes N requests on one keep-alive connection and N on a new
   connection each, run directly and inside the namespace with the server's endpoint bridged,
   alternately; the client times itself and prints the median per request.

Medians throughout; nothing is asserted. The first and last lines print the machine reference
(``benchmarks/machine_reference.py``): if they differ much, the machine was busy and the
figures are noisy.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from machine_reference import machine_reference

from openprogram.isolation import Endpoint, Relay, unavailable_reason
from openprogram.isolation.launch import bridge_argv

CLIENT = """
import http.client, json, statistics, sys, time
port, count = int(sys.argv[1]), int(sys.argv[2])
def timed(make):
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        make()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000
kept = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
kept.connect()
kept.sock.setsockopt(6, 1, 1)  # TCP_NODELAY: the request's head and body are one write anyway
def on_kept():
    kept.request("GET", "/kept")
    kept.getresponse().read()
def on_new():
    fresh = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    fresh.request("GET", "/new")
    fresh.getresponse().read()
    fresh.close()
print(json.dumps({"kept": timed(on_kept), "new": timed(on_new)}))
"""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # the head and the body are two writes: without this, a delayed ACK holds the body
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def _alternate(ways: dict[str, Callable[[], float]], runs: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in ways}
    for way in ways.values():  # one warm-up each
        way()
    for _ in range(runs):
        for name, way in ways.items():
            samples[name].append(way())
    return samples


def startup(relay: Relay, runs: int) -> None:
    print("1. start-up (median ms of", runs, "alternated runs)")
    for label, command in (("true", ["true"]), ("python -c pass", [sys.executable, "-c", "pass"])):
        ways = {
            "direct": lambda c=command: _wall(c),
            "+ python -I -S": lambda c=command: (
                _wall([sys.executable, "-I", "-S", "-c", "pass"]) + _wall(c)
            ),
            "bridge alone": lambda c=command: _wall(bridge_argv(c)),
            "relay.wrap": lambda c=command: _wall(relay.wrap(c)),
        }
        samples = _alternate(ways, runs)
        direct = statistics.median(samples["direct"])
        fastest = min(samples["direct"])
        for name, values in samples.items():
            median = statistics.median(values)
            added = "" if name == "direct" else f"  (+{median - direct:.1f} ms)"
            floor = "" if name == "direct" else f"; fastest run +{min(values) - fastest:.1f} ms"
            print(f"   {label:<16} {name:<15} {median:7.1f} ms{added}{floor}")


def per_request(relay: Relay, port: int, runs: int, count: int) -> None:
    print(f"2. per request to a loopback HTTP server ({count} requests a run, {runs} runs)")
    client = [sys.executable, "-c", CLIENT, str(port), str(count)]

    def measured(argv: list[str]) -> dict[str, float]:
        done = subprocess.run(argv, check=True, capture_output=True, text=True)
        result: dict[str, float] = json.loads(done.stdout)
        return result

    results: dict[str, list[dict[str, float]]] = {"direct": [], "bridged": []}
    for _ in range(runs):
        results["direct"].append(measured(client))
        results["bridged"].append(measured(relay.wrap(client)))
    for kind, label in (("kept", "keep-alive"), ("new", "new connection")):
        direct = statistics.median(run[kind] for run in results["direct"])
        bridged = statistics.median(run[kind] for run in results["bridged"])
        print(
            f"   {label:<15} direct {direct:6.3f} ms  bridged {bridged:6.3f} ms"
            f"  (+{bridged - direct:.3f} ms)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few runs")
    quick = parser.parse_args().quick
    reason = unavailable_reason()
    if reason is not None:
        sys.exit(f"bench_isolation: no namespace here: {reason}")
    print(f"machine reference: {machine_reference():.1f} µs")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = int(server.server_address[1])
    with Relay([Endpoint("127.0.0.1", port)]) as relay:
        startup(relay, 5 if quick else 30)
        per_request(relay, port, 2 if quick else 7, 50 if quick else 300)
    server.shutdown()
    print(f"machine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
