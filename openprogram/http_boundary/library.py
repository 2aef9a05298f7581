"""One HTTP client library the boundary captures (``httpx`` or ``httpx2``), and what the
boundary needs of it.

The two libraries share one design but no classes: a response body served to an
``httpx2.Client`` must be an ``httpx2.SyncByteStream``, an error raised to it an ``httpx2``
exception. :class:`HttpLibrary` holds, for the module it was made from, the body stream
classes of the boundary combined with the library's stream base classes, its content
decoders and its exception classes. It is made when the library's client classes are
patched, after the library was imported by the program: this module imports neither.
"""

from __future__ import annotations

import builtins
from types import ModuleType
from typing import Any

from openprogram.errors import RecordedProviderError
from openprogram.http_boundary.recording import RecordingAsyncStream, RecordingSyncStream
from openprogram.recording.format import RecordedError

__all__ = ["HttpLibrary"]

_EXCEPTION_MODULES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2"})
"""Modules whose exception names are looked up in the client's library on replay: an error
recorded with an httpx client replays with an httpx2 client as the httpx2 class of that
name."""


class HttpLibrary:
    """What the HTTP boundary uses of one client library (``module``)."""

    def __init__(self, module: ModuleType) -> None:
        from openprogram.http_boundary.replay import ReplayAsyncStream, ReplaySyncStream

        self.module = module
        self.name = module.__name__
        sync_base, async_base = module.SyncByteStream, module.AsyncByteStream
        self.recording_sync: type[RecordingSyncStream] = type(
            "RecordingSyncStream", (RecordingSyncStream, sync_base), {}
        )
        self.recording_async: type[RecordingAsyncStream] = type(
            "RecordingAsyncStream", (RecordingAsyncStream, async_base), {}
        )
        self.replay_sync: type[ReplaySyncStream] = type(
            "ReplaySyncStream", (ReplaySyncStream, sync_base), {}
        )
        self.replay_async: type[ReplayAsyncStream] = type(
            "ReplayAsyncStream", (ReplayAsyncStream, async_base), {}
        )
        self.in_process_transports: tuple[type, ...] = tuple(
            cls
            for cls in (
                getattr(module, "MockTransport", None),
                getattr(module, "ASGITransport", None),
                getattr(module, "WSGITransport", None),
            )
            if isinstance(cls, type)
        )
        """Transports that never touch the network: their requests are not captured."""

    def response(self, status: int, headers: list[tuple[str, str]], stream: Any) -> Any:
        """A response of this library."""
        return self.module.Response(status, headers=headers, stream=stream)

    def content_decoder(self, headers: Any) -> Any:
        """A fresh decoder for a body with these response headers' ``content-encoding``
        (the library's own, as ``response.read()`` uses), or None for a plain body."""
        encoding = headers.get("content-encoding")
        if not encoding:
            return None
        probe = self.module.Response(200, headers=[("content-encoding", encoding)])
        return probe._get_content_decoder()

    @staticmethod
    def decode(decoder: Any, data: bytes) -> bytes:
        # httpx's decoders return bytes, httpx2's an iterator of them
        decoded = decoder.decode(data)
        return decoded if isinstance(decoded, bytes) else b"".join(decoded)

    @staticmethod
    def flush(decoder: Any) -> bytes:
        flushed = decoder.flush()
        return flushed if isinstance(flushed, bytes) else b"".join(flushed)

    def rebuild_error(self, recorded: RecordedError, request: Any) -> BaseException:
        """The exception a recorded transport error replays as: the class of this library
        by that name for an httpx/httpx2 (or httpcore) error, the built-in class for a
        built-in, else ``RecordedProviderError`` naming the recorded type."""
        module, _, name = recorded.type.rpartition(".")
        if module in _EXCEPTION_MODULES:
            cls = getattr(self.module, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                for arguments in ({"request": request}, {}):
                    try:
                        return cls(recorded.message, **arguments)
                    except TypeError:
                        continue
        elif not module:
            cls = getattr(builtins, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                try:
                    return cls(recorded.message)
                except Exception:  # a built-in whose constructor wants other arguments
                    pass

        return RecordedProviderError(recorded.type, recorded.message)
