"""How fast a review page of a long recording opens, run by hand.

    python benchmarks/bench_html.py           # 1,000 calls (about a minute)
    python benchmarks/bench_html.py --quick   # 100 calls

A session of N calls on the echo model — each a user message of about 200 characters and
its reply — is recorded, its page written (``recordings show --html``), and opened in
Debian's Chromium (through Playwright) five times: the page's size, the time to write it,
and the median first paint (the browser's first-contentful-paint timing when it reports
one, else the time to the first frame drawn after load; from navigation start), beside the
same for a tenth of the calls, so the growth shows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

import openprogram
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

CHROMIUM = os.environ.get("OPENPROGRAM_TEST_CHROMIUM", "/usr/bin/chromium")


def record(path: Path, calls: int) -> None:
    async def session() -> None:
        for turn in range(calls):
            text = f"turn {turn}: " + "please look at the weather in Paris today " * 5
            await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=text)]))

    with openprogram.record_replay(path, mode="record"):
        asyncio.run(session())


def write_page(folder: Path, calls: int) -> tuple[Path, float]:
    """The page of a new ``calls``-call recording, and the seconds writing it took."""
    path, page_path = folder / f"{calls}.jsonl", folder / f"{calls}.html"
    record(path, calls)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "openprogram", "recordings", "show", str(path), "--html",
         str(page_path)],
        check=True, capture_output=True,
    )  # fmt: skip
    return page_path, time.perf_counter() - start


def first_paint(page_path: Path, browser: object) -> float:
    """The median first contentful paint of five openings of the page, in ms."""
    paints = []
    for _ in range(5):
        tab = browser.new_page()  # type: ignore[attr-defined]
        tab.goto(page_path.as_uri())
        # the paint timing when the browser reports one, else the time to the second frame
        # after load (the first frame drawn), both from navigation start
        paint = tab.evaluate(
            """() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(() => {
                const entry = performance.getEntriesByName('first-contentful-paint')[0];
                done(entry ? entry.startTime : performance.now());
            })))"""
        )
        paints.append(float(paint))
        tab.close()
    return statistics.median(paints)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    calls = 100 if parser.parse_args().quick else 1000
    with tempfile.TemporaryDirectory() as folder:
        os.environ["OPENPROGRAM_HOME"] = str(Path(folder) / "home")
        pages = [(count, *write_page(Path(folder), count)) for count in (calls // 10, calls)]
        # the recordings first: Playwright's sync API keeps an event loop in this thread
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            print(f"{'calls':>6} {'page':>10} {'written':>9} {'first paint':>12}")
            for count, page_path, written in pages:
                size = page_path.stat().st_size / 1e6
                paint = first_paint(page_path, browser)
                print(f"{count:>6} {size:>8.2f}MB {written:>8.2f}s {paint:>10.0f}ms")
            browser.close()


if __name__ == "__main__":
    main()
