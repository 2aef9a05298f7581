"""httpx and httpx2, captured at their clients' ``_transport_for_url``: two instances of
:class:`HttpxLibrary`, one per module name.

Every request an httpx or httpx2 ``Client`` / ``AsyncClient`` sends (each hop of a redirect
too) asks its ``_transport_for_url`` for the transport to send it through. The patched
method asks the original, then, while an HTTP boundary is active and the request is captured
(:func:`~openprogram.http_boundary.exchange.captures`; never through a transport that does
not touch the network: ``MockTransport``, ``ASGITransport``, ``WSGITransport``), returns a
:class:`CapturingTransport`, whose ``handle_request`` and ``handle_async_request`` drive the
one :func:`~openprogram.http_boundary.exchange.exchange_flow`; while none is, it returns the
original's answer after one attribute read.

The two libraries share one design but no classes: a body served to an ``httpx2.Client``
must be an ``httpx2.SyncByteStream``, an error raised to it an ``httpx2`` exception. What is
bound to the module — the boundary's body streams combined with the library's stream base
classes, its ``Response``, its content decoders and its exception classes — is built when the
module is hooked, after the program imported it: this module imports neither library. After
``httpx2.alias_httpx()``, ``httpx`` *is* ``httpx2``: each class object is patched once (a mark
in its ``__dict__`` says it is), by the library the module is named after."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    AsyncByteStream,
    BodyRecorder,
    HttpHeaders,
    HttpRequest,
    HttpResponse,
    HttpTransport,
    HttpURL,
    SyncByteStream,
    rebuilt_error,
)

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = ["HttpxLibrary"]

_EXCEPTION_MODULES = frozenset({"httpx", "httpx2", "httpcore", "httpcore2"})
"""Modules whose exception names are looked up in the client's library on replay: an error recorded
with an httpx client replays with an httpx2 client as the httpx2 class of that name."""
_PATCH_MARK = "_openprogram_http_capture"
_CLIENT_CLASSES = ("Client", "AsyncClient")


class HttpxLibrary:
    """httpx or httpx2 (``name``), as the HTTP boundary captures it; bound to the module
    when that is hooked (a module imported afresh gets an instance of its own)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None
        self.in_process_transports: tuple[type, ...] = ()
        """Transports that never touch the network: their requests are not captured."""
        self._recording_sync: type[RecordingSyncStream] = RecordingSyncStream
        self._recording_async: type[RecordingAsyncStream] = RecordingAsyncStream
        self._replay_sync: type[ReplaySyncStream] = ReplaySyncStream
        self._replay_async: type[ReplayAsyncStream] = ReplayAsyncStream

    @classmethod
    def bound_to(cls, module: ModuleType) -> HttpxLibrary:
        """The library of ``module`` (httpx or httpx2) for a caller that wraps its transport
        in a ``CapturingTransport`` itself (``openprogram serve``): bound to the module, whose
        clients are left unpatched."""
        library = cls(module.__name__)
        library._bind(module)
        return library

    @property
    def name(self) -> str:
        return self._name

    @property
    def module_names(self) -> tuple[str, ...]:
        return (self._name,)

    def hook(self, module: ModuleType) -> None:
        """Patch the client classes of ``module``, each class object once (called under
        the patching's lock). A module named after another library (``httpx`` after
        ``httpx2.alias_httpx()``) is that library's to hook."""
        if module.__name__ != self._name:
            return
        pending = [
            cls
            for cls in (getattr(module, name, None) for name in _CLIENT_CLASSES)
            if isinstance(cls, type)
            and _PATCH_MARK not in cls.__dict__
            and "_transport_for_url" in cls.__dict__
        ]
        if not pending:
            return
        library = self if self._module in (None, module) else HttpxLibrary(self._name)
        library._bind(module)
        for cls in pending:
            cls._transport_for_url = _capturing(cls.__dict__["_transport_for_url"], library)  # type: ignore[attr-defined]
            setattr(cls, _PATCH_MARK, True)

    def _bind(self, module: ModuleType) -> None:
        self._module = module
        sync_base, async_base = module.SyncByteStream, module.AsyncByteStream
        self._recording_sync = type("RecordingSyncStream", (RecordingSyncStream, sync_base), {})
        self._recording_async = type("RecordingAsyncStream", (RecordingAsyncStream, async_base), {})
        self._replay_sync = type("ReplaySyncStream", (ReplaySyncStream, sync_base), {})
        self._replay_async = type("ReplayAsyncStream", (ReplayAsyncStream, async_base), {})
        self.in_process_transports = tuple(
            cls
            for cls in (
                getattr(module, "MockTransport", None),
                getattr(module, "ASGITransport", None),
                getattr(module, "WSGITransport", None),
            )
            if isinstance(cls, type)
        )

    @property
    def module(self) -> ModuleType:
        """The module this library is bound to."""
        module = self._module
        assert module is not None, f"{self._name} is used before it was hooked"
        return module

    def head(self, response: HttpResponse) -> tuple[int, HttpHeaders]:
        return response.status_code, response.headers

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> HttpResponse:
        stream = self._replay_async(body) if asynchronous else self._replay_sync(body)
        response: HttpResponse = self.module.Response(status, headers=headers, stream=stream)
        response.request = request
        return response

    def record_body(
        self, response: HttpResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        content = self._read_content(response)
        if content is not None:
            recorder.complete(content)
        elif asynchronous:
            source = cast(AsyncByteStream, response.stream)
            response.stream = self._recording_async(source, recorder)
        else:
            response.stream = self._recording_sync(cast(SyncByteStream, response.stream), recorder)

    def _read_content(self, response: HttpResponse) -> bytes | None:
        """The decoded body of a response the transport has already read (one built with
        ``content=`` or ``json=`` is read at once), or None: its client never iterates the
        stream, so the body is recorded from what the library has decoded."""
        if not response.is_stream_consumed:
            return None
        try:
            return response.content
        except self.module.ResponseNotRead:
            return None

    def content_decoder(self, content_encoding: str) -> JoinedDecoder:
        probe = self.module.Response(200, headers=[("content-encoding", content_encoding)])
        return JoinedDecoder(probe._get_content_decoder())

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of this library by that name for an httpx/httpx2 (or httpcore) error —
        with the recorded ``reason`` as an ``OSError`` for its cause — the built-in class
        for a built-in, else ``RecordedProviderError`` naming the recorded type."""

        def build(cls: type[Exception], message: str) -> BaseException | None:
            for arguments in ({"request": request}, {}):
                try:
                    rebuilt = cls(message, **arguments)
                except TypeError:
                    continue
                if recorded.reason is not None:  # what an SDK reading the chain shows
                    rebuilt.__cause__ = OSError(recorded.reason)
                return rebuilt
            return None

        ours = recorded.type.rpartition(".")[0] in _EXCEPTION_MODULES
        return rebuilt_error(recorded, self.module if ours else None, build)


def _capturing(
    original: Callable[[object, HttpURL], HttpTransport], library: HttpxLibrary
) -> Callable[[object, HttpURL], HttpTransport]:
    # the exchange (and what it imports, asyncio among them) loads once a library is hooked
    from openprogram.http_boundary.exchange import capture_transport

    @functools.wraps(original)
    def _transport_for_url(self: object, url: HttpURL) -> HttpTransport:
        transport = original(self, url)
        boundary = ACTIVATIONS.current
        if boundary is None or isinstance(transport, library.in_process_transports):
            return transport
        return capture_transport(self, transport, url, boundary, library)

    return _transport_for_url


class _LibraryDecoder(Protocol):
    """A content decoder of httpx (returns bytes) or httpx2 (an iterator of them)."""

    def decode(self, data: bytes) -> bytes | Iterable[bytes]: ...
    def flush(self) -> bytes | Iterable[bytes]: ...


class JoinedDecoder:
    """A library's content decoder, each answer as one ``bytes``."""

    __slots__ = ("_decoder",)

    def __init__(self, decoder: _LibraryDecoder) -> None:
        self._decoder = decoder

    def decompress(self, data: bytes) -> bytes:
        decoded = self._decoder.decode(data)
        return decoded if isinstance(decoded, bytes) else b"".join(decoded)

    def flush(self) -> bytes:
        flushed = self._decoder.flush()
        return flushed if isinstance(flushed, bytes) else b"".join(flushed)


class RecordingSyncStream:
    """A response body that hands on the transport's chunks and reports them to the
    recorder (combined with the library's ``SyncByteStream``). A second iteration after a
    pause (openai 3.x drains the rest of an async stream after ``[DONE]``) continues where
    the first stopped: the remainder is recorded, not a restart."""

    def __init__(self, source: SyncByteStream, recorder: BodyRecorder) -> None:
        self._source = source
        self._recorder = recorder
        self._chunks: Iterator[bytes] | None = None
        """One iterator of the source for every iteration: a second one continues."""

    def __iter__(self) -> Iterator[bytes]:
        chunks = self._chunks
        if chunks is None:
            chunks = self._chunks = iter(self._source)
        recorder = self._recorder
        while True:
            try:
                chunk = next(chunks)
            except BaseException as exc:
                if recorder.ended_by(exc):
                    return
                raise
            recorder.feed(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self._source.close()
        finally:
            self._recorder.closed()


class RecordingAsyncStream:
    """The async form of :class:`RecordingSyncStream` (with ``AsyncByteStream``)."""

    def __init__(self, source: AsyncByteStream, recorder: BodyRecorder) -> None:
        self._source = source
        self._recorder = recorder
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = self._chunks
        if chunks is None:
            chunks = self._chunks = self._source.__aiter__()
        recorder = self._recorder
        while True:
            try:
                chunk = await chunks.__anext__()
            except BaseException as exc:
                if recorder.ended_by(exc):
                    return
                raise
            recorder.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._source.aclose()
        finally:
            self._recorder.closed()


class ReplaySyncStream:
    """A replayed body (combined with the library's ``SyncByteStream``): every iteration
    continues the one walk of the recorded events."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        # Not ``yield from``: closing this iteration would close the walk a later one continues.
        for chunk in self._chunks:  # noqa: UP028
            yield chunk

    def close(self) -> None:
        pass


class ReplayAsyncStream:
    """The async form of :class:`ReplaySyncStream` (with ``AsyncByteStream``)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        pass
