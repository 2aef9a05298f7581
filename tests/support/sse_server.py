"""A real HTTP server on 127.0.0.1 that answers with scripted byte streams.

The vendor provider tests talk to it over a real socket: nothing of our own client is
mocked. Each request takes the next :class:`Script`, which says the status, the headers and
the body *pieces*: each piece is one TCP write (flushed, ``TCP_NODELAY``, a short pause
after it), so a test chooses exactly where the stream is cut — inside a JSON object, inside
a multi-byte UTF-8 character. The body is sent with chunked transfer encoding and then

* ``complete``: finished properly;
* ``drop``: the connection is closed without the end of the body (a dropped stream);
* ``hold``: kept open, silent, until the client goes away (``client_gone`` is then set) or
  the server stops — for read timeouts, aborts and consumers that stop early.

A script may also answer nothing: ``answer="silence"`` holds the connection without even a
status line, ``answer="close"`` closes it.

Every request is kept in ``received``: request line, headers (names in lower case), body.

    with ScriptedServer() as server:
        server.serve(Script([sse_data({"x": 1})]))
        ... POST to server.base_url ...
        assert server.received[0].json() == {...}
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Ending = Literal["complete", "drop", "hold"]
HOLD_LIMIT = 10.0
"""The longest a ``hold`` script keeps a connection open (seconds)."""


@dataclass
class Script:
    """The server's answer to one request."""

    pieces: list[bytes] = field(default_factory=list)
    status: int = 200
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    ending: Ending = "complete"
    pause: float = 0.001
    """Seconds to wait after each piece, so that pieces arrive as separate reads."""
    answer: Literal["reply", "silence", "close"] = "reply"
    """``silence``: no status line at all, the connection held as for ``hold``; ``close``:
    the connection closed without a reply."""


@dataclass
class Received:
    """One request as the server read it."""

    request_line: str
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def unused_port() -> int:
    """A port on 127.0.0.1 nobody listens on: connecting to it is refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def error_script(status: int, body: Any, headers: dict[str, str] | None = None) -> Script:
    """An HTTP error answer; a non-string ``body`` is sent as JSON."""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    content_type = "text/plain" if isinstance(body, str) else "application/json"
    return Script([raw], status=status, headers={"Content-Type": content_type, **(headers or {})})


def sse_event(data: Any, event: str | None = None) -> bytes:
    """One server-sent event; ``data`` that is not a string is sent as compact JSON."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def cut(data: bytes, *, every: int | None = None, inside: Iterable[str] = ()) -> list[bytes]:
    """``data`` in pieces: every ``every`` bytes, and one byte into each occurrence of the
    (multi-byte) characters in ``inside``, so that those characters are split across writes."""
    positions: set[int] = set()
    if every:
        positions.update(range(every, len(data), every))
    for character in inside:
        encoded = character.encode()
        assert len(encoded) > 1, f"{character!r} is one byte in UTF-8"
        start = data.find(encoded)
        assert start >= 0, f"{character!r} is not in the stream"
        while start >= 0:
            positions.add(start + 1)
            start = data.find(encoded, start + 1)
    bounds = [0, *sorted(p for p in positions if 0 < p < len(data)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


class ScriptedServer:
    """Serves :class:`Script` answers in order on ``127.0.0.1``; a context manager."""

    def __init__(self) -> None:
        self.scripts: deque[Script] = deque()
        self.received: list[Received] = []
        self.client_gone = threading.Event()
        """Set when a client closed a connection the server was holding open."""
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = _Server(("127.0.0.1", 0), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def serve(self, *scripts: Script) -> None:
        with self._lock:
            self.scripts.extend(scripts)

    def next_script(self) -> Script:
        with self._lock:
            if self.scripts:
                return self.scripts.popleft()
        return error_script(500, {"error": {"message": "the test server has no script left"}})

    def stop(self) -> None:
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    owner: ScriptedServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client closing its connection is how every call ends; anything else is shown.
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner.received.append(
            Received(
                request_line=self.requestline,
                method=self.command,
                path=self.path,
                headers={name.lower(): value for name, value in self.headers.items()},
                body=body,
            )
        )
        self._answer(owner.next_script())

    do_GET = do_POST

    def _answer(self, script: Script) -> None:
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if script.answer != "reply":
            self.close_connection = True
            if script.answer == "silence":
                self._hold()
            return
        self.send_response(script.status)
        for name, value in script.headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        try:
            for piece in script.pieces:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                time.sleep(script.pause)
            if script.ending == "complete":
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
        except (BrokenPipeError, ConnectionResetError):
            self.server.owner.client_gone.set()
            self.close_connection = True
            return
        self.close_connection = True
        if script.ending == "hold":
            self._hold()

    def _hold(self) -> None:
        owner = self.server.owner
        deadline = time.monotonic() + HOLD_LIMIT
        while not owner.stopping.is_set() and time.monotonic() < deadline:
            readable, _, _ = select.select([self.connection], [], [], 0.02)
            if not readable:
                continue
            try:
                data = self.connection.recv(4096)
            except OSError:
                data = b""
            if not data:
                owner.client_gone.set()
                return
