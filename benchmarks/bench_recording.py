"""Benchmarks for recording and replay, run by hand.

    python benchmarks/bench_recording.py           # full sizes (under 2 minutes)
    python benchmarks/bench_recording.py --quick   # small sizes, a smoke run

Four measurements, each printed as a table of medians (see ``benchmarks/README.md``):

1. recording overhead per event, against the bare provider;
2. recording file size, 10,000-delta reply against a 1,000-delta one (must be linear);
3. cost of call 10,000 against call 1 in one file, and a second writer's catch-up;
4. replay throughput (load and validation, then serving every call) and peak load memory.

Every provider here is a synthetic one defined below: no network, no key, no registry.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from machine_reference import machine_reference

from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.recorder import RecordingProvider
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
)
from openprogram.providers.registry import ApiProvider
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    Model,
    SimpleStreamOptions,
    StreamOptions,
    TextContent,
    Usage,
    UserMessage,
)
from openprogram.recording.writer import RecordingWriter, close_recording_writers

FIXED_TIMESTAMP = 1_764_460_800_000  # 2025-11-30T00:00:00Z, so every run writes the same rows
MODEL = Model(id="bench", api="bench", provider="bench")
CONTEXT = Context(
    system_prompt="You are a benchmark.",
    messages=[UserMessage(content="Tell me a long story.", timestamp=FIXED_TIMESTAMP)],
)
OPTIONS = SimpleStreamOptions(temperature=0.0, max_tokens=4_096)
WORDS = ("The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. ")
"""Streamed deltas cycle through these: token-sized, like a real streamed reply."""


@dataclass(frozen=True, slots=True)
class Sizes:
    overhead_deltas: int = 2_000
    overhead_runs: int = 9
    size_small: int = 1_000
    size_large: int = 10_000
    many_calls: int = 10_000
    many_calls_window: int = 100
    many_calls_repeats: int = 3
    second_writer_calls: int = 101
    replay_calls: int = 100
    replay_events_per_call: int = 1_000
    replay_runs: int = 5


FULL = Sizes()
QUICK = Sizes(
    overhead_deltas=200,
    overhead_runs=3,
    size_small=100,
    size_large=1_000,
    many_calls=500,
    many_calls_window=50,
    many_calls_repeats=1,
    second_writer_calls=21,
    replay_calls=10,
    replay_events_per_call=200,
    replay_runs=2,
)


class SyntheticProvider:
    """start, text_start, ``deltas`` × text_delta, text_end, done; events built once."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, deltas: int) -> None:
        self.deltas = [WORDS[i % len(WORDS)] for i in range(deltas)]
        self.text = "".join(self.deltas)
        message = AssistantMessage(
            content=[TextContent(text=self.text)],
            api=MODEL.api,
            provider=MODEL.provider,
            model=MODEL.id,
            usage=Usage(input=8, output=deltas, total_tokens=8 + deltas),
            timestamp=FIXED_TIMESTAMP,
        )
        self.events: list[AssistantMessageEvent] = [
            StartEvent(api=MODEL.api, provider=MODEL.provider, model=MODEL.id),
            TextStartEvent(content_index=0),
            *(TextDeltaEvent(content_index=0, delta=delta) for delta in self.deltas),
            TextEndEvent(content_index=0, content=self.text),
            DoneEvent(reason="stop", message=message),
        ]

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply()

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply()

    async def _reply(self) -> AsyncIterator[AssistantMessageEvent]:
        for event in self.events:
            yield event


# --------------------------------------------------------------------------------------------
# Helpers


async def drain(provider: ApiProvider) -> int:
    """Read one whole call from ``provider``; returns how many events it streamed."""
    count = 0
    async for _event in provider.stream_simple(MODEL, CONTEXT, OPTIONS):
        count += 1
    return count


def fresh_recorder(provider: ApiProvider, path: Path) -> RecordingProvider:
    """A RecordingProvider whose file is already created (header written), so the timed
    calls measure recording, not file creation."""
    recorder = RecordingProvider(provider, path)
    recorder.writer.open()
    return recorder


def us(nanoseconds: float) -> float:
    return nanoseconds / 1_000


Row = tuple[str, str]


def print_table(title: str, rows: list[Row]) -> None:
    width = max(len(name) for name, _ in rows)
    print(f"\n{title}")
    print("-" * len(title))
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>16}")


def number(value: float, unit: str = "", digits: int = 2) -> str:
    return f"{value:,.{digits}f}{(' ' + unit) if unit else ''}"


# --------------------------------------------------------------------------------------------
# 1. Recording overhead per event


def bench_overhead(sizes: Sizes, workdir: Path) -> list[Row]:
    provider = SyntheticProvider(sizes.overhead_deltas)
    events = len(provider.events)

    async def batch() -> tuple[list[int], list[int]]:
        bare: list[int] = []
        recorded: list[int] = []
        for run in range(sizes.overhead_runs + 1):  # run 0 warms up and is dropped
            gc.collect()
            start = time.perf_counter_ns()
            bare_count = await drain(provider)
            bare_ns = time.perf_counter_ns() - start

            recorder = fresh_recorder(provider, workdir / f"overhead-{run}.jsonl")
            gc.collect()
            start = time.perf_counter_ns()
            recorded_count = await drain(recorder)
            recorded_ns = time.perf_counter_ns() - start
            recorder.writer.close()

            assert bare_count == recorded_count == events
            if run:
                bare.append(bare_ns)
                recorded.append(recorded_ns)
        return bare, recorded

    bare, recorded = asyncio.run(batch())
    close_recording_writers()
    bare_median, recorded_median = statistics.median(bare), statistics.median(recorded)
    overheads = [(r - b) / events for b, r in zip(bare, recorded, strict=True)]
    return [
        ("events per call", f"{events:,}"),
        ("runs (medians of)", f"{sizes.overhead_runs}"),
        ("bare call", number(us(bare_median), "µs")),
        ("recorded call", number(us(recorded_median), "µs")),
        ("bare per event", number(us(bare_median / events), "µs", 3)),
        ("recorded per event", number(us(recorded_median / events), "µs", 3)),
        ("overhead per event", number(us((recorded_median - bare_median) / events), "µs")),
        ("  (median of per-run overheads)", number(us(statistics.median(overheads)), "µs")),
        (
            "  (min .. max per-run overhead)",
            f"{us(min(overheads)):.1f} .. {us(max(overheads)):.1f} µs",
        ),
        ("recorded / bare", number(recorded_median / bare_median, "×", 1)),
    ]


# --------------------------------------------------------------------------------------------
# 2. Recording file size


def bench_file_size(sizes: Sizes, workdir: Path) -> list[Row]:
    def record(deltas: int) -> tuple[int, int, int]:
        provider = SyntheticProvider(deltas)
        path = workdir / f"size-{deltas}.jsonl"
        recorder = fresh_recorder(provider, path)
        asyncio.run(drain(recorder))
        recorder.writer.close()
        return path.stat().st_size, len(provider.events), len(provider.text.encode())

    small_bytes, small_events, small_text = record(sizes.size_small)
    large_bytes, large_events, large_text = record(sizes.size_large)
    close_recording_writers()
    small, large = f"{sizes.size_small:,}-delta", f"{sizes.size_large:,}-delta"
    return [
        (f"{small} file", number(small_bytes / 1_024, "KiB", 1)),
        (f"{large} file", number(large_bytes / 1_024, "KiB", 1)),
        (f"{small} bytes per event", number(small_bytes / small_events, "B", 1)),
        (f"{large} bytes per event", number(large_bytes / large_events, "B", 1)),
        (
            f"size ratio (deltas ×{sizes.size_large / sizes.size_small:g})",
            number(large_bytes / small_bytes, "×"),
        ),
        (f"{small} file / delta text", number(small_bytes / small_text, "×", 1)),
        (f"{large} file / delta text", number(large_bytes / large_text, "×", 1)),
    ]


# --------------------------------------------------------------------------------------------
# 3. Cost of call 10,000 against call 1, and a second writer


@dataclass(frozen=True, slots=True)
class ManyCallsRun:
    first: float
    last: float
    late_alternating: float
    fresh_alternating: float
    other_first: float
    other_next: float
    back_first: float
    file_bytes: int


def many_calls_run(sizes: Sizes, path: Path) -> ManyCallsRun:
    provider = SyntheticProvider(deltas=2)  # 6 events a call
    window = sizes.many_calls_window

    async def timed(recorder: ApiProvider) -> int:
        start = time.perf_counter_ns()
        await drain(recorder)
        return time.perf_counter_ns() - start

    async def batch() -> dict[str, list[int]]:
        # Warm up on a scratch file, so that "first calls" means an early position in the
        # file, not cold code paths.
        warm = fresh_recorder(provider, path.with_suffix(".warm.jsonl"))
        for _ in range(window):
            await drain(warm)
        warm.writer.close()
        recorder = fresh_recorder(provider, path)
        gc.collect()
        own = [await timed(recorder) for _ in range(sizes.many_calls)]
        # First and last calls are seconds apart, so machine noise can move their ratio.
        # Control: a call on the big file and a call on a fresh file, alternately.
        fresh = fresh_recorder(provider, path.with_suffix(".fresh.jsonl"))
        late: list[int] = []
        early: list[int] = []
        for _ in range(window):
            late.append(await timed(recorder))
            early.append(await timed(fresh))
        fresh.writer.close()
        # Another process's writer: a fresh RecordingWriter for the same file (writer_for would
        # hand back the shared one). Its first call opens the file and scans it once.
        other = RecordingProvider(provider, path)
        other.writer = RecordingWriter(path.resolve())
        gc.collect()
        others = [await timed(other) for _ in range(sizes.second_writer_calls)]
        other.writer.close()
        # The first writer again: it reads only what the other appended.
        back = await timed(recorder)
        return {"own": own, "late": late, "early": early, "others": others, "back": [back]}

    times = asyncio.run(batch())
    close_recording_writers()
    calls = read_recording(path, validate_events=False).calls
    expected = sizes.many_calls + window + sizes.second_writer_calls + 1
    assert [call.call_index for call in calls] == list(range(expected)), "call indexes broken"
    return ManyCallsRun(
        first=statistics.median(times["own"][:window]),
        last=statistics.median(times["own"][-window:]),
        late_alternating=statistics.median(times["late"]),
        fresh_alternating=statistics.median(times["early"]),
        other_first=times["others"][0],
        other_next=statistics.median(times["others"][1:]),
        back_first=times["back"][0],
        file_bytes=path.stat().st_size,
    )


def bench_many_calls(sizes: Sizes, workdir: Path) -> list[Row]:
    runs = [
        many_calls_run(sizes, workdir / f"many-{repeat}.jsonl")
        for repeat in range(sizes.many_calls_repeats)
    ]

    def median_of(pick: Callable[[ManyCallsRun], float]) -> float:
        return statistics.median(pick(run) for run in runs)

    first, last = median_of(lambda r: r.first), median_of(lambda r: r.last)
    late, fresh = median_of(lambda r: r.late_alternating), median_of(lambda r: r.fresh_alternating)
    other_first, other_next = median_of(lambda r: r.other_first), median_of(lambda r: r.other_next)
    window, calls = sizes.many_calls_window, sizes.many_calls
    return [
        ("calls in the file (6 events each)", f"{calls:,}"),
        ("file size", number(median_of(lambda r: r.file_bytes) / 1_048_576, "MiB", 1)),
        ("repeats (median of)", f"{len(runs)}"),
        (f"first {window} calls, per call", number(us(first), "µs", 1)),
        (f"last {window} calls, per call", number(us(last), "µs", 1)),
        ("last / first", number(last / first, "×")),
        (f"alternating: call {calls + 1:,}+ of this file", number(us(late), "µs", 1)),
        ("alternating: call 1+ of a fresh file", number(us(fresh), "µs", 1)),
        ("alternating: late / fresh", number(late / fresh, "×")),
        ("2nd writer: first call (opens, scans)", number(us(other_first), "µs", 0)),
        (
            f"2nd writer: next {sizes.second_writer_calls - 1} calls",
            number(us(other_next), "µs", 1),
        ),
        ("2nd writer: first / next", number(other_first / other_next, "×", 0)),
        ("1st writer again: catch-up call", number(us(median_of(lambda r: r.back_first)), "µs", 1)),
    ]


# --------------------------------------------------------------------------------------------
# 4. Replay throughput


def bench_replay(sizes: Sizes, workdir: Path) -> list[Row]:
    provider = SyntheticProvider(deltas=sizes.replay_events_per_call - 4)
    per_call = len(provider.events)
    total_events = per_call * sizes.replay_calls
    path = workdir / "replay.jsonl"

    async def build() -> None:
        recorder = fresh_recorder(provider, path)
        for _ in range(sizes.replay_calls):
            await drain(recorder)
        recorder.writer.close()

    asyncio.run(build())
    close_recording_writers()

    async def batch() -> tuple[list[int], list[int]]:
        loads: list[int] = []
        replays: list[int] = []
        for _ in range(sizes.replay_runs):
            gc.collect()
            start = time.perf_counter_ns()
            replay = ReplayProvider(path)
            loaded = time.perf_counter_ns()
            served = 0
            for _ in range(sizes.replay_calls):
                served += await drain(replay)
            done = time.perf_counter_ns()
            replay.assert_consumed()
            assert served == total_events
            loads.append(loaded - start)
            replays.append(done - loaded)
            del replay
        return loads, replays

    loads, replays = asyncio.run(batch())
    load, serve = statistics.median(loads), statistics.median(replays)
    total = statistics.median(a + b for a, b in zip(loads, replays, strict=True))

    gc.collect()
    tracemalloc.start()
    replay = ReplayProvider(path)
    retained, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del replay
    file_bytes = path.stat().st_size
    mib = 1_048_576

    def rate(nanoseconds: float) -> str:
        return number(total_events / (nanoseconds / 1e9), "ev/s", 0)

    return [
        ("recording", f"{sizes.replay_calls} × {per_call:,} = {total_events:,} events"),
        ("file size", number(file_bytes / mib, "MiB", 1)),
        ("runs (medians of)", f"{sizes.replay_runs}"),
        ("load + validate (ReplayProvider())", number(load / 1e6, "ms", 0)),
        ("replay every call", number(serve / 1e6, "ms", 0)),
        ("total", number(total / 1e6, "ms", 0)),
        ("load throughput", rate(load)),
        ("replay throughput", rate(serve)),
        ("total throughput", rate(total)),
        ("load: peak traced memory", number(peak / mib, "MiB", 1)),
        ("load: retained after load", number(retained / mib, "MiB", 1)),
        ("retained per event", number(retained / total_events, "B", 0)),
    ]


# --------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL

    print(
        f"openprogram recording benchmarks{' (--quick)' if args.quick else ''}: "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cpus. Figures are medians; the machine may be noisy."
    )
    benchmarks: list[tuple[str, Callable[[Sizes, Path], list[Row]]]] = [
        ("1. Recording overhead per event (synthetic provider, bare vs recorded)", bench_overhead),
        ("2. Recording file size (must grow linearly with the reply)", bench_file_size),
        ("3. Cost of late calls in a big file, and a second writer", bench_many_calls),
        ("4. Replay throughput (ReplayProvider: load + validate, then serve)", bench_replay),
    ]
    print(f"machine reference, sum(range(10_000)): {machine_reference():.0f} µs")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="openprogram-bench-") as tmp:
        for title, bench in benchmarks:
            began = time.perf_counter()
            rows = bench(sizes, Path(tmp))
            print_table(f"{title}  [{time.perf_counter() - began:.1f} s]", rows)
            sys.stdout.flush()
    print(
        f"\ntotal {time.perf_counter() - started:.1f} s; machine reference now "
        f"{machine_reference():.0f} µs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
