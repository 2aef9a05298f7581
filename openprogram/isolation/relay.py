"""The relay: outside the namespaces, the one way from inside them to the endpoints allowed.

A :class:`Relay` listens on a Unix socket in a fresh private (0700) folder. Bridges (one per
isolated command, any number at once) ask it, one short connection per request, to connect
to a bridged endpoint; it checks the request against the endpoints it was made with — its
own list, nothing the bridge says — connects and passes the connected socket back
(:mod:`~openprogram.isolation.wire`). It also collects what every bridge reports it stopped.

The command runs as the same user as the relay and can reach its socket too: the check is
the line that holds. A relay that dies (or is closed) does not hang a command: its bridges
find no socket, the connection to a bridged endpoint is closed at once, and the report goes
to the bridge's stderr instead."""

from __future__ import annotations

import contextlib
import shutil
import socket
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from openprogram.isolation import wire
from openprogram.isolation.launch import bridge_argv
from openprogram.quiet_threads import start_quiet

__all__ = ["Endpoint", "Relay"]

_REQUEST_TIMEOUT = 10.0
_CONNECT_TIMEOUT = 10.0
_MAX_REPORTS = 1024
_MAX_REQUESTS = 64
"""Requests served at once; one more is closed unanswered (the bridge closes its client)."""
_SOCKET_PATH_LIMIT = 100
"""A Unix socket's path must fit in 108 bytes; a folder under a longer TMPDIR uses /tmp."""


@dataclass(frozen=True)
class Endpoint:
    """A ``host:port`` bridged into the namespace: ``host`` as the user wrote it
    ("127.0.0.1", "localhost", "::1", or a name, which resolves outside)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Endpoint:
        """``HOST:PORT`` (``[::1]:5432`` for IPv6); ValueError saying what is wrong."""
        host, port = wire.parse_endpoint(text)
        return cls(host, port)

    def __str__(self) -> str:
        return wire.format_endpoint(self.host, self.port)


class Relay:
    """Outside. One per exec run, per record_replay() block, per pytest session; serves any
    number of bridge processes. A context manager: started on enter, stopped on exit."""

    def __init__(self, bridged: Sequence[Endpoint] = ()) -> None:
        for endpoint in bridged:
            wire.parse_endpoint(str(endpoint))  # the same check the bridge makes
        self._bridged = tuple(dict.fromkeys(bridged))
        self._allowed = {(endpoint.host, endpoint.port) for endpoint in self._bridged}
        self._stopped: dict[str, None] = {}
        self._lock = threading.Lock()
        self._serving = threading.BoundedSemaphore(_MAX_REQUESTS)
        self._folder: Path | None = None
        self._server: socket.socket | None = None
        self._thread: threading.Thread | None = None

    @property
    def socket_path(self) -> Path:
        if self._folder is None:
            raise RuntimeError("the relay is not started: use it as a context manager")
        return self._folder / "relay.sock"

    @property
    def bridged(self) -> tuple[Endpoint, ...]:
        return self._bridged

    def __enter__(self) -> Relay:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def start(self) -> None:
        if self._folder is not None:
            return
        folder = Path(tempfile.mkdtemp(prefix="openprogram-relay-"))  # 0700
        if len(str(folder)) > _SOCKET_PATH_LIMIT:
            shutil.rmtree(folder, ignore_errors=True)
            folder = Path(tempfile.mkdtemp(prefix="openprogram-relay-", dir="/tmp"))
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            server.bind(str(folder / "relay.sock"))
            server.listen(64)
        except OSError:
            server.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        self._folder, self._server = folder, server
        self._thread = threading.Thread(target=self._accept, name="openprogram-relay", daemon=True)
        start_quiet(self._thread)  # a signal sent to exec must wake exec's wait for the command

    def close(self) -> None:
        """Stop serving and remove the folder (bridges still running find no socket)."""
        server, folder, thread = self._server, self._folder, self._thread
        self._server = self._folder = self._thread = None
        if server is not None:
            with contextlib.suppress(OSError):
                server.shutdown(socket.SHUT_RDWR)
            server.close()
        if thread is not None:
            thread.join(timeout=5)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The argv that runs ``argv`` inside a new loopback-only namespace whose bridge serves
        the bridged endpoints through this relay. Needs no pass_fds; works from
        ``os.system`` (joined with :func:`shlex.join`) and ``Popen`` alike."""
        bridged = [(endpoint.host, endpoint.port) for endpoint in self._bridged]
        return bridge_argv(argv, relay=str(self.socket_path), bridged=bridged)

    def stopped(self) -> tuple[str, ...]:
        """One line per connection any of its namespaces stopped so far, deduplicated, e.g.
        ``127.0.0.1:50051 (TCP, refused in the isolated namespace)``. A bridge reports when
        its command has ended, before it exits."""
        with self._lock:
            return tuple(self._stopped)

    def _accept(self) -> None:
        server = self._server
        while server is not None:
            try:
                connection, _ = server.accept()
            except OSError:
                return  # closed
            if not self._serving.acquire(blocking=False):
                connection.close()
                continue
            threading.Thread(
                target=self._serve,
                args=(connection,),
                name="openprogram-relay-request",
                daemon=True,
            ).start()

    def _serve(self, connection: socket.socket) -> None:
        try:
            self._answer(connection)
        finally:
            self._serving.release()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(_REQUEST_TIMEOUT)
            try:
                words = wire.read_line(connection).split(" ")
                if words[0] == "CONNECT" and len(words) == 3:
                    self._connect(connection, words[1], words[2])
                elif words[0] == "STOPPED" and len(words) == 2 and words[1].isdigit():
                    self._collect(connection, min(int(words[1]), wire.MAX_STOPPED))
                else:
                    connection.sendall(b"NO not a request this relay knows\n")
            except OSError:
                return  # the bridge went away, or sent too much: nothing to answer

    def _connect(self, connection: socket.socket, host: str, port_text: str) -> None:
        port = int(port_text) if port_text.isdigit() else -1
        if (host, port) not in self._allowed:
            connection.sendall(b"NO this endpoint is not bridged\n")
            return
        try:
            outside = socket.create_connection((host, port), timeout=_CONNECT_TIMEOUT)
        except OSError as error:
            reason = (error.strerror or type(error).__name__).encode("ascii", "replace")
            connection.sendall(b"NO " + reason[:200] + b"\n")
            return
        with outside:
            outside.settimeout(None)  # the bridge gets a plain blocking socket
            socket.send_fds(connection, [b"OK\n"], [outside.fileno()])

    def _collect(self, connection: socket.socket, count: int) -> None:
        lines = [wire.read_line(connection) for _ in range(count)]
        with self._lock:
            for line in lines:
                if len(self._stopped) < _MAX_REPORTS:
                    self._stopped[line] = None
        connection.sendall(b"OK\n")
