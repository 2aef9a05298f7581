"""Recording and replaying a block of SDK calls with ``openprogram.record_replay()``, and
watching that replay opens no socket.

:func:`recording` and :func:`replaying` are the library's context manager in record and
replay mode (replay ends by raising what the block left behind: the first mismatch — also
one the SDK or the program swallowed — then calls never requested); :func:`replaying`
yields the replay session. :func:`sockets_watched` refuses and lists every connection
attempt in the block.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.recording.replay_session import ReplaySession

__all__ = ["recording", "replaying", "sockets_watched"]


@contextmanager
def recording(path: Path) -> Iterator[None]:
    """Every SDK request in the block is sent and recorded into ``path``."""
    with openprogram.record_replay(path, mode="record"):
        yield


@contextmanager
def replaying(path: Path) -> Iterator[ReplaySession]:
    """Every SDK request in the block is answered from ``path``; the session is yielded."""
    with openprogram.record_replay(path, mode="replay") as active:
        assert active.session is not None
        yield active.session


@contextmanager
def sockets_watched() -> Iterator[list[Any]]:
    """Every connection attempt in the block (loopback included) is refused and listed."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise OSError("sockets are disabled")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket.socket, "connect", refuse)
        patch.setattr(socket.socket, "connect_ex", refuse)
        patch.setattr(socket, "create_connection", refuse)
        patch.setattr(socket, "getaddrinfo", refuse)
        yield attempts
