"""Benchmarks for how replay pairs requests with recorded calls, run by hand.

    python benchmarks/bench_matching.py           # full sizes (about a minute)
    python benchmarks/bench_matching.py --quick   # small sizes, a smoke run

Two measurements, each printed as a table of medians (see ``benchmarks/README.md``):

1. per-call replay cost on a 10,000-call recording of independent, equal-size calls under
   content matching: the first calls against the last, served in recorded order and in
   reverse order (call 10,000 first, with every other call still unconsumed), beside strict
   order matching; and the one-off cost of building the digest index;
2. 100 concurrent agents × 10 turns replayed by content (their calls interleaved), against
   the same agents run one after the other under order matching, on the sequential
   recording they made.

Every provider here is a synthetic one defined below: no network, no key, no registry.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import tempfile
import time
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
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    Message,
    Model,
    SimpleStreamOptions,
    StreamOptions,
    TextContent,
    UserMessage,
)
from openprogram.recording.call_digest import request_ignore_fields
from openprogram.recording.content_matching import RequestIndex
from openprogram.recording.difference import ignore_rules
from openprogram.recording.writer import close_recording_writers

FIXED_TIMESTAMP = 1_764_460_800_000
MODEL = Model(id="bench", api="bench", provider="bench")
OPTIONS = SimpleStreamOptions(temperature=0.0, max_tokens=1_024)
FILLER = "Summarise the following notes in one sentence. " * 4
"""Every independent call's prompt carries this, so all are the same size."""


@dataclass(frozen=True, slots=True)
class Sizes:
    calls: int = 10_000
    window: int = 100
    agents: int = 100
    turns: int = 10
    agent_runs: int = 5


FULL = Sizes()
QUICK = Sizes(calls=1_000, window=50, agents=20, turns=5, agent_runs=2)


class SyntheticProvider:
    """A short fixed reply (start, text_start, one delta, text_end, done), built once."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self) -> None:
        text = "A fixed, short answer."
        message = AssistantMessage(
            content=[TextContent(text=text)],
            api=MODEL.api,
            provider=MODEL.provider,
            model=MODEL.id,
            timestamp=FIXED_TIMESTAMP,
        )
        self.events: list[AssistantMessageEvent] = [
            StartEvent(api=MODEL.api, provider=MODEL.provider, model=MODEL.id),
            TextStartEvent(content_index=0),
            TextDeltaEvent(content_index=0, delta=text),
            TextEndEvent(content_index=0, content=text),
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


Provider = SyntheticProvider | RecordingProvider | ReplayProvider


async def ask(provider: Provider, context: Context) -> AssistantMessage:
    """One call, drained; its final message."""
    final: AssistantMessage | None = None
    async for event in provider.stream_simple(MODEL, context, OPTIONS):
        if isinstance(event, DoneEvent):
            final = event.message
    assert final is not None
    return final


def independent_context(n: int) -> Context:
    prompt = f"Note {n:06d}. {FILLER}"
    return Context(messages=[UserMessage(content=prompt, timestamp=FIXED_TIMESTAMP)])


def us(nanoseconds: float) -> float:
    return nanoseconds / 1_000


def median_us(samples: list[int]) -> float:
    return us(statistics.median(samples))


Row = tuple[str, str]


def print_table(title: str, rows: list[Row]) -> None:
    width = max(len(name) for name, _ in rows)
    print(f"\n{title}")
    print("-" * len(title))
    for name, value in rows:
        print(f"  {name:<{width}}  {value:>18}")


# --------------------------------------------------------------------------------------------
# 1. Per-call cost on a 10,000-call recording


def record_independent_calls(path: Path, calls: int) -> None:
    recorder = RecordingProvider(SyntheticProvider(), path)

    async def record() -> None:
        for n in range(calls):
            await ask(recorder, independent_context(n))

    asyncio.run(record())
    close_recording_writers()


def serve_all(provider: ReplayProvider, contexts: list[Context]) -> list[int]:
    """Serve every context in turn; the time of each call (ns)."""

    async def serve() -> list[int]:
        times: list[int] = []
        for context in contexts:
            start = time.perf_counter_ns()
            await ask(provider, context)
            times.append(time.perf_counter_ns() - start)
        return times

    return asyncio.run(serve())


def bench_many_calls(sizes: Sizes, workdir: Path) -> list[Row]:
    path = workdir / "independent.jsonl"
    record_independent_calls(path, sizes.calls)
    contexts = [independent_context(n) for n in range(sizes.calls)]
    recording = read_recording(path)
    window = sizes.window

    def fresh(match: str) -> ReplayProvider:
        return ReplayProvider(path, match=match, recording=recording)

    # The first request builds the digest index: timed apart, on fresh providers.
    first = [serve_all(fresh("content"), contexts[:1])[0] for _ in range(3)]
    in_order = serve_all(fresh("content"), contexts)
    reverse = serve_all(fresh("content"), contexts[::-1])
    by_order = serve_all(fresh("order"), contexts)
    early, late = median_us(in_order[1 : window + 1]), median_us(in_order[-window:])
    last_first, first_last = median_us(reverse[1 : window + 1]), median_us(reverse[-window:])
    order_early, order_late = median_us(by_order[1 : window + 1]), median_us(by_order[-window:])
    typical = statistics.median(in_order[1:])
    return [
        (f"calls, {window} per window", f"{sizes.calls:,}"),
        ("index build (first request, once)", f"{us(statistics.median(first) - typical):,.0f} µs"),
        ("content, in order: first calls", f"{early:,.1f} µs"),
        ("content, in order: last calls", f"{late:,.1f} µs"),
        ("content, in order: last / first", f"{late / early:.2f}×"),
        (f"content, reverse: calls {sizes.calls:,}… first", f"{last_first:,.1f} µs"),
        ("content, reverse: calls …1 last", f"{first_last:,.1f} µs"),
        (f"content, reverse: call {sizes.calls:,} / call 1", f"{last_first / first_last:.2f}×"),
        ("order: first calls / last calls", f"{order_early:,.1f} / {order_late:,.1f} µs"),
        ("content / order, per call", f"{typical / statistics.median(by_order[1:]):.2f}×"),
    ]


# --------------------------------------------------------------------------------------------
# 2. Concurrent agents


async def agent(provider: Provider, name: int, turns: int) -> None:
    """A conversation of ``turns`` calls; between them the agent yields to the others."""
    messages: list[Message] = []
    for turn in range(turns):
        messages.append(UserMessage(content=f"agent {name} turn {turn}", timestamp=0))
        messages.append(await ask(provider, Context(messages=list(messages))))
        await asyncio.sleep(0)


async def one_after_another(provider: Provider, agents: int, turns: int) -> None:
    for name in range(agents):
        await agent(provider, name, turns)


async def all_at_once(provider: Provider, agents: int, turns: int) -> None:
    await asyncio.gather(*(agent(provider, name, turns) for name in range(agents)))


def bench_agents(sizes: Sizes, workdir: Path) -> list[Row]:
    path = workdir / "agents.jsonl"
    recorder = RecordingProvider(SyntheticProvider(), path)
    asyncio.run(one_after_another(recorder, sizes.agents, sizes.turns))
    close_recording_writers()
    recording = read_recording(path)
    Run = Callable[[Provider, int, int], "asyncio.Future[None] | object"]

    def wall(match: str, run: Run) -> float:
        samples: list[int] = []
        for _ in range(sizes.agent_runs):
            provider = ReplayProvider(path, match=match, recording=recording)
            start = time.perf_counter_ns()
            asyncio.run(run(provider, sizes.agents, sizes.turns))  # type: ignore[arg-type]
            samples.append(time.perf_counter_ns() - start)
            provider.assert_consumed()
        return us(statistics.median(samples)) / 1_000

    by_order = wall("order", one_after_another)
    content_sequential = wall("content", one_after_another)
    content_concurrent = wall("content", all_at_once)
    calls = sizes.agents * sizes.turns
    rules = ignore_rules(request_ignore_fields("provider"))
    builds: list[int] = []
    for _ in range(sizes.agent_runs):
        start = time.perf_counter_ns()
        RequestIndex(recording.calls, "provider", rules, lambda request: request)
        builds.append(time.perf_counter_ns() - start)
    return [
        ("agents × turns (calls)", f"{sizes.agents} × {sizes.turns} ({calls:,})"),
        ("order, one after another", f"{by_order:,.0f} ms"),
        ("content, one after another", f"{content_sequential:,.0f} ms"),
        ("content, all at once (interleaved)", f"{content_concurrent:,.0f} ms"),
        ("  of which the index build, once", f"{median_us(builds) / 1_000:,.0f} ms"),
        ("concurrent content / sequential order", f"{content_concurrent / by_order:.2f}×"),
        ("per call, concurrent content", f"{content_concurrent * 1_000 / calls:,.0f} µs"),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    print(
        f"openprogram matching benchmarks{' (--quick)' if args.quick else ''}: "
        f"Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} cpus. Figures are medians; the machine may be noisy."
    )
    benchmarks: list[tuple[str, Callable[[Sizes, Path], list[Row]]]] = [
        ("1. Per-call replay cost on a big recording of independent calls", bench_many_calls),
        ("2. Concurrent agents replayed by content, against order", bench_agents),
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
