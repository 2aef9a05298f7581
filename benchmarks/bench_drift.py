"""What a drift check costs beyond the provider's own time, run by hand.

    python benchmarks/bench_drift.py           # a 1,000-call recording (about a minute)
    python benchmarks/bench_drift.py --quick   # 100 calls, a smoke run

A loopback server (``http.server`` on 127.0.0.1, HTTP/1.1 keep-alive) answers every request
with a prepared Chat Completions stream of 20 deltas. A recording of N such calls (written
row by row, as the HTTP boundary writes them) is then checked, alternating so that the
machine's load falls on both alike (medians of 3 runs each):

1. **the server alone**: one ``httpx.Client`` sending the N recorded requests one after
   another and reading each stream — the time a drift check cannot go below;
2. **drift**: ``check_drift`` of the recording, one call at a time (``concurrency=1``), and
   with the default concurrency of 4 — the per-call overhead is (drift − server alone) / N;
3. **the comparison alone**: ``answer_drift`` of each recorded answer against itself,
   already parsed, for streams of 20, 200 and 2,000 deltas — per call and per delta (the
   cost is linear in the answer's size when the per-delta figure stays flat);
4. **memory**: the peak traced by ``tracemalloc`` during one drift check at concurrency 1,
   and per call.

The first and last lines print the machine reference (``benchmarks/machine_reference.py``):
if they differ much, the machine was busy and the figures are noisy.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import tempfile
import threading
import time
import tracemalloc
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import orjson

from openprogram.drift.check import check_drift
from openprogram.drift.comparison import answer_drift, answer_of_rows
from openprogram.drift.credentials import Credentials
from openprogram.drift.origins import origin_of, parse_base_urls
from openprogram.recording import read_recording
from openprogram.recording.format import encode_row, new_header

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]


def chunks(deltas: int) -> list[dict[str, Any]]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1767225600,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": WORDS[i % len(WORDS)]}) for i in range(deltas)]
    events.append(chunk({}, "stop"))
    return events


def answer_rows(deltas: int) -> list[dict[str, Any]]:
    head = {
        "type": "http_response",
        "status": 200,
        "headers": {"content-type": "text/event-stream"},
    }
    return [head, *({"type": "sse", "data": event} for event in chunks(deltas))]


REQUEST = {"method": "POST", "url": "http://127.0.0.1/v1/chat/completions", "body": {}}


def stream_bytes(deltas: int) -> bytes:
    parts = [b"data: " + orjson.dumps(event) + b"\n\n" for event in chunks(deltas)]
    return b"".join(parts) + b"data: [DONE]\n\n"


def write_recording(path: Path, calls: int, url: str, deltas: int) -> None:
    lines = [encode_row(new_header("bench"))]
    for index in range(calls):
        body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": f"q{index}"}]}
        lines.append(
            encode_row(
                {
                    "type": "request",
                    "call_index": index,
                    "boundary": "http",
                    "method": "POST",
                    "url": url,
                    "headers": {"content-type": "application/json"},
                    "body": {**body, "stream": True},
                }
            )
        )
        events = [*answer_rows(deltas), {"type": "sse", "data": "[DONE]"}]
        for position, event in enumerate(events):
            row = {"type": "event", "call_index": index, "event_index": position, "event": event}
            lines.append(encode_row(row))
        end = {"type": "call_end", "call_index": index, "event_count": len(events)}
        lines.append(encode_row({**end, "outcome": "complete"}))
    path.write_bytes(b"".join(lines))


class Server:
    def __init__(self, body: bytes) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/chat/completions"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    calls = 100 if args.quick else 1000
    print(f"machine reference: {machine_reference():.1f} µs")
    credentials = Credentials({"OPENAI_API_KEY": "sk-bench-0123456789abcdefghij"})
    server = Server(stream_bytes(20))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.jsonl"
        write_recording(path, calls, server.url, 20)
        recording = read_recording(path)
        requests = [call.request for call in recording.calls]
        # the loopback server is trusted as OpenAI's API, as a user names one
        trusted = parse_base_urls([f"openai={origin_of(server.url)}"])

        def server_alone() -> None:
            with httpx.Client() as client:
                for request in requests:
                    client.post(request["url"], content=orjson.dumps(request["body"])).read()

        def drift(concurrency: int) -> Callable[[], object]:
            def run() -> None:
                report = check_drift(
                    recording,
                    credentials=credentials,
                    base_urls=trusted,
                    concurrency=concurrency,
                )
                assert report.counts()["unchanged"] == calls, report.counts()

            return run

        times: dict[str, list[float]] = {"server alone": [], "drift ×1": [], "drift ×4": []}
        for _ in range(3):
            times["server alone"].append(timed(server_alone))
            times["drift ×1"].append(timed(drift(1)))
            times["drift ×4"].append(timed(drift(4)))
        medians = {name: statistics.median(values) for name, values in times.items()}
        print(f"\n{calls} calls of 20 deltas against a loopback server (medians of 3)")
        print(f"{'':>14} {'total s':>9} {'ms/call':>9}")
        for name, value in medians.items():
            print(f"{name:>14} {value:9.2f} {value / calls * 1000:9.3f}")
        overhead = (medians["drift ×1"] - medians["server alone"]) / calls * 1000
        print(f"drift's own cost per call (×1 − server alone): {overhead:.3f} ms")

        tracemalloc.start()
        drift(1)()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        per_call = peak / calls / 1e3
        print(f"memory: peak {peak / 1e6:.1f} MB traced during one check, {per_call:.1f} kB a call")
    server.stop()

    print("\nthe comparison alone, per call (medians of 5 passes)")
    print(f"{'deltas':>8} {'µs/call':>10} {'µs/delta':>10}")
    for deltas in (20, 200, 2000):
        rows = answer_rows(deltas)
        repeat = max(1, 2000 // deltas)

        def compare(rows: list[dict[str, Any]] = rows, repeat: int = repeat) -> None:
            for _ in range(repeat):
                answer_drift(REQUEST, answer_of_rows(rows), answer_of_rows(rows))

        per_call = statistics.median(timed(compare) for _ in range(5)) / repeat * 1e6
        print(f"{deltas:>8} {per_call:10.1f} {per_call / deltas:10.2f}")
    print(f"\nmachine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
