"""Recording and replaying a block of SDK calls, and watching that replay opens no socket.

:func:`recording` and :func:`replaying` put the HTTP boundary in record or replay mode for a
block, as the ways in do: replay ends by raising what the block left behind — the first
mismatch (also one the SDK or the program swallowed), then calls never requested.
:func:`sockets_watched` refuses and lists every connection attempt in the block.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from openprogram.http.boundary import HttpBoundary, activate_http_boundary
from openprogram.recording.call_writer import forget_writer, writer_for
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.reader import read_recording
from openprogram.recording.replay_session import ReplaySession

__all__ = ["recording", "replaying", "sockets_watched"]


@contextmanager
def recording(path: Path) -> Iterator[None]:
    """Every SDK request in the block is sent and recorded into ``path``."""
    deactivate = activate_http_boundary(HttpBoundary("record", writer=writer_for(path)))
    try:
        yield
    finally:
        deactivate()
        forget_writer(path)


@contextmanager
def replaying(path: Path) -> Iterator[ReplaySession]:
    """Every SDK request in the block is answered from ``path``; at the end, the first
    mismatch is raised, else an ``UnconsumedCallsError`` if calls were left."""
    session = ReplaySession(read_recording(path))
    deactivate = activate_http_boundary(HttpBoundary("replay", session=session))
    try:
        yield session
    except RecordReplayEscape as escape:
        raise escape.error from None
    finally:
        deactivate()
    if session.mismatches:
        raise session.mismatches[0]
    session.assert_consumed()


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
