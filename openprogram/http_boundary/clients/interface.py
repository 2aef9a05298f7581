"""What the HTTP boundary needs of a client library, the shapes of the library objects it
touches, and what every library's adapter reads the same way.

:class:`ClientLibrary` is one library the boundary captures: the modules it hooks and how, how a
captured request reads (as a :class:`CapturedRequest`), where it connects (a :class:`Destination`),
how a response's head reads, how a response and a recorded error are built back in that library, and
how a recorded response's body is teed. The other protocols describe the objects of an httpx-shaped
library the boundary reads or calls, so none of them is ``Any`` on the seam. An adapter of another
shape reads its library's request as a :class:`RequestView` (its headers a :class:`HeaderList`), and
rebuilds a recorded error with :func:`rebuilt_error`."""

from __future__ import annotations

import builtins
import http
import inspect
import re
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeAlias, TypeVar

from openprogram.errors import RecordedProviderError

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
    "HeaderList",
    "HttpHeaders",
    "HttpRequest",
    "HttpResponse",
    "HttpTransport",
    "HttpURL",
    "RequestView",
    "SyncByteStream",
    "SyncTransport",
    "URLView",
    "exception_of",
    "reason_phrase",
    "rebuilt_error",
]

R = TypeVar("R")
"""A library's response, as the exchange carries it from the sending to the client."""


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
"""The transport a client sends through: sync for a ``Client``, async for an ``AsyncClient``."""


class ContentDecoder(Protocol):
    """A decoder of one encoded body, fed its bytes as they came off the wire, then ended
    with ``decompress(b"")`` and ``flush()`` (the shape of zlib's and urllib3's)."""

    def decompress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class BodyRecorder(Protocol):
    """What a teed response body reports to the recording: each chunk as it came off the wire
    (``feed``), what ended the source (``ended_by``: True for the end of the body), the client's
    close of the body (``closed``: the end of the body when all of it had arrived, else an abandoned
    one), or a body read before it was teed, whole and decoded (``complete``)."""

    def feed(self, chunk: bytes) -> None: ...
    def ended_by(self, error: BaseException) -> bool: ...
    def closed(self) -> None: ...
    def complete(self, content: bytes) -> None: ...


class ClientLibrary(Protocol[R]):
    """One HTTP client library the boundary captures; ``R`` is its response, as the
    exchange hands it from the sending to the client."""

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

    def head(self, response: R) -> tuple[int, HttpHeaders]:
        """The status and headers of ``response``."""
        ...

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> R:
        """A response of this library to ``request``, its body the chunks of ``body``."""
        ...

    def record_body(self, response: R, recorder: BodyRecorder, *, asynchronous: bool) -> None:
        """Have ``response``'s body report each chunk to ``recorder`` as the client reads
        it (a body already read reports it whole at once)."""
        ...

    def content_decoder(self, content_encoding: str) -> ContentDecoder | None:
        """A fresh decoder for a body of this ``content-encoding`` (the library's own, as
        its clients decode a body they read); None keeps the bytes as they came."""
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


class URLView(NamedTuple):
    """A library's URL as the boundary reads one: ``port`` as the URL names it, and the
    whole URL as ``text``."""

    host: str
    port: int | None
    scheme: str
    text: str

    def __str__(self) -> str:
        return self.text


class HeaderList:
    """Headers as a list of (lower-case name, value): ``get`` joins a repeated name. A name
    or value given as bytes (botocore sends its headers so) is read as latin-1, as
    ``http.client`` puts it on the wire."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        self._items = [(_text(name).lower(), _text(value)) for name, value in items]

    def get(self, key: str, default: str | None = None) -> str | None:
        name = key.lower()
        values = [value for item, value in self._items if item == name]
        return ", ".join(values) if values else default

    def multi_items(self) -> list[tuple[str, str]]:
        return list(self._items)


def _text(value: object) -> str:
    return bytes(value).decode("latin-1") if isinstance(value, bytes | bytearray) else str(value)


class RequestView:
    """A request of a library that is not httpx-shaped, as the exchange reads it: its ``method``,
    ``url`` and ``headers``, and its whole body once :meth:`read` (or :meth:`aread`) has read it."""

    def __init__(
        self, method: str, url: HttpURL, headers: Iterable[tuple[str | bytes, str | bytes]]
    ) -> None:
        self.method = method
        self.url = url
        self.headers: HttpHeaders = HeaderList(headers)
        self._content: bytes | None = None

    @property
    def content(self) -> bytes:
        assert self._content is not None, "the request's body is read first"
        return self._content

    def read(self) -> bytes:
        raise NotImplementedError

    async def aread(self) -> bytes:
        return self.read()


_ERRNO = re.compile(r"\[Errno (-?\d+)\] (.*)", re.DOTALL)


def rebuilt_error(
    recorded: RecordedError,
    classes: object,
    build: Callable[[type[Exception], str], BaseException | None] | None = None,
    **arguments: object,
) -> BaseException:
    """The exception ``recorded`` replays as: the class of its name in ``classes`` (where
    the library keeps the classes of the recorded type's module; None when that module is
    not the library's) built by ``build`` (by default :func:`exception_of`, given
    ``arguments``), or the built-in class of its name; else ``RecordedProviderError``."""
    module, _, name = recorded.type.rpartition(".")
    cls = getattr(classes if module else builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        if module and build:
            error = build(cls, recorded.message)
        else:
            error = exception_of(cls, recorded.message, arguments if module else None)
        if error is not None:
            return error
    return RecordedProviderError(recorded.type, recorded.message)


def exception_of(
    cls: type[Exception], message: str, arguments: Mapping[str, object] | None = None
) -> Exception | None:
    """An instance of ``cls`` whose text is ``message`` (None when its constructor refuses):
    an ``OSError`` keeps the errno its message names; another is built with each argument
    its constructor requires (the one ``arguments`` names, else the message), else with the
    message alone."""
    errno = _ERRNO.fullmatch(message)
    if issubclass(cls, OSError) and errno:
        return cls(int(errno.group(1)), errno.group(2))
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = []
    named = arguments or {}
    required = [
        named.get(parameter.name, message)
        for parameter in parameters
        if parameter.default is inspect.Parameter.empty
        and parameter.kind in (parameter.POSITIONAL_ONLY, parameter.POSITIONAL_OR_KEYWORD)
    ]
    for candidate in (required, [message]):
        try:
            error = cls(*candidate)
        except Exception:  # a constructor that wants other arguments
            continue
        error.args = (message,)
        return error
    return None
