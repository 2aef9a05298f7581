"""What a bridge and its relay say to each other over the relay's Unix socket.

One short connection per request, one line each way (ASCII, at most :data:`MAX_LINE` bytes):

* ``CONNECT <host> <port>`` — the bridge accepted a connection inside for the bridged
  endpoint ``host:port`` (as the user wrote it). The relay checks it against its own list,
  connects out and answers ``OK`` with the connected socket passed along (``SCM_RIGHTS``), or
  ``NO <reason>``. The bridge then passes bytes between the two sockets itself: the relay
  holds nothing once it has answered, and a relay that dies later breaks no connection.
* ``STOPPED <count>`` then ``count`` lines, each a connection the namespace stopped — the
  bridge's report at the end of its run; the relay answers ``OK``.

The relay's socket is in a private (0700) folder, but the command runs as the same user and
can reach it too: the relay's check of each ``CONNECT`` is the line that holds."""

from __future__ import annotations

import socket

__all__ = ["MAX_LINE", "MAX_STOPPED", "format_endpoint", "parse_endpoint", "read_line"]

MAX_LINE = 1024
MAX_STOPPED = 256


def parse_endpoint(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` as ``(host, port)``; ValueError saying what is wrong."""
    host, separator, port_text = text.rpartition(":")
    if not separator or not host:
        raise ValueError(f"{text!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: write an IPv6 address in brackets, as [::1]:5432")
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise ValueError(f"{text!r}: the port must be a number from 1 to 65535")
    if not host.isascii() or any(character.isspace() for character in host):
        raise ValueError(f"{text!r}: the host must be an address or an ASCII name")
    return host, int(port_text)


def format_endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def read_line(connection: socket.socket) -> str:
    """One line (without its newline), read a byte at a time so nothing after it is taken.

    Raises ConnectionError when the peer closes first or the line is longer than
    :data:`MAX_LINE`."""
    data = bytearray()
    while len(data) <= MAX_LINE:
        byte = connection.recv(1)
        if not byte:
            raise ConnectionError("the other side closed before a whole line")
        if byte == b"\n":
            return data.decode("ascii", "replace")
        data += byte
    raise ConnectionError(f"a line longer than {MAX_LINE} bytes")
