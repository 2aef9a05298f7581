"""Python's own ``http.client`` (and so ``urllib.request.urlopen``), captured at
``HTTPConnection.request`` and ``getresponse``: :class:`HttpClientLibrary`.

``request`` puts one request on the wire and ``getresponse`` reads its one response, so one
``request`` is one captured exchange (``urlopen`` makes one per redirect hop). The patched
``request`` drives the one :func:`~openprogram.http_boundary.exchange.exchange_flow` up to the
sending — recording sends the request for real, so a refused connection is raised by ``request``, as
it is live — and the patched ``getresponse`` drives it to its end, reading the live response or
returning the replayed one (:mod:`~openprogram.http_boundary.clients.raw_http`). A recorded error
with no response is raised by ``request``, or by ``getresponse`` when it is one of ``http.client``'s
own (``RemoteDisconnected``), as live; the recording does not say which of the two raised any other,
so a timeout waiting for the response's head is replayed by ``request``.

A body cut short that ``http.client`` lets pass in silence (iteration simply ends; a chunked
body without its last chunk) is recorded as ``IncompleteRead``, and replays as the same cut.
``http.client`` decodes no ``content-encoding``: the body is stored decoded (gzip, deflate)
and replayed decoded, as for every library. Not captured: a connection of urllib3 (captured
at its pools), a request a library captured above sends through ``http.client``
(:mod:`~openprogram.http_boundary.boundary`), and one written with ``putrequest`` by hand
(the connection guard sees it)."""

from __future__ import annotations

import functools
import http.client
import io
import sys
import zlib
from collections.abc import Callable, Generator, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, cast

from openprogram.http_boundary.boundary import ACTIVATIONS, sending_beneath
from openprogram.http_boundary.clients.interface import (
    BodyRecorder,
    HeaderList,
    HttpHeaders,
    HttpRequest,
    RequestView,
    rebuilt_error,
)
from openprogram.http_boundary.clients.raw_http import (
    BodyTee,
    TargetURL,
    replayed_response,
    whole_body,
)

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = ["HttpClientLibrary", "HttpClientRequest"]

_PATCH_MARK = "_openprogram_http_capture"
_PENDING = "_openprogram_pending_exchange"
"""The connection's attribute holding the exchange its ``getresponse`` completes."""
_ERROR_MODULES = ("http.client", "socket", "ssl")
"""The modules whose exceptions a recorded error of this library replays as."""

Response = http.client.HTTPResponse
RequestMethod = Callable[..., None]
GetResponse = Callable[[http.client.HTTPConnection], Response]
Exchange = Generator[None, GetResponse, Response]
"""A captured exchange of a connection: run by ``request`` up to its pause, then resumed by
``getresponse`` with the connection's own, it returns the response the caller gets."""


class HttpClientLibrary:
    """``http.client``, as the HTTP boundary captures it."""

    name = "http.client"
    module_names = ("http.client",)

    def hook(self, module: ModuleType) -> None:
        """Patch ``HTTPConnection.request`` and ``getresponse`` of ``module`` once (called
        under the patching's lock); ``HTTPSConnection`` inherits them."""
        connection = getattr(module, "HTTPConnection", None)
        methods = {} if not isinstance(connection, type) else connection.__dict__
        if _PATCH_MARK in methods or "request" not in methods or "getresponse" not in methods:
            return
        connection.request = _capturing_request(methods["request"], module, self)  # type: ignore[union-attr]
        connection.getresponse = _completing_getresponse(methods["getresponse"])  # type: ignore[union-attr]
        setattr(connection, _PATCH_MARK, True)

    def head(self, response: Response) -> tuple[int, HttpHeaders]:
        return response.status, HeaderList(response.getheaders())

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> Response:
        sent = cast(HttpClientRequest, request)
        debuglevel = sent.connection.debuglevel
        return replayed_response(status, headers, body, method=sent.method, debuglevel=debuglevel)

    def record_body(
        self, response: Response, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        """Have ``response`` report what each outermost read returns (``read``, ``read1``,
        ``readinto``, ``readline``; iteration and ``readlines`` read lines), the end of the
        body once it has closed its connection's response, an error a read raises, and the
        client's ``close``. A body with nothing to read (a ``HEAD``, a 204) ends at once."""
        body = _BodyTee(response, recorder)
        body.install(("read", "read1", "readline"), {"readinto": body.filling(response.readinto)})
        if response.fp is None or response.length == 0 or response._method == "HEAD":  # type: ignore[attr-defined]
            recorder.ended_by(StopIteration())

    def content_decoder(self, content_encoding: str) -> ZlibDecoder:
        """A decoder of gzip or deflate (``http.client`` decodes none itself); another
        encoding is kept as it came."""
        encoding = content_encoding.strip().lower()
        if encoding in ("gzip", "x-gzip"):
            return ZlibDecoder(16 + zlib.MAX_WBITS)
        return ZlibDecoder(zlib.MAX_WBITS if encoding == "deflate" else None)

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of that name of ``http.client``, ``socket`` or ``ssl`` (an
        ``IncompleteRead`` of no bytes, as ``http.client`` raises it again), or the built-in
        class; else ``RecordedProviderError`` naming the recorded type."""
        module = recorded.type.rpartition(".")[0]
        classes = sys.modules.get(module) if module in _ERROR_MODULES else None
        return rebuilt_error(recorded, classes, partial=b"")


def _from_urllib3(connection: object) -> bool:
    """Whether ``connection`` is one of urllib3's (captured at its pool instead)."""
    return any(cls.__module__.startswith("urllib3") for cls in type(connection).__mro__)


def _capturing_request(
    original: RequestMethod, module: ModuleType, library: HttpClientLibrary
) -> RequestMethod:
    @functools.wraps(original)
    def request(
        self: http.client.HTTPConnection,
        method: str,
        url: str,
        body: object = None,
        headers: Mapping[str, str] | None = None,
        *,
        encode_chunked: bool = False,
    ) -> None:
        boundary = ACTIVATIONS.current
        given = {} if headers is None else headers
        if boundary is None or _from_urllib3(self):
            return original(self, method, url, body, given, encode_chunked=encode_chunked)
        # the exchange (asyncio among what it imports) loads once a boundary is active
        from openprogram.http_boundary.exchange import captures, driven, exchange_flow

        sent = HttpClientRequest(
            self, method, url, body, given, encode_chunked=encode_chunked, send=original
        )
        unanswered = vars(self).pop(_PENDING, None)
        if unanswered is not None:  # sent, and its response never asked for: abandoned
            cast(Exchange, unanswered).close()
        if not captures(self, sent.url, boundary, library):
            return original(self, method, url, body, given, encode_chunked=encode_chunked)

        def send() -> Generator[None, GetResponse, Response]:
            with sending_beneath():
                sent.send()
            getresponse = yield  # the caller's, once it asks for the response
            with sending_beneath():
                return getresponse(self)

        flow = exchange_flow(boundary, library, sent, asynchronous=False)
        steps = driven(flow, send, sent.read, lambda response: response.close())
        exchange = _exchange(steps, sent, module.HTTPException)
        next(exchange)  # up to the sending
        vars(self)[_PENDING] = exchange

    return request


def _completing_getresponse(original: GetResponse) -> GetResponse:
    @functools.wraps(original)
    def getresponse(self: http.client.HTTPConnection) -> Response:
        __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
        exchange = vars(self).pop(_PENDING, None)
        if exchange is None:
            return original(self)
        try:
            cast(Exchange, exchange).send(original)
        except StopIteration as done:
            return cast(Response, done.value)
        raise AssertionError("a captured exchange of http.client paused twice")

    return getresponse


def _exchange(steps: Exchange, request: HttpClientRequest, own_errors: type[Exception]) -> Exchange:
    """The exchange ``steps`` drive, which pauses once: when the request is sent, or once
    the recording has answered, or has raised one of ``own_errors``, ``http.client``'s own,
    which ``getresponse`` raises, as live."""
    __tracebackhide__ = True
    try:
        answer = yield from steps
    except own_errors:
        if request.sent:
            raise
        yield
        raise
    if not request.sent:
        yield
    return answer


class HttpClientRequest(RequestView):
    """One request an ``HTTPConnection`` was asked to send, as the boundary reads it: the
    URL is ``https`` for an ``HTTPSConnection``, the tunnelled host's behind a proxy."""

    def __init__(
        self,
        connection: http.client.HTTPConnection,
        method: str,
        target: str,
        body: object,
        headers: Mapping[str, str],
        *,
        encode_chunked: bool,
        send: RequestMethod,
    ) -> None:
        https = getattr(http.client, "HTTPSConnection", None)
        scheme = "https" if https is not None and isinstance(connection, https) else "http"
        host, port = connection.host, cast(int | None, connection.port)
        if tunnel := getattr(connection, "_tunnel_host", None):
            host, port = tunnel, getattr(connection, "_tunnel_port", None)
        super().__init__(method, TargetURL(scheme, host, port, target), headers.items())
        self.connection = connection
        self.sent = False
        """Whether the request went on the wire (a failure then is the live one's)."""
        self._arguments = (method, target, body, headers)
        self._encode_chunked = encode_chunked
        self._send = send

    def read(self) -> bytes:
        """Read the whole body; a file or an iterable is replaced by what it held (as a
        file or an iterable still, so it is framed on the wire as it would have been)."""
        if self._content is None:
            method, target, body, headers = self._arguments
            self._content = content = whole_body(body, "iso-8859-1")
            if hasattr(body, "read"):
                body = io.BytesIO(content)
            elif body is not None and not isinstance(body, str | bytes | bytearray | memoryview):
                body = [content] if content else []
            self._arguments = (method, target, body, headers)
        return self._content

    def send(self) -> None:
        """Send the request for real (its response is read by ``getresponse``)."""
        self.sent = True
        self._send(self.connection, *self._arguments, encode_chunked=self._encode_chunked)


class ZlibDecoder:
    """A gzip or deflate decoder (``wbits`` as :func:`zlib.decompressobj` takes them; None
    keeps the bytes as they came); a "deflate" body sent as a raw deflate stream, as some
    servers send it, is read as one."""

    __slots__ = ("_decoder", "_wbits")

    def __init__(self, wbits: int | None) -> None:
        self._wbits = wbits
        self._decoder = None if wbits is None else zlib.decompressobj(wbits)

    def decompress(self, data: bytes) -> bytes:
        if self._decoder is None:
            return data
        try:
            return self._decoder.decompress(data)
        except zlib.error:
            if self._wbits != zlib.MAX_WBITS:
                raise
            self._wbits = -zlib.MAX_WBITS
            self._decoder = zlib.decompressobj(self._wbits)
            return self._decoder.decompress(data)

    decode = decompress

    def flush(self) -> bytes:
        return b"" if self._decoder is None else self._decoder.flush()


class _BodyTee(BodyTee):
    """The wrappers on one response's reads (see :meth:`HttpClientLibrary.record_body`)."""

    _raw: Response

    def _ending(self) -> BaseException | None:
        """Once ``raw`` closed its connection's response: the end of the body, or a cut
        ``http.client`` let pass in silence (a chunked body without its last chunk, fewer
        bytes than its ``content-length``)."""
        raw = self._raw
        if raw.fp is not None:
            return None
        cut = (raw.chunked and getattr(raw, "chunk_left", None) is not None) or bool(raw.length)
        return http.client.IncompleteRead(b"") if cut else StopIteration()

    def filling(self, readinto: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(readinto)
        def readinto_body(buffer: bytearray | memoryview) -> int:
            def call() -> bytes:
                count = readinto(buffer)
                return bytes(memoryview(buffer)[:count])

            return len(self.reported(call))

        return readinto_body
