"""Benchmarks for the HTTP boundary with the official ``openai`` SDK, run by hand.

    python benchmarks/bench_http.py           # full sizes (about a minute)
    python benchmarks/bench_http.py --quick   # small sizes, a smoke run

Three measurements, each printed as medians (see ``benchmarks/README.md``):

1. capture overhead per SSE event: one streamed Chat Completions call of 2,000 deltas, with
   capture off, then recorded by ``openprogram.record_replay()``;
2. replaying 1,000 independent, equal-size streamed calls, against the floor of the same
   calls answered by an ``httpx2.MockTransport`` serving the same bytes;
3. ``openprogram exec`` start-up added to ``python -c pass`` (with ``openprogram --help``, the
   CLI's own start-up, for reference).

The SDK talks to a hand-made network transport (a ``BaseTransport`` that is not a
``MockTransport``, so the boundary captures it as it would a real one) serving prepared
bytes: no socket, no server, no noise from either. The client library is the one the
installed ``openai`` sends through (httpx2 for openai 3.x, httpx before).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openai

import openprogram

BASE_URL = "https://api.openai.com/v1"
"""The URL the requests name (no request leaves the process)."""


def client_library() -> Any:
    """The HTTP client library the installed ``openai`` sends through."""
    if int(openai.__version__.split(".")[0]) >= 3:
        import httpx2

        return httpx2
    import httpx

    return httpx


LIB = client_library()


def chat_stream(deltas: int, tag: str = "") -> list[bytes]:
    """The SSE events of a streamed chat completion of ``deltas`` word-sized deltas."""

    def event(choice_delta: dict[str, Any], finish: str | None = None) -> bytes:
        chunk = {
            "id": f"chatcmpl-bench{tag}",
            "object": "chat.completion.chunk",
            "created": 1_764_460_800,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": choice_delta, "finish_reason": finish}],
        }
        return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"

    words = ["fox ", "jumps ", "over ", "the ", "lazy ", "dog "]
    return [
        event({"role": "assistant", "content": ""}),
        *(event({"content": words[i % len(words)]}) for i in range(deltas)),
        event({}, "stop"),
        b"data: [DONE]\n\n",
    ]


class ServedBytes(LIB.SyncByteStream):  # type: ignore[misc, name-defined]
    def __init__(self, events: list[bytes]) -> None:
        self.events = events

    def __iter__(self) -> Iterator[bytes]:
        yield from self.events


class PreparedNetwork(LIB.BaseTransport):  # type: ignore[misc, name-defined]
    """A network transport as far as the boundary can tell: answers each request with the
    next prepared stream."""

    def __init__(self, streams: Callable[[], list[bytes]]) -> None:
        self.streams = streams

    def handle_request(self, request: Any) -> Any:
        headers = [("content-type", "text/event-stream"), ("x-request-id", "req_bench")]
        return LIB.Response(200, headers=headers, stream=ServedBytes(self.streams()))


def client(transport: Any) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-bench",
        base_url=BASE_URL,
        max_retries=0,
        http_client=LIB.Client(transport=transport),
    )


def stream_call(sdk: openai.OpenAI, question: str) -> int:
    """One streamed call, drained; the number of chunks the program got."""
    messages = [{"role": "user", "content": question}]
    stream = sdk.chat.completions.create(model="gpt-4o-mini", messages=messages, stream=True)  # type: ignore[call-overload]
    return sum(1 for _ in stream)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.1f} ms"


# -- 1. capture overhead per SSE event -------------------------------------------------------


def capture_overhead(deltas: int, repeats: int, folder: Path) -> None:
    events = chat_stream(deltas)
    sdk = client(PreparedNetwork(lambda: events))
    stream_call(sdk, "warm-up")
    bare: list[float] = []
    recorded: list[float] = []
    for run in range(repeats):
        started = time.perf_counter()
        stream_call(sdk, "hello")
        bare.append(time.perf_counter() - started)
        path = folder / f"overhead-{run}.jsonl"
        with openprogram.record_replay(path, mode="record"):
            started = time.perf_counter()
            stream_call(sdk, "hello")
            recorded.append(time.perf_counter() - started)
    count = len(events)
    per_event = [(r - b) / count * 1e6 for b, r in zip(bare, recorded, strict=True)]
    print(f"\n1. capture overhead: one streamed call of {count:,} SSE events, {repeats} runs")
    print(f"   capture off:  {ms(statistics.median(bare))}")
    print(f"   recorded:     {ms(statistics.median(recorded))}")
    print(
        f"   overhead per SSE event: {statistics.median(per_event):.1f} µs "
        f"(runs {min(per_event):.1f}–{max(per_event):.1f} µs; the SDK's own cost per event "
        f"{statistics.median(bare) / count * 1e6:.1f} µs)"
    )


# -- 2. replaying 1,000 calls against the MockTransport floor --------------------------------


def replay_against_floor(calls: int, deltas: int, repeats: int, folder: Path) -> None:
    streams = [chat_stream(deltas, tag=str(i)) for i in range(calls)]
    questions = [f"question {i}" for i in range(calls)]
    path = folder / "replay.jsonl"
    served = iter(streams)
    recorder = client(PreparedNetwork(lambda: next(served)))
    with openprogram.record_replay(path, mode="record"):
        for question in questions:
            stream_call(recorder, question)

    bodies = [b"".join(stream) for stream in streams]

    def floor_run() -> float:
        answers = iter(bodies)

        def answer(request: Any) -> Any:
            headers = [("content-type", "text/event-stream"), ("x-request-id", "req_bench")]
            return LIB.Response(200, headers=headers, content=next(answers))

        sdk = client(LIB.MockTransport(answer))
        started = time.perf_counter()
        for question in questions:
            stream_call(sdk, question)
        return time.perf_counter() - started

    def replay_run() -> tuple[float, float]:
        sdk = client(LIB.HTTPTransport())  # never used: replay answers every request
        started = time.perf_counter()
        with openprogram.record_replay(path, mode="replay"):
            loaded = time.perf_counter()
            for question in questions:
                stream_call(sdk, question)
            served_at = time.perf_counter()
        return loaded - started, served_at - loaded

    floor_run()
    replay_run()
    floors: list[float] = []
    loads: list[float] = []
    serves: list[float] = []
    for _ in range(repeats):
        floors.append(floor_run())
        load, serve = replay_run()
        loads.append(load)
        serves.append(serve)
    floor, load, serve = (statistics.median(x) for x in (floors, loads, serves))
    size = path.stat().st_size
    print(
        f"\n2. replay: {calls:,} independent calls of {len(streams[0])} SSE events each "
        f"({size / 1e6:.1f} MB recording), {repeats} runs"
    )
    each = calls / 1e6
    print(f"   floor, MockTransport, same bytes: {ms(floor)} ({floor / each:.0f} µs a call)")
    print(
        f"   replay, calls served:   {ms(serve)} ({serve / each:.0f} µs a call) "
        f"= {serve / floor:.2f}× the floor"
    )
    print(f"   replay, recording load: {ms(load)}")
    print(
        f"   replay, load + serve:   {ms(load + serve)} = {(load + serve) / floor:.2f}× the floor"
    )


# -- 3. exec start-up --------------------------------------------------------------------------


def wall_time(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True
    )
    return time.perf_counter() - started


def exec_startup(repeats: int, folder: Path) -> None:
    import compileall

    compileall.compile_dir(Path(openprogram.__file__).parent, quiet=1)
    script = shutil.which("openprogram")
    front = [script] if script else [sys.executable, "-m", "openprogram"]
    home = folder / "home"
    env = {**os.environ, "OPENPROGRAM_HOME": str(home), "NO_COLOR": "1"}
    python_pass = [sys.executable, "-c", "pass"]
    replayed = folder / "empty.jsonl"
    wall_time([*front, "exec", "--record", str(replayed), "--", *python_pass], env)
    cases: dict[str, Callable[[int], list[str]]] = {
        "python -c pass": lambda run: python_pass,
        "openprogram --help (the CLI's own start-up)": lambda run: [*front, "--help"],
        "openprogram exec (mode off) -- python -c pass": lambda run: [
            *front,
            "exec",
            "--",
            *python_pass,
        ],
        "openprogram exec --record NEW -- python -c pass": lambda run: [
            *front,
            "exec",
            "--record",
            str(folder / f"new-{run}.jsonl"),
            "--",
            *python_pass,
        ],
        "openprogram exec --replay EMPTY -- python -c pass": lambda run: [
            *front,
            "exec",
            "--replay",
            str(replayed),
            "--",
            *python_pass,
        ],
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for run in range(repeats):
        for name, command in cases.items():
            times[name].append(wall_time(command(run), env))
    floor = statistics.median(times["python -c pass"])
    print(f"\n3. exec start-up, {repeats} runs each, interleaved")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(f"   {name:<50} {ms(median):>10}   +{ms(median - floor)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    quick = parser.parse_args().quick
    print(
        f"openai {openai.__version__} on {LIB.__name__} {LIB.__version__}, "
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} cores"
    )
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        capture_overhead(deltas=200 if quick else 2_000, repeats=3 if quick else 9, folder=folder)
        replay_against_floor(
            calls=50 if quick else 1_000, deltas=20, repeats=2 if quick else 5, folder=folder
        )
        exec_startup(repeats=2 if quick else 15, folder=folder)
    print(f"\ntotal {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
