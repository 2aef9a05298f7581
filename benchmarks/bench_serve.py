"""What ``openprogram serve`` adds between a client and its upstream, run by hand.

    python benchmarks/bench_serve.py           # full sizes (about a minute)
    python benchmarks/bench_serve.py --quick   # small sizes, a smoke run

Everything runs on loopback, each server in a process of its own as a user runs it:

* an upstream defined in this script (aiohttp, started as ``bench_serve.py
  --upstream-server``) answering ``POST /v1/chat/completions`` with a small JSON completion,
  or, for ``stream: true``, with Chat Completions SSE events, one chunked write per event:
  how many and how far apart the request's own extra fields say (``bench_events``,
  ``bench_gap_ms``), and each event's ``bench_sent`` holds the upstream's ``time.monotonic()``
  as it wrote it;
* ``python -m openprogram serve --port 0 --quiet`` in front of it (``--record`` into a new
  recording, then ``--replay`` of it, the upstream left running), with an
  ``OPENPROGRAM_HOME`` of its own;
* this script's clients: httpx, keep-alive.

1. **Per-request overhead**: N requests one after another from one ``httpx.Client``, a
   non-streamed completion and a streamed one of 20 events, straight to the upstream and
   through ``serve --record`` in alternating runs of N; then straight and through ``serve
   --replay`` of that recording (the same request bodies), alternating again. Median ms per
   request, the range of the runs' medians, the overhead over the straight requests of the
   same phase; and how many requests reached the upstream during the replay phase (serve's
   share must be 0).
2. **Latency per SSE event** under record: streams of 200 events 2 ms apart, straight and
   through ``serve --record`` alternately. Per event, its arrival at the client (the read that
   brought it) less the moment the upstream wrote it: CLOCK_MONOTONIC is one clock for every
   process on Linux. Median and p95 of each, their difference (what serve adds to an event),
   and the time from the request's start to the response's head and to its first event.
3. **50 concurrent streams** of 20 events 2 ms apart (``asyncio``, one ``httpx.AsyncClient``):
   straight, through ``serve --record``, then replayed through ``serve --replay``; failed
   streams, wall time, the calls in the recording and each server's exit status.

Medians throughout; nothing is asserted. The first and last lines print the machine reference
(``benchmarks/machine_reference.py``): if they differ much, the machine was busy and the
figures are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import IO, Any

import httpx
import orjson

from openprogram.recording import read_recording

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]
HEADERS = {
    "content-type": "application/json",
    "authorization": "Bearer sk-bench-0123456789abcdefghijklmnop",
}
COUNT_PATH = "/__bench/served"
DONE = b"data: [DONE]\n\n"


# --- the upstream (a process of its own) -----------------------------------------------------


def chunk(index: int, last: bool) -> dict[str, Any]:
    delta = {} if last else {"content": WORDS[index % len(WORDS)]}
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1767225600,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "finish_reason": "stop" if last else None}],
    }


REPLY = orjson.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(WORDS)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
    }
)


def upstream_server() -> None:
    """Serve until SIGTERM; the port goes to stdout first."""
    from aiohttp import web

    served = 0

    async def completions(request: web.Request) -> web.StreamResponse:
        nonlocal served
        served += 1
        body = orjson.loads(await request.read())
        if not body.get("stream"):
            return web.Response(body=REPLY, content_type="application/json")
        events = int(body.get("bench_events", 20))
        gap = float(body.get("bench_gap_ms", 0)) / 1000
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        for index in range(events):
            if index and gap:
                await asyncio.sleep(gap)  # the first event leaves with the head
            event = chunk(index, last=index == events - 1)
            event["bench_sent"] = time.monotonic()
            await response.write(b"data: " + orjson.dumps(event) + b"\n\n")
        await response.write(DONE)
        await response.write_eof()
        return response

    async def count(request: web.Request) -> web.Response:
        return web.json_response({"served": served})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get(COUNT_PATH, count)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1024)
    print(listener.getsockname()[1], flush=True)
    web.run_app(app, sock=listener, print=None, access_log=None)


# --- the processes, seen from the benchmark ------------------------------------------------


def environment(home: Path) -> dict[str, str]:
    """This environment with an ``OPENPROGRAM_HOME`` of its own and no proxy variables."""
    kept = {name: value for name, value in os.environ.items() if "proxy" not in name.lower()}
    return {**kept, "OPENPROGRAM_HOME": str(home), "NO_COLOR": "1"}


class Upstream:
    def __init__(self, folder: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--upstream-server"],
            env=environment(folder / "upstream-home"),
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        port = self.process.stdout.readline().strip()
        if not port:
            raise RuntimeError("the upstream did not start")
        self.url = f"http://127.0.0.1:{port}"
        self.completions = f"{self.url}/v1/chat/completions"

    def served(self) -> int:
        return int(httpx.get(self.url + COUNT_PATH, trust_env=False).json()["served"])

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=30)


STARTED: list[Serve] = []
"""Every serve process started, stopped at the end if something failed on the way."""


class Serve:
    """``python -m openprogram serve --port 0 --quiet ARGS``, read up to its URL line."""

    def __init__(self, folder: Path, upstream: Upstream, *args: str) -> None:
        home = Path(tempfile.mkdtemp(prefix="home-", dir=folder))
        self.stderr: IO[str] = open(home / "serve-stderr.txt", "w+")  # noqa: SIM115
        command = [sys.executable, "-m", "openprogram", "serve", "--port", "0", "--quiet"]
        command += [*args, "--upstream", f"openai={upstream.url}"]
        started = time.perf_counter()
        self.process = subprocess.Popen(
            command,
            env=environment(home),
            cwd=home,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )
        STARTED.append(self)
        assert self.process.stdout is not None
        self.url = ""
        for line in self.process.stdout:
            name, _, value = line.strip().partition("=")
            if name == "OPENPROGRAM_SERVE_URL":
                self.url = value
                break
        if not self.url:
            self.stop()
            raise RuntimeError(f"serve did not start: {self.said}")
        self.start_ms = (time.perf_counter() - started) * 1000
        self.completions = f"{self.url}/v1/chat/completions"

    @property
    def said(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().strip()

    def stop(self) -> int:
        """SIGTERM; its exit status once it finished its recording."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        self.process.communicate(timeout=120)
        return self.process.returncode

    def stop_and_say(self, label: str) -> int:
        status = self.stop()
        said = " / ".join(line for line in self.said.splitlines() if line.strip())
        print(f"   serve {label}: exit {status}; {said or 'said nothing'}")
        self.stderr.close()
        return status


# --- the clients ---------------------------------------------------------------------------


def request_body(tag: str, stream: bool, events: int = 20, gap_ms: float = 0) -> bytes:
    body: dict[str, Any] = {
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": f"Tell me a story ({tag})."}],
    }
    if stream:
        body.update(stream=True, bench_events=events, bench_gap_ms=gap_ms)
    return orjson.dumps(body)


def call(client: httpx.Client, url: str, body: bytes, stream: bool) -> float:
    """One request read to its end; ms."""
    start = time.perf_counter_ns()
    if stream:
        with client.stream("POST", url, content=body, headers=HEADERS) as response:
            data = b"".join(response.iter_raw())
        ok = response.status_code == 200 and data.endswith(DONE)
    else:
        response = client.post(url, content=body, headers=HEADERS)
        ok = response.status_code == 200
        data = response.content
    elapsed = (time.perf_counter_ns() - start) / 1e6
    if not ok:
        raise RuntimeError(f"{url}: {response.status_code} {data[:400]!r}")
    return elapsed


def span(values: list[float]) -> str:
    return f"{min(values):.3f}–{max(values):.3f}"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


# --- 1. per-request overhead -----------------------------------------------------------------

KINDS = {"JSON": False, "SSE 20": True}


def per_request(folder: Path, upstream: Upstream, count: int, rounds: int) -> None:
    print(
        f"\n1. per request, one after another on one keep-alive connection ({rounds} runs of"
        f" {count} each, alternating with straight runs)"
    )
    warm = 5
    path = folder / "per-request.jsonl"

    def bodies(tag: str, stream: bool, how_many: int) -> list[bytes]:
        return [request_body(f"{tag}-{n}", stream) for n in range(how_many)]

    times: dict[tuple[str, str], list[list[float]]] = {}

    def phase(via: str, serve: Serve, client: httpx.Client) -> None:
        for kind, stream in KINDS.items():
            for body in bodies(f"warm-{kind}", stream, warm):
                call(client, upstream.completions, body, stream)
                call(client, serve.completions, body, stream)
        for round_ in range(rounds):
            for kind, stream in KINDS.items():
                sent = bodies(f"{round_}-{kind}", stream, count)
                for target, url in (("straight", upstream.completions), (via, serve.completions)):
                    run = [call(client, url, body, stream) for body in sent]
                    times.setdefault((kind, f"{target} ({via})"), []).append(run)

    record = Serve(folder, upstream, "--record", str(path))
    print(f"   serve --record started in {record.start_ms:.0f} ms")
    with httpx.Client(trust_env=False, timeout=60) as client:
        phase("record", record, client)
    record.stop_and_say("--record")
    calls = len(read_recording(path).calls)
    replay = Serve(folder, upstream, "--replay", str(path))
    print(f"   serve --replay started in {replay.start_ms:.0f} ms ({calls} calls recorded)")
    before = upstream.served()
    with httpx.Client(trust_env=False, timeout=60) as client:
        phase("replay", replay, client)
    reached = upstream.served() - before
    replay.stop_and_say("--replay")
    straight = len(KINDS) * (warm + rounds * count)
    print(
        f"   requests reaching the upstream during the replay phase: {reached} "
        f"(the straight ones: {straight}; from serve: {reached - straight})"
    )

    print(
        f"\n   {'request':<8} {'path':<19} {'median ms':>10} {'runs medians':>15} {'added ms':>9}"
    )
    for kind in KINDS:
        for via in ("record", "replay"):
            base = [t for run in times[(kind, f"straight ({via})")] for t in run]
            for target in ("straight", via):
                runs = times[(kind, f"{target} ({via})")]
                every = [t for run in runs for t in run]
                medians = [statistics.median(run) for run in runs]
                added = statistics.median(every) - statistics.median(base)
                shown = "" if target == "straight" else f"{added:+9.3f}"
                print(
                    f"   {kind:<8} {target + ' (' + via + ')':<19} "
                    f"{statistics.median(every):10.3f} {span(medians):>15} {shown}"
                )


# --- 2. latency per SSE event ----------------------------------------------------------------


def timed_stream(client: httpx.Client, url: str, body: bytes) -> tuple[float, float, list[float]]:
    """ms from the request's start to the response's head and to its first event; each
    event's ms from the upstream's write to its arrival here."""
    arrived: list[tuple[float, bytes]] = []
    start = time.monotonic()
    with client.stream("POST", url, content=body, headers=HEADERS) as response:
        head = time.monotonic()
        pending = b""
        for piece in response.iter_raw():
            now = time.monotonic()
            *events, pending = (pending + piece).split(b"\n\n")
            arrived.extend((now, event) for event in events if event.startswith(b"data: {"))
    if response.status_code != 200:
        raise RuntimeError(f"{url}: {response.status_code}")
    latencies = [(now - orjson.loads(event[6:])["bench_sent"]) * 1000 for now, event in arrived]
    return (head - start) * 1000, (arrived[0][0] - start) * 1000, latencies


def per_event(folder: Path, upstream: Upstream, events: int, gap_ms: float, rounds: int) -> None:
    print(
        f"\n2. latency per SSE event: streams of {events} events {gap_ms:g} ms apart, "
        f"{rounds} of each, alternating"
    )
    record = Serve(folder, upstream, "--record", str(folder / "per-event.jsonl"))
    found: dict[str, dict[str, list[float]]] = {
        path: {"head": [], "first": [], "event": []} for path in ("straight", "record")
    }
    with httpx.Client(trust_env=False, timeout=60) as client:
        for n in range(rounds + 1):
            body = request_body(f"events-{n}", True, events, gap_ms)
            for path, url in (("straight", upstream.completions), ("record", record.completions)):
                head, first, latencies = timed_stream(client, url, body)
                if len(latencies) != events:
                    raise RuntimeError(f"{path}: {len(latencies)} events, not {events}")
                if n:  # the first round warms up
                    found[path]["head"].append(head)
                    found[path]["first"].append(first)
                    found[path]["event"].extend(latencies)
    record.stop_and_say("--record")
    print(
        f"   {'path':<9} {'event median':>13} {'event p95':>10} {'event max':>10} "
        f"{'to head':>8} {'to 1st event':>13}   (ms)"
    )
    for path, figures in found.items():
        print(
            f"   {path:<9} {statistics.median(figures['event']):13.3f} "
            f"{p95(figures['event']):10.3f} {max(figures['event']):10.3f} "
            f"{statistics.median(figures['head']):8.3f} "
            f"{statistics.median(figures['first']):13.3f}"
        )
    straight, recorded = found["straight"], found["record"]
    added = statistics.median(recorded["event"]) - statistics.median(straight["event"])
    added_p95 = p95(recorded["event"]) - p95(straight["event"])
    added_first = statistics.median(recorded["first"]) - statistics.median(straight["first"])
    print(
        f"   serve --record adds per event: {added * 1000:+.0f} µs at the median, "
        f"{added_p95 * 1000:+.0f} µs at p95; to the first event {added_first:+.3f} ms"
    )


# --- 3. concurrent streams -------------------------------------------------------------------


async def gathered(url: str, bodies: list[bytes], events: int) -> tuple[float, list[str]]:
    """Every body sent at once; the wall time (ms) and what went wrong."""
    limits = httpx.Limits(max_connections=len(bodies), max_keepalive_connections=len(bodies))
    async with httpx.AsyncClient(trust_env=False, timeout=60, limits=limits) as client:

        async def one(body: bytes) -> None:
            async with client.stream("POST", url, content=body, headers=HEADERS) as response:
                data = b"".join([piece async for piece in response.aiter_raw()])
            if response.status_code != 200 or not data.endswith(DONE):
                raise RuntimeError(f"status {response.status_code}, {data[-200:]!r}")
            if data.count(b"data: {") != events:
                raise RuntimeError(f"{data.count(b'data: {')} events, not {events}")

        start = time.perf_counter()
        results = await asyncio.gather(*(one(body) for body in bodies), return_exceptions=True)
        wall = (time.perf_counter() - start) * 1000
    return wall, [f"{type(r).__name__}: {r}" for r in results if isinstance(r, BaseException)]


def concurrent(folder: Path, upstream: Upstream, streams: int, events: int, gap_ms: float) -> None:
    print(
        f"\n3. {streams} concurrent streams of {events} events {gap_ms:g} ms apart "
        f"(one stream alone takes ≥ {(events - 1) * gap_ms:g} ms)"
    )
    path = folder / "concurrent.jsonl"
    bodies = [request_body(f"concurrent-{n}", True, events, gap_ms) for n in range(streams)]
    warm = request_body("concurrent-warm", True, events, gap_ms)

    def report(label: str, wall: float, errors: list[str]) -> None:
        print(f"   {label:<22} wall {wall:8.1f} ms, failed streams: {len(errors)}")
        for error, times in Counter(errors).most_common(3):
            print(f"      {times} × {error[:200]}")

    with httpx.Client(trust_env=False, timeout=60) as client:
        call(client, upstream.completions, warm, True)
    report("straight", *asyncio.run(gathered(upstream.completions, bodies, events)))
    for mode in ("record", "replay"):
        serve = Serve(folder, upstream, f"--{mode}", str(path))
        with httpx.Client(trust_env=False, timeout=60) as client:
            call(client, serve.completions, warm, True)  # the first request loads modules
        report(f"through serve --{mode}", *asyncio.run(gathered(serve.completions, bodies, events)))
        serve.stop_and_say(f"--{mode}")
        if mode == "record":
            calls = read_recording(path).calls
            outcomes = Counter(str(c.outcome) for c in calls)
            ends = path.read_bytes().count(b'"type":"call_end"')
            print(
                f"   the recording: {len(calls)} calls (1 warm-up + {streams}), {ends} call_end "
                f"rows, outcomes {dict(outcomes)}"
            )


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument("--upstream-server", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.upstream_server:
        upstream_server()
        return
    count, rounds, events, event_rounds, streams = (
        (20, 3, 50, 3, 50) if args.quick else (200, 5, 200, 10, 50)
    )
    print(f"machine reference: {machine_reference():.1f} µs")
    print(
        f"python {sys.version.split()[0]}, httpx {httpx.__version__}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        upstream = Upstream(folder)
        try:
            per_request(folder, upstream, count, rounds)
            per_event(folder, upstream, events, 2, event_rounds)
            concurrent(folder, upstream, streams, 20, 2)
        finally:
            for serve in STARTED:
                if serve.process.poll() is None:
                    serve.stop()
            upstream.stop()
    print(f"\nmachine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
