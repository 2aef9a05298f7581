"""A server on another loopback address, ``127.0.0.2``, standing in for an attacker's host:
it counts every connection made to it, keeps every byte it was sent, and answers each HTTP
request it reads with ``{}``.

It is plain TCP, not an HTTP server, so that a connection that sends nothing — or that
breaks off before a whole request — is seen too: a test that holds it received nothing
knows no connection was opened at all.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Self

HOST = "127.0.0.2"
"""The attacker's address: loopback, but another host than the 127.0.0.1 servers."""

READ_LIMIT = 1 << 20
"""The most bytes kept from one connection."""

WAIT = 5.0
"""Seconds a connection may stay silent before the server gives up on it."""

ANSWER = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n"
    b"connection: close\r\n\r\n{}"
)


class AttackerServer:
    """Listens on ``127.0.0.2`` (any free port) from its creation; a context manager."""

    def __init__(self) -> None:
        self.connections: list[bytes] = []
        """What each connection sent, in the order they were accepted (a connection still
        open holds what it sent so far)."""
        self._lock = threading.Lock()
        self._listener = socket.create_server((HOST, 0))
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accepting = threading.Thread(target=self._accept, daemon=True)
        self._accepting.start()

    @property
    def origin(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def received(self) -> bytes:
        """Every byte every connection sent, joined."""
        with self._lock:
            return b"".join(self.connections)

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.connections.append(b"")
                number = len(self.connections) - 1
            thread = threading.Thread(target=self._serve, args=(connection, number), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _serve(self, connection: socket.socket, number: int) -> None:
        with connection:
            connection.settimeout(WAIT)
            data = b""
            with contextlib.suppress(OSError):
                while len(data) < READ_LIMIT and not _whole_request(data):
                    piece = connection.recv(65536)
                    if not piece:
                        break
                    data += piece
                    with self._lock:
                        self.connections[number] = data
                if _whole_request(data):
                    connection.sendall(ANSWER)

    def stop(self) -> None:
        """Stop accepting, count the connections still waiting to be accepted (with what
        they sent so far), and close."""
        self._stopping.set()
        self._accepting.join(timeout=WAIT)
        self._listener.setblocking(False)
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                break
            with connection:
                connection.setblocking(False)
                sent = b""
                with contextlib.suppress(OSError):
                    sent = connection.recv(READ_LIMIT)
            with self._lock:
                self.connections.append(sent)
        self._listener.close()
        for thread in self._threads:
            thread.join(timeout=WAIT)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _whole_request(data: bytes) -> bool:
    """Whether ``data`` holds a request's head and the body its ``content-length`` gives."""
    head, separator, body = data.partition(b"\r\n\r\n")
    if not separator:
        return False
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip() or 0)
    return len(body) >= length
