"""What the HTTP boundary's tests share: a boundary active for a block, the rows a
recording holds, both client libraries, and a hand-made network transport.

:class:`ScriptedNetworkTransport` is a ``BaseTransport`` of either library that is not a
``MockTransport``: the boundary cannot tell it from a real network transport, so it is
captured, and a test controls exactly which chunks arrive and where the stream fails.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary
from openprogram.recording.reader import read_recording
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.writer import writer_for

LIBRARIES = ("httpx", "httpx2")


def library(name: str) -> ModuleType:
    return importlib.import_module(name)


@contextmanager
def recording_into(path: Path, **options: Any) -> Iterator[None]:
    """The HTTP boundary records into ``path`` inside the block."""
    deactivate = activate_http_boundary(HttpBoundary("record", writer=writer_for(path), **options))
    try:
        yield
    finally:
        deactivate()


@contextmanager
def replaying(path: Path, **options: Any) -> Iterator[ReplaySession]:
    """The HTTP boundary replays ``path`` inside the block; the session is yielded."""
    session = ReplaySession(read_recording(path))
    deactivate = activate_http_boundary(HttpBoundary("replay", session=session, **options))
    try:
        yield session
    finally:
        deactivate()


@contextmanager
def boundary_active(boundary: HttpBoundary) -> Iterator[None]:
    """``boundary`` is the active HTTP boundary inside the block."""
    deactivate = activate_http_boundary(boundary)
    try:
        yield
    finally:
        deactivate()


@contextmanager
def blocked(reason: str = "the configuration cannot be read") -> Iterator[None]:
    deactivate = activate_http_boundary(HttpBoundary("blocked", blocked_reason=reason))
    try:
        yield
    finally:
        deactivate()


def rows(path: Path) -> list[dict[str, Any]]:
    """The rows after the header."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines()[1:]]


def events(path: Path, call_index: int = 0) -> list[dict[str, Any]]:
    """The event payloads of one call."""
    return [
        row["event"]
        for row in rows(path)
        if row["type"] == "event" and row["call_index"] == call_index
    ]


def without_raw(event: dict[str, Any]) -> dict[str, Any]:
    """An event payload without its ``raw`` text (the bytes as they came, beside the parsed
    value)."""
    return {key: value for key, value in event.items() if key != "raw"}


def call_end(path: Path, call_index: int = 0) -> dict[str, Any]:
    return next(
        row for row in rows(path) if row["type"] == "call_end" and row["call_index"] == call_index
    )


Step = bytes | BaseException | Callable[[], None]
"""A chunk to hand on, an exception to raise there, or a check to run there."""


class ScriptedNetworkTransport:
    """Makes a network-like transport class of ``lib`` answering every request with
    ``status``, ``headers`` and a body of ``steps``; ``raise_before`` fails the request
    before any response. ``requests`` keeps what was sent."""

    def __init__(
        self,
        lib: ModuleType,
        steps: list[Step],
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        raise_before: BaseException | None = None,
    ) -> None:
        self.steps = steps
        self.status = status
        self.headers = headers or {"content-type": "text/event-stream"}
        self.raise_before = raise_before
        self.requests: list[Any] = []
        self.closed = False
        self.lib = lib
        owner = self

        class SyncBody(lib.SyncByteStream):  # type: ignore[name-defined,misc]
            def __iter__(self) -> Iterator[bytes]:
                yield from owner._chunks()

            def close(self) -> None:
                owner.closed = True

        class AsyncBody(lib.AsyncByteStream):  # type: ignore[name-defined,misc]
            async def __aiter__(self) -> AsyncIterator[bytes]:
                for chunk in owner._chunks():
                    yield chunk

            async def aclose(self) -> None:
                owner.closed = True

        class Transport(lib.BaseTransport, lib.AsyncBaseTransport):  # type: ignore[name-defined,misc]
            def handle_request(self, request: Any) -> Any:
                request.read()
                return owner._answer(request, SyncBody())

            async def handle_async_request(self, request: Any) -> Any:
                await request.aread()
                return owner._answer(request, AsyncBody())

        self.transport = Transport()

    def _answer(self, request: Any, body: Any) -> Any:
        self.requests.append(request)
        if self.raise_before is not None:
            raise self.raise_before
        return self.lib.Response(self.status, headers=self.headers, stream=body)

    def _chunks(self) -> Iterator[bytes]:
        for step in self.steps:
            if isinstance(step, bytes):
                yield step
            elif isinstance(step, BaseException):
                raise step
            else:
                step()
