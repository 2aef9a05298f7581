"""Benchmark of redaction and ``recordings scan``, run by hand.

    python benchmarks/bench_redaction.py           # full sizes (under a minute)
    python benchmarks/bench_redaction.py --quick   # small sizes, a smoke run

1. what redacting costs per string: a short streamed delta, a 4 KiB tool result of prose,
   code and logs, a typical request (system prompt, tools, a 20-message conversation), each
   with no secret in it (the common case) and with a few;
2. ``scan_recording`` on a recording of many calls with streamed replies (no finding, so
   it reads and redacts everything and writes nothing), per call.

Figures are medians of several runs. Run it with ``PYTHONPATH`` pointing at another
checkout to compare the rules of two versions (part 2 needs a version that has ``scan``).
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from openprogram.recording.redaction import SecretRedactor

DELTA = "The function returns the parsed value; "
PROSE = (
    "The build failed at step 3: `pytest -q` reported 2 errors in tests/test_api.py. "
    "def login(user: str, password: str) -> Session:\n    return client.post(url, json=body)\n"
    "2026-12-01T10:00:00Z INFO request id=abc123 status=200 bytes=5120 token limit reached\n"
)
SECRETS = (
    " export GITHUB_TOKEN=ghp_Zx9aB3cD4eF5gH6iJ7kL8mN9oP0qR1sT2uV3w AKIAIOSFODNN7EXAMPLE"
    " password: hunter2! "
)


def request(with_secrets: bool) -> dict[str, Any]:
    extra = SECRETS if with_secrets else ""
    messages = [
        {
            "role": "user" if n % 2 == 0 else "assistant",
            "content": PROSE[:600] + (extra if n == 7 else ""),
        }
        for n in range(20)
    ]
    tools = [
        {"name": f"tool_{n}", "description": "Does one thing.", "parameters": {"type": "object"}}
        for n in range(8)
    ]
    return {
        "model": {"id": "gpt-x", "api": "openai-completions", "headers": None},
        "context": {
            "system_prompt": "You are a careful agent.",
            "messages": messages,
            "tools": tools,
        },
        "options": {"temperature": 0.0, "max_tokens": 1024, "metadata": None},
    }


def median_time(action: Callable[[], object], *, repeat: int, number: int) -> float:
    """Median seconds per call of ``action`` over ``repeat`` runs of ``number`` calls."""
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(number):
            action()
        runs.append((time.perf_counter() - start) / number)
    return statistics.median(runs)


def part_redaction(quick: bool) -> None:
    redactor = SecretRedactor([])
    repeat, number = (3, 200) if quick else (7, 2_000)
    tool_result = (PROSE * 20)[:4096]
    counter = iter(range(10**9))

    def fresh(text: str) -> str:
        """``text`` made new (a string redaction has not seen, as most are)."""
        return f"{next(counter)} {text}"

    cases: list[tuple[str, Callable[[], object]]] = [
        ("delta, no secret", lambda: redactor.redact_text(fresh(DELTA))),
        ("4 KiB tool result, no secret", lambda: redactor.redact_text(fresh(tool_result))),
        (
            "4 KiB tool result, 3 secrets",
            lambda: redactor.redact_text(fresh(tool_result + SECRETS)),
        ),
        ("the same 4 KiB again", lambda: redactor.redact_text(tool_result)),
    ]
    clean, dirty = request(False), request(True)
    cases += [
        ("request, no secret, seen before", lambda: redactor.redact_request(clean)),
        ("request, 3 secrets, seen before", lambda: redactor.redact_request(dirty)),
    ]
    print("1. Redaction per value (median)")
    print("-------------------------------")
    for label, action in cases:
        print(f"  {label:<32} {median_time(action, repeat=repeat, number=number) * 1e6:10.2f} µs")


def part_scan(quick: bool) -> None:
    try:
        from openprogram.store.scan import scan_recording
    except ImportError:
        print("\n2. scan: not in this version")
        return
    from openprogram.providers import RecordingProvider
    from openprogram.recording.writer import close_recording_writers
    from tests.support.split_stream import SplitStreamProvider, run_session

    sessions = 50 if quick else 500
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.jsonl"
        pieces = [DELTA] * 40
        provider = RecordingProvider(SplitStreamProvider(pieces, ['{"cmd": "ls -la"}']), path)

        async def record() -> None:
            for _ in range(sessions):
                provider.real_provider.calls = 0  # type: ignore[attr-defined]
                await run_session(provider)

        asyncio.run(record())
        close_recording_writers()
        calls = 2 * sessions
        size = path.stat().st_size
        seconds = median_time(lambda: scan_recording(path), repeat=3, number=1)
    print("\n2. scan_recording, nothing found (median of 3)")
    print("----------------------------------------------")
    print(f"  calls in the file                  {calls:10,d}")
    print(f"  file size                          {size / 2**20:10.1f} MiB")
    print(f"  whole scan                         {seconds * 1e3:10.1f} ms")
    print(f"  per call                           {seconds / calls * 1e6:10.1f} µs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    quick = parser.parse_args().quick
    print(
        f"openprogram redaction benchmarks{' (--quick)' if quick else ''}: Python "
        f"{platform.python_version()}, {platform.system()} {platform.machine()}"
    )
    part_redaction(quick)
    part_scan(quick)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.support
    main()
