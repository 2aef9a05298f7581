"""A real headless Chromium (Debian's, driven by Playwright, which downloads no browser of its
own here), and a page served from another origin on loopback for it to open.

    with chromium(tmp_path) as browser, page_server("<script>…</script>") as url:
        page = browser.new_page()
        page.goto(url)

Chromium writes into its home folder as it starts (``.config/chromium``, ``.cache``), so
every launch is given one of its own, under the test's temporary folder: ``HOME`` and the
XDG folders of the browser's process point there, and Playwright gives it a temporary
profile (``--user-data-dir``) as well. No browser writes into the home folder of the user
running the tests, nor into the fake home the suite's autouse fixture sets.

Without Chromium (``OPENPROGRAM_TEST_CHROMIUM``, default ``/usr/bin/chromium``) or Playwright
the test is skipped, saying so; ``.ci/run`` installs both.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

__all__ = ["CHROMIUM", "OTHER_HOST", "chromium", "page_server"]

CHROMIUM = os.environ.get("OPENPROGRAM_TEST_CHROMIUM", "/usr/bin/chromium")
OTHER_HOST = "127.0.0.2"
"""Loopback, and another origin than anything on 127.0.0.1: where a page of "another site"
is served from (no name to resolve, no traffic off the machine)."""


@contextmanager
def chromium(folder: Path) -> Iterator[Any]:
    """A launched headless Chromium whose home is ``folder / "chromium-home"`` (a test's
    temporary folder), closed at the end; skips the test without one."""
    if shutil.which(CHROMIUM) is None and not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (.ci/run installs Debian's chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    home = folder / "chromium-home"
    home.mkdir(mode=0o700, exist_ok=True)
    environment = {
        **os.environ,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
    }
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], env=environment
        )
        try:
            yield browser
        finally:
            browser.close()


@contextmanager
def page_server(html: str) -> Iterator[str]:
    """``html`` served at ``http://127.0.0.2:PORT/`` (every path) while the block runs; its
    URL."""
    body = html.encode()

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((OTHER_HOST, 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{OTHER_HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
