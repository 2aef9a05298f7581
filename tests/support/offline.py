"""No sockets at all, loopback included: what replay must work without.

:func:`offline` refuses every connection in this process for the length of a block;
:data:`SOCKETS_REFUSED` is the same refusal as Python source, run first in a child process.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

SOCKETS_REFUSED = """\
import socket
def refuse(*args, **kwargs):
    raise OSError("sockets are disabled")
socket.socket.connect = refuse
socket.socket.connect_ex = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
"""


def _refuse(*args: object, **kwargs: object) -> None:
    raise OSError("sockets are disabled")


@contextmanager
def offline() -> Iterator[None]:
    """Every attempt to open a connection inside the block fails, loopback included."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", _refuse)
        patch.setattr(socket.socket, "connect_ex", _refuse)
        patch.setattr(socket, "create_connection", _refuse)
        patch.setattr(socket, "getaddrinfo", _refuse)
        yield
