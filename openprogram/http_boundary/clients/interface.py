"""What the HTTP boundary needs of a client library, and the shapes of the library objects it
touches, as typing protocols.

:class:`ClientLibrary` is one library the boundary captures: the modules it hooks and how,
how a captured request reads (as a :class:`CapturedRequest`), where it connects (a
:class:`Destination`), how a response and a recorded error are built back in that library,
and how a recorded response's body is teed. The other protocols describe the objects of an
httpx-shaped library the boundary reads or calls, so none of them is ``Any`` on the seam.
"""

from __future__ import annotations

import http
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = [
    "AsyncByteStream",
    "AsyncTransport",
    "BodyRecorder",
    "CapturedRequest",
    "ClientLibrary",
    "ContentDecoder",
    "Destination",
    "HttpHeaders",
    "HttpRequest",
    "HttpResponse",
    "HttpTransport",
    "HttpURL",
    "ReadsThroughProtocols",
    "SyncByteStream",
    "SyncTransport",
    "reason_phrase",
]


@dataclass(frozen=True, slots=True)
class CapturedRequest:
    """A captured request as the boundary stores and compares it: its ``method``, its
    ``url`` as text, its ``headers`` (lower-case names, in order, repeated names repeated)
    and its whole ``body``."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes


class Destination(NamedTuple):
    """Where a request connects: ``host`` (lower-case), ``port`` as the URL names it (None
    for the scheme's default) and ``scheme``."""

    host: str
    port: int | None
    scheme: str


class HttpURL(Protocol):
    """A library's URL."""

    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int | None: ...
    @property
    def scheme(self) -> str: ...


class HttpHeaders(Protocol):
    """A library's headers: case-insensitive, repeated names joined by ``get``."""

    def get(self, key: str, default: str | None = None) -> str | None: ...
    def multi_items(self) -> list[tuple[str, str]]: ...


class HttpRequest(Protocol):
    """A library's request (``content`` once it is read)."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> HttpURL: ...
    @property
    def headers(self) -> HttpHeaders: ...
    @property
    def content(self) -> bytes: ...
    def read(self) -> bytes: ...
    async def aread(self) -> bytes: ...


class SyncByteStream(Protocol):
    """A response body read synchronously."""

    def __iter__(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...


class AsyncByteStream(Protocol):
    """A response body read asynchronously."""

    def __aiter__(self) -> AsyncIterator[bytes]: ...
    async def aclose(self) -> None: ...


class HttpResponse(Protocol):
    """A library's response, as a transport returns it."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> HttpHeaders: ...
    @property
    def is_stream_consumed(self) -> bool: ...
    @property
    def content(self) -> bytes:
        """The decoded body, once it is read."""
        ...

    stream: SyncByteStream | AsyncByteStream
    request: HttpRequest

    def close(self) -> None: ...
    async def aclose(self) -> None: ...


class SyncTransport(Protocol):
    """A library's transport, sending synchronously."""

    def handle_request(self, request: HttpRequest) -> HttpResponse: ...


class AsyncTransport(Protocol):
    """A library's transport, sending asynchronously."""

    async def handle_async_request(self, request: HttpRequest) -> HttpResponse: ...


HttpTransport: TypeAlias = SyncTransport | AsyncTransport
"""The transport a client sends through: sync for a ``Client``, async for an
``AsyncClient``."""


class ContentDecoder(Protocol):
    """A decoder of one encoded body, fed its bytes as they came off the wire."""

    def decode(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class BodyRecorder(Protocol):
    """What a teed response body reports to the recording: each chunk as it came off the
    wire (``feed``), what ended the source (``ended_by``: True for the end of the body),
    the client's close of the body (``closed``: the end of the body when all of it had
    arrived, else an abandoned one), or a body read before it was teed, whole and decoded
    (``complete``)."""

    def feed(self, chunk: bytes) -> None: ...
    def ended_by(self, error: BaseException) -> bool: ...
    def closed(self) -> None: ...
    def complete(self, content: bytes) -> None: ...


class ReadsThroughProtocols:
    """The part of a :class:`ClientLibrary` that is the same for every library once its
    request and URL are seen as :class:`HttpRequest` and :class:`HttpURL` (an adapter wraps
    them in views that are): how a captured request reads, and where it connects."""

    def captured_request(self, request: HttpRequest) -> CapturedRequest:
        """``request`` (its body read) as the boundary stores it."""
        return CapturedRequest(
            request.method, str(request.url), tuple(request.headers.multi_items()), request.content
        )

    def destination(self, url: HttpURL) -> Destination:
        """Where a request for ``url`` connects."""
        return Destination(url.host.lower(), url.port, url.scheme)


class ClientLibrary(Protocol):
    """One HTTP client library the boundary captures."""

    @property
    def name(self) -> str:
        """The library's name (its top-level module)."""
        ...

    @property
    def module_names(self) -> tuple[str, ...]:
        """The modules to hook, once each is imported (never imported by openprogram)."""
        ...

    def hook(self, module: ModuleType) -> None:
        """Patch ``module`` (one of ``module_names``, just imported) so its requests are
        captured while a boundary is active (idempotent)."""
        ...

    def captured_request(self, request: HttpRequest) -> CapturedRequest:
        """``request`` (its body read) as the boundary stores it."""
        ...

    def destination(self, url: HttpURL) -> Destination:
        """Where a request for ``url`` connects."""
        ...

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> HttpResponse:
        """A response of this library to ``request``, its body the chunks of ``body``."""
        ...

    def record_body(
        self, response: HttpResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        """Have ``response``'s body report each chunk to ``recorder`` as the client reads
        it (a body already read reports it whole at once)."""
        ...

    def content_decoder(self, content_encoding: str) -> ContentDecoder:
        """A fresh decoder for a body of this ``content-encoding`` (the library's own, as
        its clients decode a body they read)."""
        ...

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The exception a recorded transport error replays as in this library."""
        ...


def reason_phrase(status: int) -> str:
    """The status line's phrase of ``status`` ("" for a code without one)."""
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""
