"""One request, one call, however the client libraries stack.

A client library may send through another one the boundary also captures: litellm's and the
SDKs' aiohttp transports are httpx (or httpx2) over aiohttp, an adapter of ``requests`` may
relay through a second urllib3 pool, a connection of urllib3 may hold an ``http.client``
one, an httpx2 transport may send with an httpx client. Each such request is one call: the
outermost library captured records, replays or refuses it, and the layers beneath pass it
through.

While a capture sends a request live (recording it, or sending what ``replay_or_record``
has not recorded), :func:`sending_beneath` marks the context it sends from; a library's
capture asked about a request from a context so marked leaves it alone
(:func:`~openprogram.http_boundary.exchange.captures` asks :func:`handled_above`). Under
replay the outer capture answers from the recording, so the layers beneath are never
reached.

The mark is a :class:`~contextvars.ContextVar`: it holds for the thread and the task that
send, and for the tasks they start while sending (asyncio copies the context into a new
task, which keeps it) — never for a request another task or thread sends meanwhile. A layer
that hands the request to a worker thread keeps the mark when it hands the context over too,
as ``asyncio.to_thread``, anyio's worker threads and ``contextvars.copy_context().run`` do;
a thread started bare (``threading.Thread``, ``ThreadPoolExecutor.submit``,
``loop.run_in_executor``) starts without it, and a captured library it sends through there
records the request again. ``requests``, urllib3 and ``http.client`` send in the calling
thread, and the transports of httpx, httpx2 and aiohttp in the calling task.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["handled_above", "sending_beneath"]

_SENDING: ContextVar[bool] = ContextVar("openprogram_http_sending_beneath", default=False)
"""True while a capture sends a request live through the layers beneath it."""


@contextmanager
def sending_beneath() -> Iterator[None]:
    """Mark the block as a captured request being sent live: a captured library reached
    inside it passes its request through (see :func:`handled_above`)."""
    token = _SENDING.set(True)
    try:
        yield
    finally:
        _SENDING.reset(token)


def handled_above() -> bool:
    """Whether a request sent now is one a capture above is already sending (so it is the
    layers beneath that send it, uncaptured)."""
    return _SENDING.get()
