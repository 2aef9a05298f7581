"""Benchmark of the connection watch under ``exec --record``, run by hand: what it costs a
command per system call it stops.

    python benchmarks/bench_connect_watch.py           # about 20 s
    python benchmarks/bench_connect_watch.py --quick   # a smoke run

A child Python process makes many calls of one kind, timed inside the child (its start is
not counted), once under the watch (:class:`~openprogram.isolation.connect_watch.ConnectWatch`:
the seccomp filter, exec's thread answering each notification) and once without, the two
runs alternated, median of several; the difference divided by the calls is the cost of one:

* a TCP ``connect`` to a loopback listener (socket made and closed each time), and one to
  a loopback port that refuses it at once;
* a UDP ``sendto`` naming its destination (a metrics client's datagram);
* a ``send`` on a connected TCP socket (not stopped by the filter: should cost nothing).

Also the cost of starting a command under the watch (``true``, median of alternated runs):
the filter's installation, the hand-over of its listener and the keeper's start.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

from openprogram.isolation.connect_watch import ConnectWatch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

CHILD = """
import socket, sys, time
kind, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
start = time.perf_counter()
if kind == "connect":
    for _ in range(count):
        sock = socket.socket()
        sock.connect(("127.0.0.1", port))
        sock.close()
elif kind == "refused":
    for _ in range(count):
        sock = socket.socket()
        sock.connect_ex(("127.0.0.1", port))
        sock.close()
elif kind == "sendto":
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for _ in range(count):
        sock.sendto(b"x", ("127.0.0.1", port))
else:
    sock = socket.create_connection(("127.0.0.1", port))
    start = time.perf_counter()  # the sends alone
    for _ in range(count):
        sock.send(b"x")
print(time.perf_counter() - start)
"""


SERVERS = """
import socket, sys, threading
server = socket.socket()  # accepts and closes at once
server.bind(("127.0.0.1", 0))
server.listen(4096)
sink = socket.socket()  # accepts and reads until the client closes
sink.bind(("127.0.0.1", 0))
sink.listen(64)
datagrams = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
datagrams.bind(("127.0.0.1", 0))
closed = socket.socket()
closed.bind(("127.0.0.1", 0))  # bound, never listening: a connect to it is refused at once
def drain(connection):
    with connection:
        while connection.recv(65536):
            pass
def accept():
    while True:
        server.accept()[0].close()
def accept_sink():
    while True:
        threading.Thread(target=drain, args=(sink.accept()[0],), daemon=True).start()
def drop():
    while True:
        datagrams.recv(64)
for target in (accept, accept_sink, drop):
    threading.Thread(target=target, daemon=True).start()
sockets = (server, datagrams, closed, sink)
print(*(each.getsockname()[1] for each in sockets), flush=True)
sys.stdin.read()
"""
"""TCP listeners that accept and close, or accept and drain, a UDP socket that drops what
comes and a port that refuses, in a process of their own (so that their threads do not share
the interpreter of the watch's thread), until their standard input closes."""


def timed(kind: str, port: int, count: int, *, watched: bool) -> float:
    argv = [sys.executable, "-I", "-c", CHILD, kind, str(port), str(count)]
    if not watched:
        return float(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    with ConnectWatch() as watch:
        done = subprocess.run(
            argv, capture_output=True, text=True, check=True, preexec_fn=watch.before_exec
        )
    return float(done.stdout)


def start_cost(runs: int) -> tuple[float, float]:
    """Median milliseconds to run ``true`` without and with the watch."""
    plain, watched = [], []
    for _ in range(runs):
        begin = time.perf_counter()
        subprocess.run(["true"], check=True)
        plain.append(time.perf_counter() - begin)
        begin = time.perf_counter()
        with ConnectWatch() as watch:
            subprocess.run(["true"], check=True, preexec_fn=watch.before_exec)
        watched.append(time.perf_counter() - begin)
    return statistics.median(plain) * 1e3, statistics.median(watched) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few calls, one run")
    quick = parser.parse_args().quick
    unwatched = ConnectWatch().unwatched
    if unwatched is not None:
        sys.exit(f"no connection watch here: {unwatched}")
    count, runs = (200, 1) if quick else (3000, 5)
    servers = subprocess.Popen(
        [sys.executable, "-I", "-c", SERVERS],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert servers.stdout is not None
    tcp, udp, closed, sink = map(int, servers.stdout.readline().split())
    print(machine_reference())
    print(f"{count} calls per run, median of {runs} alternated runs, µs per call")
    print(f"{'call':<12}{'plain':>10}{'watched':>10}{'added':>10}")
    kinds = (("connect", tcp), ("refused", closed), ("sendto", udp), ("send", sink))
    for kind, port in kinds:
        plain, watched = [], []
        for _ in range(runs):
            plain.append(timed(kind, port, count, watched=False))
            watched.append(timed(kind, port, count, watched=True))
        cost = [statistics.median(times) / count * 1e6 for times in (plain, watched)]
        print(f"{kind:<12}{cost[0]:>10.1f}{cost[1]:>10.1f}{cost[1] - cost[0]:>10.1f}")
    plain_ms, watched_ms = start_cost(3 if quick else 15)
    print(f"start of `true`: {plain_ms:.1f} ms plain, {watched_ms:.1f} ms watched")
    servers.communicate("")


if __name__ == "__main__":
    main()
