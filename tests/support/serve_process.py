"""``openprogram serve`` in a process of its own, as a user (or a test runner's setup) starts
it: the tests of its output, its signals, and of clients in other languages.

    with ServeProcess("--record", str(path), "--upstream", f"openai={upstream}", env=env) as serve:
        ...                       # serve.url, serve.openai_url, serve.token (serve.auth)
        stopped = serve.stop()    # SIGTERM: (exit status, stdout, stderr)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from typing import Self

from tests.support.child_processes import CLI_MAIN

__all__ = ["ServeProcess", "Stopped"]

READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class Stopped:
    """How the server's process ended."""

    status: int
    stdout: str
    stderr: str


class ServeProcess:
    """``openprogram serve --port 0 ARGS`` started, and read up to the line saying where it
    listens."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", CLI_MAIN, "serve", "--port", "0", *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._stdout: list[str] = []
        self._stderr: list[str] = []
        self._ready = threading.Event()
        self.url = ""
        self.token = ""
        self._stdout_reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._stdout_reader.start()
        self._stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._stderr_reader.start()
        if not self._ready.wait(READY_TIMEOUT) or not self.url:
            stopped = self.stop()
            raise AssertionError(f"serve did not start: {stopped}")
        self.stopped: Stopped | None = None

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._stdout.append(line)
            name, _, value = line.strip().partition("=")
            if name == "OPENPROGRAM_SERVE_URL":
                self.url = value
            elif name == "OPENPROGRAM_SERVE_TOKEN":
                self.token = value
                self._ready.set()  # printed after the URL
        self._ready.set()  # it ended without listening

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    @property
    def auth(self) -> dict[str, str]:
        """The header that names the server's client (its token)."""
        return {"x-openprogram-token": self.token}

    @property
    def openai_url(self) -> str:
        return f"{self.url}/openai/v1"

    @property
    def anthropic_url(self) -> str:
        return f"{self.url}/anthropic"

    @property
    def stderr_so_far(self) -> str:
        return "".join(self._stderr)

    @property
    def stdout_so_far(self) -> str:
        return "".join(self._stdout)

    def stop(self, signum: int = signal.SIGTERM) -> Stopped:
        """Send ``signum`` (if still running), wait for the end; what it wrote."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signum)
        status = self.process.wait(timeout=60)
        for reader in (self._stdout_reader, self._stderr_reader):
            reader.join(timeout=10)
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()
        self.stopped = Stopped(status, "".join(self._stdout), "".join(self._stderr))
        return self.stopped

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.stop()
