"""Benchmark for ``openprogram recordings list``: the summary of a whole store, run by hand.

    python benchmarks/bench_list.py            # 1,000 recordings of ~1 MB (about a minute)
    python benchmarks/bench_list.py --quick    # 50 recordings, a smoke run

The recordings are realistic: ~30 calls each, every reply streamed as token-sized
``text_delta`` events, the context growing with the conversation. They are written row by
row with ``encode_row`` into a temporary folder (no provider, no registry). Then, each as the
median of several runs:

* **plain read** — ``Path.read_bytes()`` on every file: the floor for any cold listing;
* **cold** — ``summarize_store`` with no summary cache (every file read and summarized, and
  the cache written);
* **warm** — ``summarize_store`` again, the cache matching every file;
* **strict reader** — ``read_recording(validate_events=False)`` on a few files, the cost the
  fast summary avoids, extrapolated to the store.

Both the plain read and the cold summary are measured twice: with the files in the page cache
(memory speed), and with each file evicted from the page cache before every run
(``posix_fadvise(DONTNEED)`` on these temporary files only), which reads from the disk.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from machine_reference import machine_reference

from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.format import encode_row, new_header
from openprogram.store.summary_cache import CACHE_FILE_NAME, summarize_store

WORDS = ("The ", "quick ", "brown ", "fox ", "jumps ", "over ", "the ", "lazy ", "dog. ")
CALLS = 30
MB = 1_000_000


def recording_rows(deltas_per_call: int) -> list[dict[str, Any]]:
    """The rows (without header) of one ~30-call session."""
    rows: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    model = {"id": "bench-1", "api": "bench", "provider": "bench", "max_tokens": 4096}
    for call in range(CALLS):
        messages.append({"role": "user", "content": f"Question {call}, please.", "timestamp": 1})
        context = {"system_prompt": "You are a benchmark.", "messages": messages, "tools": None}
        rows.append(
            {
                "type": "request",
                "call_index": call,
                "model": model,
                "context": context,
                "options": {"temperature": 0.0, "max_tokens": 4096},
            }
        )
        deltas = [WORDS[i % len(WORDS)] for i in range(deltas_per_call)]
        text = "".join(deltas)
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": text}],
            "api": "bench",
            "provider": "bench",
            "model": "bench-1",
            "usage": {"input": 10, "output": deltas_per_call, "total_tokens": 10 + deltas_per_call},
            "stop_reason": "stop",
            "timestamp": 1,
        }
        events = [
            {"type": "start", "api": "bench", "provider": "bench", "model": "bench-1"},
            {"type": "text_start", "content_index": 0},
            *({"type": "text_delta", "content_index": 0, "delta": d} for d in deltas),
            {"type": "text_end", "content_index": 0, "content": text},
            {"type": "done", "reason": "stop", "message": message},
        ]
        rows += [
            {"type": "event", "call_index": call, "event_index": i, "event": event}
            for i, event in enumerate(events)
        ]
        rows.append(
            {
                "type": "call_end",
                "call_index": call,
                "event_count": len(events),
                "outcome": "complete",
            }
        )
        # The next request carries the reply: the context grows like a real session's.
        messages = [*messages, {**message, "content": [{"type": "text", "text": text[:400]}]}]
    return rows


def session_body(target_bytes: int) -> bytes:
    """The encoded rows of one session, sized to about ``target_bytes``."""

    def size(deltas: int) -> int:
        return sum(len(encode_row(row)) for row in recording_rows(deltas))

    small, large = size(100), size(200)  # the size is linear in the number of deltas
    deltas = max(1, round(100 + 100 * (target_bytes - small) / (large - small)))
    return b"".join(encode_row(row) for row in recording_rows(deltas))


def write_store(store: Path, files: int, body: bytes) -> list[Path]:
    paths = []
    for index in range(files):
        header = new_header(f"bench-{index:05d}")
        header["created_at"] = f"2026-01-01T00:{index // 60 % 60:02d}:{index % 60:02d}Z"
        path = store / f"bench-{index:05d}.jsonl"
        path.write_bytes(encode_row(header) + body)
        paths.append(path)
    return paths


def median_seconds(run: Callable[[], object], repeats: int, before: Callable[[], None]) -> float:
    samples = []
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=1_000)
    parser.add_argument("--size-mb", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="50 files, 3 repeats")
    args = parser.parse_args()
    files, repeats = (50, 3) if args.quick else (args.files, args.repeats)

    print(
        f"Python {sys.version.split()[0]}, {platform.system()} {platform.machine()}, "
        f"{os.cpu_count()} CPUs"
    )
    print(f"machine reference: {machine_reference():.0f} µs")
    with tempfile.TemporaryDirectory(prefix="bench-list-") as folder:
        store = Path(folder)
        start = time.perf_counter()
        paths = write_store(store, files, session_body(int(args.size_mb * MB)))
        total = sum(path.stat().st_size for path in paths)
        print(
            f"wrote {files} recordings, {total / MB:,.0f} MB "
            f"({total / files / MB:.2f} MB each, {CALLS} calls) in "
            f"{time.perf_counter() - start:.1f} s"
        )
        cache = store / CACHE_FILE_NAME

        def drop_cache() -> None:
            cache.unlink(missing_ok=True)

        def nothing() -> None:
            pass

        def evict() -> None:
            for path in paths:
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)

        def evict_and_drop_cache() -> None:
            evict()
            drop_cache()

        def read_all() -> None:
            for path in paths:
                path.read_bytes()

        os.sync()  # written back, so eviction can drop the pages
        disk_plain = median_seconds(read_all, repeats, evict)
        disk_cold = median_seconds(lambda: summarize_store(store), repeats, evict_and_drop_cache)
        read_all()  # into the page cache
        plain = median_seconds(read_all, repeats, nothing)
        cold = median_seconds(lambda: summarize_store(store), repeats, drop_cache)
        summarize_store(store)
        warm = median_seconds(lambda: summarize_store(store), repeats, nothing)
        plain_after = median_seconds(read_all, repeats, nothing)
        sample = paths[: max(1, min(20, files // 10))]
        strict = median_seconds(
            lambda: [read_recording(path, validate_events=False) for path in sample], 3, nothing
        )
        strict_store = strict * files / len(sample)
        listed = summarize_store(store)
        if len(listed) != files or not all(s.valid and s.calls == CALLS for s in listed):
            raise SystemExit("the summaries are wrong: this benchmark measured nothing")

    rows = [
        ("from disk: plain read_bytes", disk_plain, f"{total / disk_plain / MB:,.0f} MB/s"),
        (
            "from disk: cold summarize_store",
            disk_cold,
            f"{total / disk_cold / MB:,.0f} MB/s, {disk_cold / disk_plain:.2f}x plain read",
        ),
        ("page cache: plain read_bytes (before/after)", plain, f"{total / plain / MB:,.0f} MB/s"),
        ("", plain_after, f"{total / plain_after / MB:,.0f} MB/s"),
        (
            "page cache: cold summarize_store",
            cold,
            f"{total / cold / MB:,.0f} MB/s, {cold / plain:.2f}x plain read",
        ),
        (
            "warm summarize_store (summary cache)",
            warm,
            f"{warm / files * 1e6:,.0f} µs per recording",
        ),
        (
            f"strict reader (x{files / len(sample):.0f} from {len(sample)} files)",
            strict_store,
            f"{total / strict_store / MB:,.0f} MB/s, {strict_store / cold:.1f}x the cold summary",
        ),
    ]
    print(f"\nmedians of {repeats} runs over {files} files:")
    for label, seconds, note in rows:
        print(f"  {label:<46} {seconds * 1000:>10,.1f} ms   {note}")
    print(f"machine reference: {machine_reference():.0f} µs")


if __name__ == "__main__":
    main()
