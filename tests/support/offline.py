"""No sockets at all, loopback included: what replay must work without.

:func:`offline` refuses every connection in this process for the length of a block;
:data:`SOCKETS_REFUSED` is the same refusal as Python source, run first in a child process;
:func:`sleeps_asked` lists the sleeps asked for, to show a wait was not replayed.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
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


@contextmanager
def sleeps_asked() -> Iterator[list[float]]:
    """The seconds of every sleep asked for inside the block, in order.

    ``time.sleep``, ``asyncio.sleep`` and ``anyio.sleep`` (the SDKs' retry back-off) are
    counted and still sleep. What a test learns from the list does not depend on how busy
    the machine is, as a stopwatch would: a back-off replay skipped shows as a sleep not
    asked for, however long the process waited for a core.
    """
    asked: list[float] = []
    real_sleep, real_async_sleep, real_anyio_sleep = time.sleep, asyncio.sleep, anyio.sleep

    def counted_sleep(seconds: float) -> None:
        asked.append(seconds)
        real_sleep(seconds)

    async def counted_async_sleep(seconds: float, *args: Any, **kwargs: Any) -> Any:
        asked.append(seconds)
        return await real_async_sleep(seconds, *args, **kwargs)

    async def counted_anyio_sleep(seconds: float) -> None:
        asked.append(seconds)
        await real_anyio_sleep(seconds)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(time, "sleep", counted_sleep)
        patch.setattr(asyncio, "sleep", counted_async_sleep)
        patch.setattr(anyio, "sleep", counted_anyio_sleep)
        yield asked
