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
The server, the request log and the ways of writing an answer are
:mod:`tests.support.loopback_server`'s.

    with ScriptedServer() as server:
        server.serve(Script([sse_event({"x": 1})]))
        ... POST to server.base_url ...
        assert server.received[0].json() == {...}
"""

from __future__ import annotations

import itertools
import json
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.support.loopback_server import (
    LoopbackHandler,
    LoopbackServer,
    Received,
    sse_event,
    unused_port,
)

__all__ = [
    "Ending",
    "Received",
    "Script",
    "ScriptedServer",
    "cut",
    "error_script",
    "sse_event",
    "unused_port",
]

Ending = Literal["complete", "drop", "hold"]


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


def error_script(status: int, body: Any, headers: dict[str, str] | None = None) -> Script:
    """An HTTP error answer; a non-string ``body`` is sent as JSON."""
    raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    content_type = "text/plain" if isinstance(body, str) else "application/json"
    return Script([raw], status=status, headers={"Content-Type": content_type, **(headers or {})})


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


class _Handler(LoopbackHandler):
    do_GET = LoopbackHandler.do_POST


class ScriptedServer(LoopbackServer):
    """Serves :class:`Script` answers in order on ``127.0.0.1``; a context manager."""

    handler = _Handler

    def __init__(self) -> None:
        self.scripts: deque[Script] = deque()
        super().__init__()

    def serve(self, *scripts: Script) -> None:
        with self.lock:
            self.scripts.extend(scripts)

    def next_script(self) -> Script:
        with self.lock:
            if self.scripts:
                return self.scripts.popleft()
        return error_script(500, {"error": {"message": "the test server has no script left"}})

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        script = self.next_script()
        if script.answer != "reply":
            http.close_connection = True
            if script.answer == "silence":
                http.hold()
            return
        http.send_head(script.status, {**script.headers, "Transfer-Encoding": "chunked"})
        for piece in script.pieces:
            http.send_chunk(piece)
            time.sleep(script.pause)
        if script.ending == "complete":
            http.end_chunks()
        elif script.ending == "drop":
            http.cut()
        else:
            http.hold()
