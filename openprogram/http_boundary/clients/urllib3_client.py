"""urllib3 (and so ``requests`` and botocore, which send through it), captured at its
connection pools' ``_make_request``: :class:`Urllib3Library`.

``HTTPConnectionPool._make_request`` sends one request on one connection and returns its
one response; ``urlopen`` around it follows urllib3's retries and redirects, and
``PoolManager`` its redirects across hosts, each hop one ``_make_request``. So each request
urllib3 makes on the wire is one captured exchange, and nothing is captured twice. While an
HTTP boundary is active and the request is captured
(:func:`~openprogram.http_boundary.exchange.captures`: not a passthrough host), the patched
method drives the one :func:`~openprogram.http_boundary.exchange.exchange_flow` through a
:class:`~openprogram.http_boundary.exchange.CapturingTransport`; while none is, it calls the
original after one attribute read.

The request is read as :class:`Urllib3Request` (a body that is a file or an iterable is
read whole, and that whole body is what is sent). Recording sends it with the body left
unread, and tees the live ``urllib3.response.HTTPResponse`` (:func:`tee`): each piece of
the body read off the connection — by ``read``, ``read1``, ``stream`` or the chunked reads
— is reported to the recorder before urllib3 decodes it, and the end of the body, an error
while reading and the client's close end the call. Replaying builds an ``HTTPResponse`` of
the module over the recorded body (:class:`ReplayBody`), no connection made: framed by its
``content-length`` when it is served with one (a call that completed), else read by
``http.client`` as a chunked body, so every recorded chunk reaches the client before a
recorded error. Either way a body the caller asked preloaded is read afterwards, as urllib3 itself
does. A recorded error
replays as the urllib3 exception of its name, its message as recorded.

This module imports no urllib3: what it needs of the library is bound when
``urllib3.connectionpool`` is hooked, after the program imported it (urllib3 2; an older
one is left alone).
"""

from __future__ import annotations

import builtins
import functools
import http
import http.client
import inspect
import io
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
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

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = [
    "ReplayBody",
    "Urllib3Library",
    "Urllib3Request",
    "Urllib3Response",
    "replay_framing",
    "tee",
]

_PATCH_MARK = "_openprogram_http_capture"
_DEFAULT_PORTS = {"http": 80, "https": 443}


class Urllib3Headers(Protocol):
    """urllib3's ``HTTPHeaderDict`` (or any mapping of headers): ``items`` repeats a name
    sent more than once."""

    def items(self) -> Iterable[tuple[str, str]]: ...


class Urllib3Pool(Protocol):
    """An ``HTTPConnectionPool``."""

    scheme: str
    host: str
    port: int | None
    num_requests: int


class Urllib3HTTPResponse(Protocol):
    """urllib3's ``HTTPResponse``, as the boundary reads and tees it."""

    status: int
    headers: Urllib3Headers

    def read(
        self, amt: int | None = None, decode_content: bool | None = None, cache_content: bool = ...
    ) -> bytes: ...
    def stream(
        self, amt: int | None = ..., decode_content: bool | None = None
    ) -> Iterator[bytes]: ...
    def close(self) -> None: ...
    def isclosed(self) -> bool: ...


class _Decoder(Protocol):
    """A content decoder of urllib3."""

    def decompress(self, data: bytes) -> bytes: ...
    def flush(self) -> bytes: ...


class Urllib3Library(ReadsThroughProtocols):
    """urllib3, as the HTTP boundary captures it; bound to ``urllib3.connectionpool`` when
    that is hooked (a module imported afresh gets an instance of its own)."""

    def __init__(self) -> None:
        self._response_module: ModuleType | None = None
        self._exceptions: ModuleType | None = None
        self._pool_class: type | None = None

    @property
    def name(self) -> str:
        return "urllib3"

    @property
    def module_names(self) -> tuple[str, ...]:
        return ("urllib3.connectionpool",)

    def hook(self, module: ModuleType) -> None:
        """Patch ``HTTPConnectionPool._make_request`` of ``module`` once (called under the
        patching's lock); HTTPS pools and botocore's pools inherit it."""
        pool_class = getattr(module, "HTTPConnectionPool", None)
        response_module = sys.modules.get("urllib3.response")
        exceptions = sys.modules.get("urllib3.exceptions")
        if (
            not isinstance(pool_class, type)
            or _PATCH_MARK in pool_class.__dict__
            or "_make_request" not in pool_class.__dict__
            or response_module is None
            or exceptions is None
        ):
            return
        original = pool_class.__dict__["_make_request"]
        signature = inspect.signature(original)
        if "preload_content" not in signature.parameters:
            return  # urllib3 1.x builds its response outside _make_request
        library = self if self._pool_class in (None, pool_class) else Urllib3Library()
        library._pool_class = pool_class
        library._response_module = response_module
        library._exceptions = exceptions
        pool_class._make_request = _capturing(original, signature, library)  # type: ignore[attr-defined]
        setattr(pool_class, _PATCH_MARK, True)

    @property
    def response_module(self) -> ModuleType:
        """``urllib3.response``, once the library is hooked."""
        module = self._response_module
        assert module is not None, "urllib3 is used before it was hooked"
        return module

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> HttpResponse:
        sent = cast(Urllib3Request, request)
        sent.pool.num_requests += 1  # as the original counts every request it sends
        module = self.response_module
        options = sent.options
        reason = reason_phrase(status)
        # A body served with its recorded content-length (a call that completed) is framed
        # by it, as it came. Otherwise http.client reads the replayed body as it reads a live
        # chunked one, and urllib3 reads it with read_chunked: every chunk reaches the client
        # before the ending does.
        length = replay_framing(headers)
        framing = "transfer-encoding: chunked" if length is None else f"content-length: {length}"
        head = f"HTTP/1.1 {status} {reason}\r\n{framing}\r\n\r\n"
        source = io.BufferedReader(
            ReplayBody(head.encode("latin-1", "replace"), body, chunked=length is None)
        )
        original = http.client.HTTPResponse(
            cast(socket.socket, _ReplaySocket(source)), method=sent.method
        )
        original.begin()
        served = headers if length is not None else [*headers, ("transfer-encoding", "chunked")]
        raw: Urllib3HTTPResponse = module.HTTPResponse(
            body=original,
            headers=module.HTTPHeaderDict(served),
            status=status,
            version=11,
            version_string="HTTP/1.1",
            reason=reason,
            preload_content=False,
            decode_content=options.get("decode_content", True),
            original_response=original,
            pool=sent.pool,
            connection=options.get("response_conn"),
            retries=options.get("retries"),
            enforce_content_length=options.get("enforce_content_length", True),
            request_method=sent.method,
            request_url=options.get("url"),
        )
        return Urllib3Response(raw, sent)

    def record_body(
        self, response: HttpResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        tee(cast(Urllib3Response, response).raw, recorder)

    def content_decoder(self, content_encoding: str) -> JoinedDecoder:
        """urllib3's decoder of ``content_encoding``, as its ``HTTPResponse`` picks it (none
        for an encoding it does not know: the bytes are kept as they came)."""
        module = self.response_module
        known = module.HTTPResponse.CONTENT_DECODERS
        encoding = content_encoding.lower()
        if encoding in known or any(e.strip() in known for e in encoding.split(",")):
            return JoinedDecoder(module._get_decoder(encoding))
        return JoinedDecoder(None)

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of urllib3 by that name for a urllib3 error (its message as recorded),
        the built-in class for a built-in, else ``RecordedProviderError`` naming the
        recorded type."""
        module, _, name = recorded.type.rpartition(".")
        if module == "urllib3" or module.startswith("urllib3."):
            cls = getattr(self._exceptions, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                error = _urllib3_error(cls, recorded.message, cast(Urllib3Request, request))
                if error is not None:
                    return error
        elif not module:
            cls = getattr(builtins, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                try:
                    return cls(recorded.message)
                except Exception:  # a built-in whose constructor wants other arguments
                    pass
        return RecordedProviderError(recorded.type, recorded.message)


def _urllib3_error(cls: type[Exception], message: str, request: Urllib3Request) -> Exception | None:
    """An instance of urllib3's ``cls`` whose text is ``message``: each argument its
    constructor requires is the connection, the pool or the URL it names, else the message."""
    values: dict[str, object] = {
        "conn": request.connection,
        "pool": request.pool,
        "url": request.options.get("url"),
    }
    try:
        parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    except (TypeError, ValueError):
        parameters = []
    required = [
        values.get(parameter.name, message)
        for parameter in parameters
        if parameter.default is inspect.Parameter.empty
        and parameter.kind
        in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    for arguments in (required, [message]):
        try:
            error = cls(*arguments)
        except Exception:  # a constructor that wants other arguments
            continue
        error.args = (message,)
        return error
    return None


def _capturing(
    original: Callable[..., Urllib3HTTPResponse],
    signature: inspect.Signature,
    library: Urllib3Library,
) -> Callable[..., Urllib3HTTPResponse]:
    # the exchange (and what it imports, asyncio among them) loads once a library is hooked
    from openprogram.http_boundary.exchange import CapturingTransport, captures

    @functools.wraps(original)
    def _make_request(self: Urllib3Pool, *args: object, **kwargs: object) -> Urllib3HTTPResponse:
        boundary = ACTIVATIONS.current
        if boundary is None:
            return original(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        request = Urllib3Request(self, dict(bound.arguments), original)
        if not captures(self, request.url, boundary, library):
            return original(self, *args, **kwargs)
        answer = CapturingTransport(_PoolSender(), boundary, library).handle_request(request)
        return request.delivered(cast(Urllib3Response, answer))

    return _make_request


class TargetURL:
    """Where a urllib3 or ``http.client`` request goes: its connection's scheme, host and
    port (the tunnelled ones through a proxy), and the request target (a path, or a whole
    URL sent to a proxy)."""

    __slots__ = ("_port", "_target", "host", "scheme")

    def __init__(self, scheme: str, host: str, port: int | None, target: str) -> None:
        self.scheme = scheme
        self.host = host
        self._port = port
        self._target = target

    @property
    def port(self) -> int | None:
        """The port, None for the scheme's default."""
        return None if self._port == _DEFAULT_PORTS.get(self.scheme) else self._port

    def __str__(self) -> str:
        if "://" in self._target.partition("?")[0]:
            return self._target
        host = f"[{self.host}]" if ":" in self.host else self.host
        port = "" if self.port is None else f":{self.port}"
        target = self._target if self._target.startswith("/") else f"/{self._target}"
        return f"{self.scheme}://{host}{port}{target}"


class HeaderList:
    """Headers as a list of (lower-case name, value): ``get`` joins a repeated name. A name
    or value given as bytes (botocore sends its headers so) is read as latin-1, as
    ``http.client`` puts it on the wire."""

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[tuple[str | bytes, str | bytes]]) -> None:
        self._items = [(_header_text(name).lower(), _header_text(value)) for name, value in items]

    def get(self, key: str, default: str | None = None) -> str | None:
        name = key.lower()
        values = [value for item, value in self._items if item == name]
        return ", ".join(values) if values else default

    def multi_items(self) -> list[tuple[str, str]]:
        return list(self._items)


def _header_text(value: object) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


class Urllib3Request:
    """One request ``_make_request`` was asked to send (``options``: its arguments by
    name), as the boundary reads it."""

    def __init__(
        self,
        pool: Urllib3Pool,
        options: dict[str, object],
        send: Callable[..., Urllib3HTTPResponse],
    ) -> None:
        self.pool = pool
        self.options = options
        self._send = send
        self._content: bytes | None = None
        target = options.get("url")
        self.url = TargetURL(pool.scheme, pool.host, pool.port, str(target))
        headers = options.get("headers")
        self.headers: HttpHeaders = HeaderList(
            cast(Urllib3Headers, headers).items() if headers is not None else ()
        )

    @property
    def method(self) -> str:
        return str(self.options.get("method"))

    @property
    def connection(self) -> object:
        return self.options.get("conn")

    @property
    def content(self) -> bytes:
        assert self._content is not None, "the request's body is read first"
        return self._content

    def read(self) -> bytes:
        """Read the whole body; a file or an iterable is replaced by what it held."""
        if self._content is None:
            body = self.options.get("body")
            self._content = whole_body(body)
            if body is not None and not isinstance(body, bytes | str):
                self.options["body"] = self._content
        return self._content

    async def aread(self) -> bytes:
        return self.read()

    def send(self) -> Urllib3Response:
        """Send the request for real, its response's body left unread."""
        options = {**self.options, "preload_content": False}
        return Urllib3Response(self._send(**options), self)

    def delivered(self, response: Urllib3Response) -> Urllib3HTTPResponse:
        """The urllib3 response the caller gets: its body read now when it asked for it
        preloaded."""
        raw = response.raw
        if self.options.get("preload_content", True):
            decode = self.options.get("decode_content", True)
            raw.read(decode_content=bool(decode), cache_content=True)
        return raw


def whole_body(body: object, text_encoding: str = "utf-8") -> bytes:
    """The bytes a client sends for ``body``: bytes as they are, a file or an iterable read
    to its end, text encoded as the library encodes it (urllib3: UTF-8; ``http.client``:
    ISO-8859-1)."""
    if body is None:
        return b""
    if isinstance(body, str):
        return body.encode(text_encoding)
    if isinstance(body, bytes | bytearray | memoryview):
        return bytes(body)
    read = getattr(body, "read", None)
    if callable(read):
        pieces: Iterable[object] = _until_empty(iter(functools.partial(read, 65536), None))
    else:
        pieces = cast(Iterable[object], body)
    return b"".join(
        piece.encode(text_encoding) if isinstance(piece, str) else bytes(cast(bytes, piece))
        for piece in pieces
    )


def _until_empty(pieces: Iterator[object]) -> Iterator[object]:
    for piece in pieces:
        if not piece:
            return
        yield piece


class _PoolSender:
    """The transport :class:`~openprogram.http_boundary.exchange.CapturingTransport` sends
    a :class:`Urllib3Request` through: its own pool."""

    def handle_request(self, request: HttpRequest) -> HttpResponse:
        return cast(Urllib3Request, request).send()


class _RawStream:
    """A urllib3 response's body as a byte stream."""

    def __init__(self, raw: Urllib3HTTPResponse) -> None:
        self._raw = raw

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._raw.stream())

    def close(self) -> None:
        self._raw.close()


class Urllib3Response:
    """A urllib3 ``HTTPResponse`` (``raw``) as the boundary reads it."""

    def __init__(self, raw: Urllib3HTTPResponse, request: Urllib3Request) -> None:
        self.raw = raw
        self.request: HttpRequest = request
        self.stream: SyncByteStream | AsyncByteStream = _RawStream(raw)

    @property
    def status_code(self) -> int:
        return self.raw.status

    @property
    def headers(self) -> HttpHeaders:
        return HeaderList(self.raw.headers.items())

    @property
    def is_stream_consumed(self) -> bool:
        return False

    @property
    def content(self) -> bytes:
        return self.raw.read(cache_content=True)

    def close(self) -> None:
        self.raw.close()

    async def aclose(self) -> None:
        self.raw.close()


class JoinedDecoder:
    """urllib3's content decoder (or none) as the recorder uses one."""

    __slots__ = ("_decoder",)

    def __init__(self, decoder: _Decoder | None) -> None:
        self._decoder = decoder

    def decode(self, data: bytes) -> bytes:
        return data if self._decoder is None else self._decoder.decompress(data)

    def flush(self) -> bytes:
        decoder = self._decoder
        return b"" if decoder is None else decoder.decompress(b"") + decoder.flush()


def tee(raw: Urllib3HTTPResponse, recorder: BodyRecorder) -> None:
    """Have ``raw`` report to ``recorder`` each piece of its body as it is read off the
    connection (urllib3's ``_raw_read`` and ``_handle_chunk``, before it decodes them),
    the end of the body once its connection's response is read to the end (``read``,
    ``read1``, ``read_chunked``), an error one of them raises, and the client's close (a
    close urllib3 makes itself while a read fails is that failure)."""
    body = _BodyTee(raw, recorder)
    methods = vars(raw)
    for name in ("_raw_read", "_handle_chunk"):
        methods[name] = body.feeding(getattr(raw, name))
    for name in ("read", "read1"):
        methods[name] = body.ending(getattr(raw, name))
    methods["read_chunked"] = body.chunks(getattr(raw, "read_chunked"))  # noqa: B009
    methods["close"] = body.closing(raw.close)


class _BodyTee:
    """The wrappers :func:`tee` puts on one response's methods."""

    def __init__(self, raw: Urllib3HTTPResponse, recorder: BodyRecorder) -> None:
        self._raw = raw
        self._recorder = recorder
        self._reading = 0
        """How many reads are under way (a read calls another, urllib3 closes inside one)."""

    def _ended(self) -> bool:
        """Whether the connection's response has been read to its end."""
        return getattr(self._raw, "_fp", None) is None or self._raw.isclosed()

    def feeding(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        recorder = self._recorder

        @functools.wraps(read)
        def read_off(*args: object, **kwargs: object) -> bytes:
            data = read(*args, **kwargs)
            if data:
                recorder.feed(data)
            return data

        return read_off

    def ending(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_body(*args: object, **kwargs: object) -> bytes:
            self._reading += 1
            try:
                data = read(*args, **kwargs)
            except BaseException as exc:
                self._recorder.ended_by(exc)
                raise
            finally:
                self._reading -= 1
            if self._ended():
                self._recorder.ended_by(StopIteration())
            return data

        return read_body

    def chunks(
        self, read_chunked: Callable[..., Iterator[bytes]]
    ) -> Callable[..., Iterator[bytes]]:
        @functools.wraps(read_chunked)
        def read_chunks(*args: object, **kwargs: object) -> Iterator[bytes]:
            pieces = read_chunked(*args, **kwargs)
            while True:
                self._reading += 1
                try:
                    piece = next(pieces)
                except BaseException as exc:
                    self._recorder.ended_by(exc)
                    if isinstance(exc, StopIteration):
                        return
                    raise
                finally:
                    self._reading -= 1
                yield piece

        return read_chunks

    def closing(self, close: Callable[[], None]) -> Callable[[], None]:
        @functools.wraps(close)
        def close_body() -> None:
            try:
                close()
            finally:
                if not self._reading:
                    self._recorder.closed()

        return close_body


def replay_framing(headers: Iterable[tuple[str, str]]) -> str | None:
    """The ``content-length`` a replayed body is framed by for ``http.client`` when it is
    served with one (the body is then exactly that long); None: it is framed as a chunked
    body."""
    for name, value in headers:
        if name == "content-length":
            return value
    return None


class ReplayBody(io.RawIOBase):
    """A replayed response as the bytes ``http.client`` reads (under an
    ``io.BufferedReader``): ``head``, then each recorded chunk — in chunked transfer
    encoding (``chunked``), else as it is — then the end of the body, or whatever ending the
    walk of the recording raises, once the chunks before it have been read."""

    def __init__(self, head: bytes, chunks: Iterator[bytes], *, chunked: bool = True) -> None:
        self._chunks = chunks
        self._pending = head
        self._done = False
        self._chunked = chunked

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            piece = next(self._chunks, None)
            if piece is None:
                self._done = True
                self._pending = b"0\r\n\r\n" if self._chunked else b""
            elif piece:
                self._pending = b"%x\r\n%s\r\n" % (len(piece), piece) if self._chunked else piece
        count = min(len(buffer), len(self._pending))
        buffer[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count


class _ReplaySocket:
    """What ``http.client.HTTPResponse`` reads a replayed response from."""

    def __init__(self, source: io.BufferedReader[ReplayBody]) -> None:
        self._source = source

    def makefile(self, mode: str) -> io.BufferedReader[ReplayBody]:
        return self._source
