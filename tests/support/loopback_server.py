"""The plumbing of a test HTTP server on ``127.0.0.1``: what every loopback server the tests
talk to shares, whatever it answers.

:class:`LoopbackServer` listens on ``127.0.0.1`` (port 0: any free one), serves in a daemon
thread from its creation, and is a context manager; :meth:`~LoopbackServer.stop` stops
listening and closes every open connection, idle keep-alive ones too. Each request is read
once, kept in ``received`` (:class:`Received`), and handed to the subclass's
:meth:`~LoopbackServer.answer` with the connection's :class:`LoopbackHandler`, whose helpers
write an answer the way a test wants it to arrive: the status line and headers flushed, a
body whole or in chunks of chunked transfer encoding (one TCP write each, ``TCP_NODELAY``),
the connection cut without the end of the body, or held open and silent until the client
goes away or the server stops. A client that went away while being answered sets
``client_gone``.

Also the bytes of one server-sent event (:func:`sse_event`) and a port where a connection
is refused (:func:`unused_port`).
"""

from __future__ import annotations

import contextlib
import json
import select
import socket
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar, Self

HOST = "127.0.0.1"
"""The only address a loopback server binds."""

HOLD_LIMIT = 10.0
"""The longest a connection is held open and silent (seconds)."""


@dataclass
class Received:
    """One request as the server read it (header names in lower case)."""

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
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


def sse_event(
    data: Any,
    event: str | None = None,
    *,
    ensure_ascii: bool = False,
    separators: tuple[str, str] | None = None,
) -> bytes:
    """One server-sent event; ``data`` that is not a string is sent as JSON, dumped with
    ``ensure_ascii`` and ``separators`` as :func:`json.dumps` takes them."""
    if isinstance(data, str):
        payload = data
    else:
        payload = json.dumps(data, ensure_ascii=ensure_ascii, separators=separators)
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # a suite of parallel clients (socketserver's default is 5)
    owner: LoopbackServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client, or the stop, closing a connection is how calls end; anything else is shown.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class LoopbackHandler(BaseHTTPRequestHandler):
    """One connection to a :class:`LoopbackServer`, and the ways of writing an answer on it."""

    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    @property
    def owner(self) -> LoopbackServer:
        return self.server.owner

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def setup(self) -> None:
        super().setup()
        with self.owner.lock:
            self.owner.connections.add(self.connection)

    def finish(self) -> None:
        with self.owner.lock:
            self.owner.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def do_POST(self) -> None:
        owner = self.owner
        length = int(self.headers.get("Content-Length") or 0)
        received = Received(
            request_line=self.requestline,
            method=self.command,
            path=self.path if owner.path_with_query else self.path.partition("?")[0],
            headers={name.lower(): value for name, value in self.headers.items()},
            body=self.rfile.read(length) if length else b"",
        )
        owner.received.append(received)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            owner.answer(self, received)
        except (BrokenPipeError, ConnectionResetError):
            owner.client_gone.set()
            self.close_connection = True

    def send_head(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line (with ``Date`` and ``Server``) and ``headers``, flushed."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()

    def send_body(self, raw: bytes) -> None:
        """A whole body, in one write."""
        self.wfile.write(raw)
        self.wfile.flush()

    def send_chunk(self, piece: bytes) -> None:
        """One chunk of a chunked body, in one TCP write."""
        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        self.wfile.flush()

    def end_chunks(self) -> None:
        """The end of a chunked body."""
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def cut(self) -> None:
        """Close the connection now, without the end of the body."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def hold(self) -> None:
        """Stay silent until the client goes away (``client_gone`` is then set), the server
        stops or :data:`HOLD_LIMIT` passes; the connection is then closed."""
        self.close_connection = True
        owner = self.owner
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


class LoopbackServer:
    """A threaded HTTP server on ``127.0.0.1``, serving from its creation; a context manager.

    A subclass says what each request gets in :meth:`answer`."""

    handler: ClassVar[type[LoopbackHandler]] = LoopbackHandler
    """The request handler class (POST only, unless a subclass sets another)."""
    path_with_query: ClassVar[bool] = True
    """Whether a received request's ``path`` keeps its query string."""

    def __init__(self, port: int = 0) -> None:
        """``port``: 0 for any free one, or a given one."""
        self.received: list[Received] = []
        self.client_gone = threading.Event()
        """Set when a client went away while the server was answering it or holding its
        connection open."""
        self.stopping = threading.Event()
        self.connections: set[socket.socket] = set()
        self.lock = threading.Lock()
        self._httpd = _HTTPServer((HOST, port), self.handler)
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
        return f"http://{HOST}:{self.port}"

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        """Answer one request, through ``http``'s helpers."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop listening and close every open connection (also idle keep-alive ones);
        stopping again does nothing more."""
        self.stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        with self.lock:
            open_connections = list(self.connections)
        for connection in open_connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
