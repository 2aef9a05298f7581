"""Python's own ``http.client`` (and so ``urllib.request.urlopen``), captured at
``HTTPConnection.request`` and ``getresponse``: :class:`HttpClientLibrary`.

``request`` puts one request on the wire and ``getresponse`` reads its one response, so one
``request`` is one captured exchange; ``urlopen`` makes one per request it sends (each
redirect hop is one). While an HTTP boundary is active and the request is captured
(:func:`~openprogram.http_boundary.exchange.captures`: not a passthrough host), the patched
``request`` starts the one :func:`~openprogram.http_boundary.exchange.exchange_flow` of the
exchange and drives it up to the sending: recording sends the request for real (a refused
connection is raised by ``request``, as it is live), and the flow waits on the connection
for the patched ``getresponse``, which reads the live response and hands it back to the
flow. Replaying asks nothing of the network: ``getresponse`` returns a real
``http.client.HTTPResponse`` built over the recorded body
(:class:`~openprogram.http_boundary.clients.urllib3_client.ReplayBody`): framed by its
``content-length`` when it is served with one (a call that completed), else read as a
chunked body, so every recorded chunk reaches the client before a recorded error. A
recorded error with no response is raised by ``request``, or by ``getresponse`` when it is
one of ``http.client``'s own (``RemoteDisconnected``: the server answered nothing), as live;
the recording does not say which of the two raised any other, so a timeout while waiting for
the response's head is replayed by ``request`` (which ``urlopen`` wraps in ``URLError``).

The request reads as :class:`HttpClientRequest`: the method, the URL (``https`` for an
``HTTPSConnection``, the tunnelled host behind a proxy), the headers the caller gave and the
whole body (a file or an iterable is read whole, and that is what is sent). The live
response is teed (:func:`tee`): what each outermost ``read``, ``read1``, ``readinto`` or
``readline`` returns (iteration reads lines) is reported to the recorder, the end of the
body once the response has closed itself, an error while reading, and the client's
``close``. A body cut short that ``http.client`` lets pass in silence (iteration simply
ends; a chunked body without its last chunk) is recorded as ``IncompleteRead``, and a
recorded ``IncompleteRead`` replays as the same cut (the chunked body stops without its
end), so ``http.client`` reads it as it did live. ``http.client`` decodes no
``content-encoding``: the body is stored decoded (gzip, deflate) and replayed decoded,
without the header, as for every library.

Not captured: a connection of urllib3 (it captures its own, at its pools; a ``requests``
call is recorded once), a request a library captured above sends through ``http.client``
(:mod:`~openprogram.http_boundary.stacking`), and a request written with
``putrequest``/``putheader``/``endheaders`` by hand (the connection guard sees it).
"""

from __future__ import annotations

import builtins
import functools
import http
import http.client
import io
import re
import socket
import sys
import zlib
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from openprogram.errors import RecordedProviderError
from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    AsyncByteStream,
    BodyRecorder,
    HttpHeaders,
    HttpRequest,
    HttpResponse,
    ReadsThroughProtocols,
    SyncByteStream,
    reason_phrase,
)
from openprogram.http_boundary.clients.urllib3_client import (
    HeaderList,
    ReplayBody,
    TargetURL,
    replay_framing,
    whole_body,
)
from openprogram.http_boundary.stacking import sending_beneath

if TYPE_CHECKING:
    from openprogram.http_boundary.boundary import HttpBoundary
    from openprogram.http_boundary.exchange import Flow
    from openprogram.recording.format import RecordedError

__all__ = ["HttpClientLibrary", "HttpClientRequest", "HttpClientResponse", "tee"]

_PATCH_MARK = "_openprogram_http_capture"
_PENDING = "_openprogram_pending_exchange"
"""The connection's attribute holding the exchange its ``getresponse`` completes."""
_DEFAULT_PORTS = {"http": 80, "https": 443}
_ERRNO = re.compile(r"\[Errno (-?\d+)\] (.*)", re.DOTALL)
_ERROR_MODULES = ("http.client", "socket", "ssl")
"""The modules whose exceptions a recorded error of this library replays as."""

RequestMethod = Callable[..., None]
GetResponse = Callable[[http.client.HTTPConnection], http.client.HTTPResponse]


class HttpClientLibrary(ReadsThroughProtocols):
    """``http.client``, as the HTTP boundary captures it."""

    @property
    def name(self) -> str:
        return "http.client"

    @property
    def module_names(self) -> tuple[str, ...]:
        return ("http.client",)

    def hook(self, module: ModuleType) -> None:
        """Patch ``HTTPConnection.request`` and ``getresponse`` of ``module`` once (called
        under the patching's lock); ``HTTPSConnection`` inherits them."""
        connection = getattr(module, "HTTPConnection", None)
        if (
            not isinstance(connection, type)
            or _PATCH_MARK in connection.__dict__
            or "request" not in connection.__dict__
            or "getresponse" not in connection.__dict__
        ):
            return
        request = connection.__dict__["request"]
        getresponse = connection.__dict__["getresponse"]
        connection.request = _capturing_request(request, module, self)  # type: ignore[attr-defined]
        connection.getresponse = _completing_getresponse(getresponse)  # type: ignore[attr-defined]
        setattr(connection, _PATCH_MARK, True)

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> HttpResponse:
        sent = cast(HttpClientRequest, request)
        # a body served with its recorded content-length (a call that completed) is framed by
        # it, as it came; any other as a chunked one
        chunked = replay_framing(headers) is None
        lines = [f"HTTP/1.1 {status} {reason_phrase(status)}"]
        lines.extend(f"{name}: {value}" for name, value in headers)
        if chunked:
            lines.append("transfer-encoding: chunked")
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
        source = io.BufferedReader(
            _CutReplayBody(head, _cut_at_incomplete_read(body), chunked=chunked)
        )
        raw = http.client.HTTPResponse(
            cast(socket.socket, _ReplaySocket(source)),
            debuglevel=sent.connection.debuglevel,
            method=sent.method,
        )
        raw.begin()
        return HttpClientResponse(raw, sent)

    def record_body(
        self, response: HttpResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        tee(cast(HttpClientResponse, response).raw, recorder)

    def content_decoder(self, content_encoding: str) -> ZlibDecoder:
        """A decoder of gzip or deflate (``http.client`` decodes none itself); another
        encoding is kept as it came."""
        encoding = content_encoding.strip().lower()
        if encoding in ("gzip", "x-gzip"):
            return ZlibDecoder(16 + zlib.MAX_WBITS)
        if encoding == "deflate":
            return ZlibDecoder(zlib.MAX_WBITS)
        return ZlibDecoder(None)

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of that name of ``http.client``, ``socket`` or ``ssl``, or the built-in
        class (an ``OSError`` with the recorded errno), its message as recorded; else
        ``RecordedProviderError`` naming the recorded type."""
        module, _, name = recorded.type.rpartition(".")
        owner = builtins if not module else sys.modules.get(module)
        if owner is not None and (not module or module in _ERROR_MODULES):
            cls = getattr(owner, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                error = _error_of(cls, recorded.message)
                if error is not None:
                    return error
        return RecordedProviderError(recorded.type, recorded.message)


def _error_of(cls: type[Exception], message: str) -> Exception | None:
    """An instance of ``cls`` whose text is ``message`` (an ``OSError`` keeps its errno)."""
    match = _ERRNO.fullmatch(message)
    if issubclass(cls, OSError) and match:
        return cls(int(match.group(1)), match.group(2))
    if issubclass(cls, http.client.IncompleteRead):
        return cls(b"")  # its text counts the bytes read, as http.client raises it again
    for arguments in ((message,), ()):
        try:
            error = cls(*arguments)
        except Exception:  # a constructor that wants other arguments
            continue
        error.args = (message,)
        return error
    return None


def _from_urllib3(connection: object) -> bool:
    """Whether ``connection`` is one of urllib3's (captured at its pool instead)."""
    return any(
        str(getattr(cls, "__module__", "")).startswith("urllib3")
        for cls in type(connection).__mro__
    )


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
        from openprogram.http_boundary.exchange import captures

        sent = HttpClientRequest(
            self, method, url, body, given, encode_chunked=encode_chunked, send=original
        )
        unanswered = vars(self).pop(_PENDING, None)
        if unanswered is not None:  # sent, and its response never asked for
            cast(_Exchange, unanswered).abandon()
        if not captures(self, sent.url, boundary, library):
            return original(self, method, url, body, given, encode_chunked=encode_chunked)
        vars(self)[_PENDING] = _Exchange(sent, boundary, library, module)

    return request


def _completing_getresponse(original: GetResponse) -> GetResponse:
    @functools.wraps(original)
    def getresponse(self: http.client.HTTPConnection) -> http.client.HTTPResponse:
        exchange = vars(self).pop(_PENDING, None)
        if exchange is None:
            return original(self)
        return cast(_Exchange, exchange).response(original)

    return getresponse


class _Exchange:
    """One captured exchange of a connection, its flow driven from ``request`` (built
    here) up to the sending, then by ``getresponse`` (:meth:`response`) to its end."""

    def __init__(
        self,
        request: HttpClientRequest,
        boundary: HttpBoundary,
        library: HttpClientLibrary,
        module: ModuleType,
    ) -> None:
        from openprogram.http_boundary.exchange import exchange_flow

        __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
        self._request = request
        self._answer: HttpClientResponse | None = None
        self._deferred: BaseException | None = None
        self._sent_live = False
        """Whether the request went on the wire (a failure then is the live one's)."""
        self._flow: Flow | None = exchange_flow(boundary, library, request, asynchronous=False)
        try:
            self._drive()
        except module.HTTPException as exc:
            if self._sent_live:
                raise
            self._deferred = exc  # http.client's own errors are getresponse's, live
            self._flow = None

    def _drive(self) -> None:
        """Do each step the flow asks for until it sends the request (or ends)."""
        from openprogram.http_boundary.exchange import Step

        __tracebackhide__ = True
        flow = self._flow
        assert flow is not None
        try:
            step = next(flow)
            while True:
                try:
                    if step is Step.SEND:
                        self._sent_live = True
                        with sending_beneath():
                            self._request.send()
                        return  # the response is the connection's getresponse's to read
                    if step is Step.READ:
                        self._request.read()
                except BaseException as exc:
                    step = flow.throw(exc)
                else:
                    step = flow.send(None)
        except StopIteration as done:
            self._answer = cast(HttpClientResponse, done.value)
            self._flow = None

    def abandon(self) -> None:
        """The caller sends another request without asking for this one's response: the
        exchange ends ``abandoned``."""
        flow, self._flow = self._flow, None
        if flow is not None:
            flow.close()

    def response(self, getresponse: GetResponse) -> http.client.HTTPResponse:
        """The response the caller's ``getresponse`` returns: the replayed one, or the live
        one read now and handed to the flow."""
        from openprogram.http_boundary.exchange import Step

        __tracebackhide__ = True
        if self._deferred is not None:
            raise self._deferred
        flow = self._flow
        if flow is not None:
            try:
                try:
                    with sending_beneath():
                        raw = getresponse(self._request.connection)
                except BaseException as exc:
                    step = flow.throw(exc)
                else:
                    self._answer = HttpClientResponse(raw, self._request)
                    step = flow.send(self._answer)
                while True:  # only a close is asked for once the response is read
                    assert step is Step.CLOSE
                    assert self._answer is not None
                    try:
                        self._answer.close()
                    except BaseException as exc:
                        step = flow.throw(exc)
                    else:
                        step = flow.send(None)
            except StopIteration as done:
                self._answer = cast(HttpClientResponse, done.value)
        assert self._answer is not None
        return self._answer.raw


def _url_of(connection: http.client.HTTPConnection, target: str) -> TargetURL:
    https = getattr(http.client, "HTTPSConnection", None)
    scheme = "https" if https is not None and isinstance(connection, https) else "http"
    tunnel: str | None = getattr(connection, "_tunnel_host", None)
    if tunnel:
        port: int | None = getattr(connection, "_tunnel_port", None)
        return TargetURL(scheme, tunnel, port or _DEFAULT_PORTS[scheme], target)
    return TargetURL(scheme, connection.host, connection.port, target)


class HttpClientRequest:
    """One request an ``HTTPConnection`` was asked to send, as the boundary reads it."""

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
        self.connection = connection
        self.method = method
        self._target = target
        self._body = body
        self._given = headers
        self._encode_chunked = encode_chunked
        self._send = send
        self._content: bytes | None = None
        self.url = _url_of(connection, target)
        self.headers: HttpHeaders = HeaderList(headers.items())

    @property
    def content(self) -> bytes:
        assert self._content is not None, "the request's body is read first"
        return self._content

    def read(self) -> bytes:
        """Read the whole body; a file or an iterable is replaced by what it held (as a
        file or an iterable still, so it is framed on the wire as it would have been)."""
        if self._content is None:
            body = self._body
            self._content = whole_body(body, "iso-8859-1")
            if hasattr(body, "read"):
                self._body = io.BytesIO(self._content)
            elif body is not None and not isinstance(body, str | bytes | bytearray | memoryview):
                self._body = [self._content] if self._content else []
        return self._content

    async def aread(self) -> bytes:
        return self.read()

    def send(self) -> None:
        """Send the request for real (its response is read by ``getresponse``)."""
        self._send(
            self.connection,
            self.method,
            self._target,
            self._body,
            self._given,
            encode_chunked=self._encode_chunked,
        )


class HttpClientResponse:
    """An ``http.client.HTTPResponse`` (``raw``) as the boundary reads it."""

    def __init__(self, raw: http.client.HTTPResponse, request: HttpClientRequest) -> None:
        self.raw = raw
        self.request: HttpRequest = request
        self.stream: SyncByteStream | AsyncByteStream = _RawStream(raw)

    @property
    def status_code(self) -> int:
        return self.raw.status

    @property
    def headers(self) -> HttpHeaders:
        return HeaderList(self.raw.getheaders())

    @property
    def is_stream_consumed(self) -> bool:
        return False

    @property
    def content(self) -> bytes:
        return self.raw.read()

    def close(self) -> None:
        self.raw.close()

    async def aclose(self) -> None:
        self.raw.close()


class _RawStream:
    """An ``HTTPResponse``'s body as a byte stream."""

    def __init__(self, raw: http.client.HTTPResponse) -> None:
        self._raw = raw

    def __iter__(self) -> Iterator[bytes]:
        return iter(functools.partial(self._raw.read1, 65536), b"")

    def close(self) -> None:
        self._raw.close()


class _Cut(Exception):
    """The recorded body was cut here (the recorded error was ``http.client.IncompleteRead``)."""


def _cut_at_incomplete_read(body: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from body
    except http.client.IncompleteRead:
        raise _Cut from None


class _CutReplayBody(ReplayBody):
    """A replayed body that a recorded ``IncompleteRead`` ends as the connection did: no
    end of the chunked body, so ``http.client`` reads the cut as it read it live (``read``
    raises ``IncompleteRead``, iteration ends)."""

    _cut = False

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._cut:
            return 0
        try:
            return super().readinto(buffer)
        except _Cut:
            self._cut = True
            return 0


class _ReplaySocket:
    """What ``http.client.HTTPResponse`` reads a replayed response from."""

    def __init__(self, source: io.BufferedReader[_CutReplayBody]) -> None:
        self._source = source

    def makefile(self, mode: str) -> io.BufferedReader[_CutReplayBody]:
        return self._source


class _Decompressor(Protocol):
    def decompress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class ZlibDecoder:
    """A gzip or deflate decoder (``wbits`` as :func:`zlib.decompressobj` takes them; None
    keeps the bytes as they came)."""

    __slots__ = ("_decoder", "_wbits")

    def __init__(self, wbits: int | None) -> None:
        self._wbits = wbits
        self._decoder: _Decompressor | None = None if wbits is None else zlib.decompressobj(wbits)

    def decode(self, data: bytes) -> bytes:
        decoder = self._decoder
        if decoder is None:
            return data
        try:
            return decoder.decompress(data)
        except zlib.error:
            if self._wbits != zlib.MAX_WBITS:
                raise
            # a raw deflate stream, as some servers send for "deflate"
            self._decoder = decoder = zlib.decompressobj(-zlib.MAX_WBITS)
            self._wbits = -zlib.MAX_WBITS
            return decoder.decompress(data)

    def flush(self) -> bytes:
        decoder = self._decoder
        return b"" if decoder is None else decoder.flush()


def tee(raw: http.client.HTTPResponse, recorder: BodyRecorder) -> None:
    """Have ``raw`` report to ``recorder`` what each outermost read returns (``read``,
    ``read1``, ``readinto``, ``readline``; iteration and ``readlines`` read lines), the end
    of the body once ``raw`` has closed its connection's response, an error a read raises,
    and the client's ``close``. A body with nothing to read (a ``HEAD``, a 204) ends at
    once."""
    body = _BodyTee(raw, recorder)
    methods = vars(raw)
    for name in ("read", "read1", "readline"):
        methods[name] = body.returning(getattr(raw, name))
    methods["readinto"] = body.filling(raw.readinto)
    methods["close"] = body.closing(raw.close)
    if raw.fp is None or raw.length == 0 or getattr(raw, "_method", None) == "HEAD":
        recorder.ended_by(StopIteration())


def _ending(raw: http.client.HTTPResponse) -> BaseException:
    """What ended ``raw``'s body, once it closed its connection's response: the end of the
    body, or a cut ``http.client`` let pass in silence (a chunked body without its last
    chunk, fewer bytes than its ``content-length``)."""
    cut = (raw.chunked and getattr(raw, "chunk_left", None) is not None) or bool(raw.length)
    return http.client.IncompleteRead(b"") if cut else StopIteration()


class _BodyTee:
    """The wrappers :func:`tee` puts on one response's methods."""

    def __init__(self, raw: http.client.HTTPResponse, recorder: BodyRecorder) -> None:
        self._raw = raw
        self._recorder = recorder
        self._reading = 0
        """How many reads are under way (``readline`` of a chunked body calls ``read``)."""

    def _reported(self, call: Callable[[], bytes]) -> bytes:
        outermost = not self._reading
        self._reading += 1
        try:
            data = call()
        except BaseException as exc:
            if outermost:
                if isinstance(exc, http.client.IncompleteRead) and exc.partial:
                    self._recorder.feed(exc.partial)
                self._recorder.ended_by(exc)
            raise
        finally:
            self._reading -= 1
        if outermost:
            if data:
                self._recorder.feed(data)
            if self._raw.fp is None:
                self._recorder.ended_by(_ending(self._raw))
        return data

    def returning(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_body(*args: object, **kwargs: object) -> bytes:
            return self._reported(lambda: read(*args, **kwargs))

        return read_body

    def filling(self, readinto: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(readinto)
        def readinto_body(buffer: bytearray | memoryview) -> int:
            def call() -> bytes:
                count = readinto(buffer)
                return bytes(memoryview(buffer)[:count])

            return len(self._reported(call))

        return readinto_body

    def closing(self, close: Callable[[], None]) -> Callable[[], None]:
        @functools.wraps(close)
        def close_body() -> None:
            try:
                close()
            finally:
                if not self._reading:
                    self._recorder.closed()

        return close_body
