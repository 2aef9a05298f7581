"""Regenerate the screenshots of docs/: a recorded agent session and a re-recording, their
review pages (``recordings show --html``, ``recordings diff --html``), photographed in
Debian's Chromium through Playwright.

    python docs/images/make_screenshots.py    # writes docs/images/diff-page.png

Everything happens in a temporary folder (the store and configuration too), offline, on the
echo model: the same images come out on any machine.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

import openprogram
from openprogram.agent.loop import run_agent
from openprogram.agent.tools import tool
from openprogram.providers import ECHO_MODEL

HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("OPENPROGRAM_TEST_CHROMIUM", "/usr/bin/chromium")


def record(path: Path, city: str) -> None:
    @tool
    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"{city}: 21 °C, sunny" if city == "Paris" else f"{city}: 14 °C, rain"

    with openprogram.record_replay(path, mode="record", tools={"weather": "replay"}):
        asyncio.run(run_agent(ECHO_MODEL, f'/tool weather {{"city": "{city}"}}', tools=[weather]))


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        os.environ["OPENPROGRAM_HOME"] = str(work / "home")
        before, after = work / "weather.jsonl", work / "weather-rerecorded.jsonl"
        record(before, "Paris")
        record(after, "Lyon")
        page = work / "diff.html"
        subprocess.run(
            [sys.executable, "-m", "openprogram", "recordings", "diff",
             str(before), str(after), "--html", str(page)],
            check=False, capture_output=True,
        )  # fmt: skip
        text = page.read_text().replace(str(work), "/repo/tests/recordings")
        page.write_text(text)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            tab = browser.new_page(viewport={"width": 1100, "height": 760})
            tab.goto(page.as_uri())
            tab.screenshot(path=str(HERE / "diff-page.png"), full_page=True)
            browser.close()
    print(HERE / "diff-page.png")


if __name__ == "__main__":
    main()
