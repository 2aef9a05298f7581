"""What recording and replaying cost at the HTTP boundary, side by side with vcrpy, run by hand.

    python benchmarks/bench_http_overhead.py           # full sizes (a few minutes)
    python benchmarks/bench_http_overhead.py --quick   # small sizes, a smoke run

A real loopback server (``http.server`` on 127.0.0.1, HTTP/1.1 keep-alive) answers every
request with prepared bytes: a streamed Chat Completions reply of 10, 200 or 2,000 deltas, or
a non-streamed one. Then, in one run, alternating so that the machine's load falls on all
alike (medians of each):

1. **recording**: the official ``openai`` SDK (given an ``httpx.Client``, so that vcrpy can
   record it too) calling the server bare, recorded by ``openprogram.record_replay()``, and
   recorded by vcrpy (``record_mode="all"``) — the overhead of each over the bare call, and per
   SSE event;
2. **replaying** the same calls: openprogram against vcrpy (``record_mode="none"``), both
   with the server stopped, against the bare live call;
3. **client libraries**: one streamed call of 200 deltas recorded and replayed through
   httpx, ``requests`` (urllib3), aiohttp and ``urllib.request`` (http.client): each one's
   replay and record time against its own bare live call and against httpx's.

Figures are medians in milliseconds of each tool's whole block (``with
openprogram.record_replay(…)`` or ``with vcr.use_cassette(…)`` around the one call: vcrpy
writes its cassette, and openprogram reads its recording for replay, there); ratios are to the
bare call. The first and last lines
print the machine reference (``benchmarks/machine_reference.py``): if they differ much, the
machine was busy and the figures are noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import socket
import statistics
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
import requests
import vcr

import openprogram

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_reference import machine_reference

WORDS = ["the ", "quick ", "brown ", "fox ", "jumps ", "over ", "a ", "lazy ", "dog. "]


def chat_stream(deltas: int) -> bytes:
    """A streamed chat completion of ``deltas`` word-sized deltas, as OpenAI writes it."""
    events = []
    for n in range(deltas):
        chunk = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "system_fingerprint": "fp_bench",
            "choices": [
                {
                    "index": 0,
                    "delta": {"content": WORDS[n % len(WORDS)]},
                    "logprobs": None,
                    "finish_reason": None,
                }
            ],
        }
        events.append(b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n")
    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    events.append(b"data: " + json.dumps(end, separators=(",", ":")).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return b"".join(events)


def chat_body() -> bytes:
    reply = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(WORDS)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 9, "completion_tokens": 9, "total_tokens": 18},
    }
    return json.dumps(reply).encode()


class Server:
    """A loopback server answering every POST with ``body`` (set before each batch)."""

    def __init__(self) -> None:
        owner = self
        self.body = b""
        self.content_type = "text/event-stream"

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                # Acknowledge at once: a client that writes its head and its body apart
                # would otherwise wait for a delayed ACK (40 ms) before the body leaves.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                self.rfile.read(int(self.headers.get("content-length", 0)))
                head = (
                    f"HTTP/1.1 200 OK\r\ncontent-type: {owner.content_type}\r\n"
                    f"content-length: {len(owner.body)}\r\n\r\n"
                ).encode()
                self.wfile.write(head + owner.body)  # one write: head and body together

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"

    def serve(self, deltas: int | None) -> None:
        if deltas is None:
            self.body, self.content_type = chat_body(), "application/json"
        else:
            self.body, self.content_type = chat_stream(deltas), "text/event-stream"


MESSAGES = [{"role": "user", "content": "Tell me a story."}]


def sdk_call(client: openai.OpenAI, streamed: bool) -> None:
    create: Any = client.chat.completions.create
    if streamed:
        for _ in create(model="gpt-4o-mini", messages=MESSAGES, stream=True):
            pass
    else:
        create(model="gpt-4o-mini", messages=MESSAGES)


def timed(run: Callable[[], None]) -> float:
    start = time.perf_counter_ns()
    run()
    return (time.perf_counter_ns() - start) / 1e6


def within(block: Callable[..., Any], call: Callable[[], None], *args: Any) -> Callable[[], None]:
    """``call`` run inside ``block(*args)`` (``mode=`` the second of two arguments)."""

    def run() -> None:
        opened = block(args[0], mode=args[1]) if len(args) == 2 else block(*args)
        with opened:
            call()

    return run


def median(values: list[float]) -> float:
    return statistics.median(values)


def recording_and_replay(
    server: Server, sizes: list[int | None], repeats: int, folder: Path
) -> None:
    print("\n1–2. the openai SDK (on httpx), one call: bare, recorded, replayed (median ms)")
    print(
        f"{'deltas':>8} {'bare':>8} {'op rec':>8} {'×':>5} {'vcr rec':>8} {'×':>5} "
        f"{'op play':>8} {'×':>5} {'vcr play':>8} {'×':>5} {'op µs/event':>12}"
    )
    http_client = httpx.Client()
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-bench", http_client=http_client)
    for deltas in sizes:
        server.serve(deltas)
        call = functools.partial(sdk_call, client, deltas is not None)
        times: dict[str, list[float]] = {k: [] for k in ("bare", "op", "vcr", "op_r", "vcr_r")}
        call()  # warm the connection
        for n in range(repeats):
            op_path = folder / f"op-{deltas}-{n}.jsonl"
            cassette = str(folder / f"vcr-{deltas}-{n}.yaml")
            # Each tool's whole block is timed: vcrpy writes its cassette when it closes.
            times["bare"].append(timed(call))
            times["op"].append(timed(within(openprogram.record_replay, call, op_path, "record")))
            times["vcr"].append(
                timed(within(vcr.VCR(record_mode="all").use_cassette, call, cassette))
            )
            times["op_r"].append(timed(within(openprogram.record_replay, call, op_path, "replay")))
            times["vcr_r"].append(
                timed(within(vcr.VCR(record_mode="none").use_cassette, call, cassette))
            )
        bare = median(times["bare"])
        events = (deltas + 2) if deltas is not None else 1
        per_event = (median(times["op"]) - bare) * 1000 / events
        row = [f"{'JSON' if deltas is None else deltas:>8}", f"{bare:8.2f}"]
        for key in ("op", "vcr", "op_r", "vcr_r"):
            value = median(times[key])
            row += [f"{value:8.2f}", f"{value / bare:5.2f}"]
        print(" ".join(row), f"{per_event:12.1f}")
    http_client.close()


def library_calls(url: str) -> dict[str, Callable[[], None]]:
    """One streamed call of each client library, read to its end."""
    body = json.dumps({"model": "gpt-4o-mini", "messages": MESSAGES, "stream": True}).encode()
    headers = {"content-type": "application/json", "authorization": "Bearer sk-bench"}
    target = f"{url}/v1/chat/completions"
    httpx_client = httpx.Client()
    session = requests.Session()

    def with_httpx() -> None:
        with httpx_client.stream("POST", target, content=body, headers=headers) as response:
            for _ in response.iter_lines():
                pass

    def with_requests() -> None:
        with session.post(target, data=body, headers=headers, stream=True) as response:
            for _ in response.iter_lines():
                pass

    def with_urllib() -> None:
        request = urllib.request.Request(target, data=body, headers=headers, method="POST")
        with urllib.request.urlopen(request) as response:
            for _ in response:
                pass

    async def aiohttp_call() -> None:
        async with (
            aiohttp.ClientSession() as client,
            client.post(target, data=body, headers=headers) as response,
        ):
            async for _ in response.content:
                pass

    def with_aiohttp() -> None:
        asyncio.run(aiohttp_call())

    return {
        "httpx": with_httpx,
        "requests": with_requests,
        "aiohttp": with_aiohttp,
        "urllib.request": with_urllib,
    }


def client_libraries(server: Server, deltas: int, repeats: int, folder: Path) -> None:
    print(f"\n3. one streamed call of {deltas} deltas per client library (median ms)")
    columns = ("bare", "record", "×", "replay", "×", "play/httpx")
    widths = (8, 8, 5, 8, 5, 10)
    print(
        f"{'library':>15}",
        *(f"{name:>{width}}" for name, width in zip(columns, widths, strict=True)),
    )
    server.serve(deltas)
    calls = library_calls(server.url)
    results: dict[str, tuple[float, float, float]] = {}
    for name, call in calls.items():
        call()
        bare, recorded, replayed = [], [], []
        for n in range(repeats):
            bare.append(timed(call))
            path = folder / f"lib-{name}-{n}.jsonl"
            recorded.append(timed(within(openprogram.record_replay, call, path, "record")))
            replayed.append(timed(within(openprogram.record_replay, call, path, "replay")))
        results[name] = (median(bare), median(recorded), median(replayed))
    httpx_replay = results["httpx"][2]
    for name, (bare, recorded, replayed) in results.items():
        print(
            f"{name:>15} {bare:8.2f} {recorded:8.2f} {recorded / bare:5.2f} {replayed:8.2f} "
            f"{replayed / bare:5.2f} {replayed / httpx_replay:10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    quick = parser.parse_args().quick
    print(f"machine reference: {machine_reference():.1f} µs")
    print(f"python {sys.version.split()[0]}, openai {openai.__version__}, vcrpy {vcr.__version__}")
    sizes: list[int | None] = [10, 200] if quick else [10, 200, 2000, None]
    repeats = 3 if quick else 15
    server = Server()
    with tempfile.TemporaryDirectory() as folder:
        recording_and_replay(server, sizes, repeats, Path(folder))
        client_libraries(server, 200, repeats, Path(folder))
    print(f"\nmachine reference: {machine_reference():.1f} µs")


if __name__ == "__main__":
    main()
