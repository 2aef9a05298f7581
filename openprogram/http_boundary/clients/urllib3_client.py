"""urllib3 (and so ``requests`` and botocore, which send through it), captured at its
connection pools' ``_make_request``: :class:`Urllib3Library`.

``HTTPConnectionPool._make_request`` sends one request on one connection and returns its
one response; retries and redirects (``urlopen``, ``PoolManager``) are each one more
``_make_request``. So each request urllib3 makes on the wire is one captured exchange, and
nothing is captured twice. While an HTTP boundary is active and the request is captured
(:func:`~openprogram.http_boundary.exchange.captures`), the patched method drives the one
:func:`~openprogram.http_boundary.exchange.exchange_flow`; while none is, it calls the
original after one attribute read.

A body that is a file or an iterable is read whole, and that is what is sent. Recording
sends the request with the response's body left unread, and tees the live ``HTTPResponse``:
each piece of the body read off the connection is reported before urllib3 decodes it.
Replaying wraps the replayed ``http.client`` response
(:mod:`~openprogram.http_boundary.clients.raw_http`) in an ``HTTPResponse``, no connection
made. Either way a body the caller asked preloaded is read afterwards, as urllib3 does. This
module imports no urllib3: what it needs is bound when ``urllib3.connectionpool`` (of
urllib3 2; an older one is left alone) is hooked, after the program imported it."""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    BodyRecorder,
    ContentDecoder,
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

__all__ = ["Urllib3Library", "Urllib3Request"]

_PATCH_MARK = "_openprogram_http_capture"
_FED = ("_raw_read", "_handle_chunk")


class Urllib3Pool(Protocol):
    """An ``HTTPConnectionPool``."""

    scheme: str
    host: str
    port: int | None
    num_requests: int


class Urllib3Response(Protocol):
    """urllib3's ``HTTPResponse``, as the boundary reads and tees it."""

    status: int
    headers: Mapping[str, str]  # an HTTPHeaderDict: ``items`` repeats a name

    def read(
        self, amt: int | None = None, decode_content: bool | None = None, cache_content: bool = ...
    ) -> bytes: ...
    def read_chunked(self) -> Iterator[bytes]: ...
    def close(self) -> None: ...
    def isclosed(self) -> bool: ...


class Urllib3Library:
    """urllib3, as the HTTP boundary captures it; bound to ``urllib3.connectionpool`` when
    that is hooked (a module imported afresh gets an instance of its own)."""

    name = "urllib3"
    module_names = ("urllib3.connectionpool",)

    def __init__(self) -> None:
        self._response_module: ModuleType | None = None
        self._exceptions: ModuleType | None = None
        self._pool_class: type | None = None

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

    def head(self, response: Urllib3Response) -> tuple[int, HttpHeaders]:
        return response.status, HeaderList(response.headers.items())

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> Urllib3Response:
        sent = cast(Urllib3Request, request)
        sent.pool.num_requests += 1  # as the original counts every request it sends
        options = sent.options
        original = replayed_response(status, headers, body, method=sent.method)
        module = self._response_module
        assert module is not None, "urllib3 is used before it was hooked"
        return cast(
            Urllib3Response,
            module.HTTPResponse(
                body=original,
                headers=module.HTTPHeaderDict(original.getheaders()),
                status=status,
                version=11,
                version_string="HTTP/1.1",
                reason=original.reason,
                preload_content=False,
                decode_content=options.get("decode_content", True),
                original_response=original,
                pool=sent.pool,
                connection=options.get("response_conn"),
                retries=options.get("retries"),
                enforce_content_length=options.get("enforce_content_length", True),
                request_method=sent.method,
                request_url=options.get("url"),
            ),
        )

    def record_body(
        self, response: Urllib3Response, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        """Have ``response`` report each piece of its body as it is read off the connection
        (urllib3's ``_raw_read`` and ``_handle_chunk``, before it decodes them), the end of
        the body once its connection's response is read to the end (``read``, ``read1``,
        ``read_chunked``), an error one of them raises, and the client's close (a close
        urllib3 makes itself while a read fails is that failure)."""
        body = _BodyTee(response, recorder)
        feeding = {name: body.feeding(getattr(response, name)) for name in _FED}
        body.install(
            ("read", "read1"), {**feeding, "read_chunked": body.chunks(response.read_chunked)}
        )

    def content_decoder(self, content_encoding: str) -> ContentDecoder | None:
        """urllib3's decoder of ``content_encoding``, as its ``HTTPResponse`` picks it (none
        for an encoding it does not know: the bytes are kept as they came)."""
        module = self._response_module
        assert module is not None, "urllib3 is used before it was hooked"
        known = module.HTTPResponse.CONTENT_DECODERS
        encoding = content_encoding.lower()
        if encoding in known or any(e.strip() in known for e in encoding.split(",")):
            decoder: ContentDecoder = module._get_decoder(encoding)
            return decoder
        return None

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of urllib3 by that name for a urllib3 error, each argument its
        constructor requires the connection, the pool or the URL it names, else the message
        (a built-in by its name; else ``RecordedProviderError``)."""
        sent = cast(Urllib3Request, request)
        classes = self._exceptions if recorded.type.split(".")[0] == "urllib3" else None
        connection = sent.options.get("conn")
        return rebuilt_error(recorded, classes, conn=connection, pool=sent.pool, url=sent.target)


def _capturing(
    original: Callable[..., Urllib3Response], signature: inspect.Signature, library: Urllib3Library
) -> Callable[..., Urllib3Response]:
    # the exchange (and what it imports, asyncio among them) loads once a library is hooked
    from openprogram.http_boundary.exchange import captures, drive, exchange_flow

    @functools.wraps(original)
    def _make_request(self: Urllib3Pool, *args: object, **kwargs: object) -> Urllib3Response:
        boundary = ACTIVATIONS.current
        if boundary is None:
            return original(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        request = Urllib3Request(self, dict(bound.arguments))
        if not captures(self, request.url, boundary, library):
            return original(self, *args, **kwargs)
        options = request.options

        def send() -> Urllib3Response:  # its body left unread
            return original(**{**options, "preload_content": False})

        flow = exchange_flow(boundary, library, request, asynchronous=False)
        raw = drive(flow, send, request.read, lambda response: response.close())
        if options.get("preload_content", True):  # read now, as urllib3 does
            raw.read(decode_content=bool(options.get("decode_content", True)), cache_content=True)
        return raw

    return _make_request


class Urllib3Request(RequestView):
    """One request ``_make_request`` was asked to send (``options``: its arguments by
    name), as the boundary reads it."""

    def __init__(self, pool: Urllib3Pool, options: dict[str, object]) -> None:
        self.pool = pool
        self.options = options
        self.target = options.get("url")
        headers = cast(Mapping[str, str] | None, options.get("headers"))
        super().__init__(
            str(options.get("method")),
            TargetURL(pool.scheme, pool.host, pool.port, str(self.target)),
            () if headers is None else headers.items(),
        )

    def read(self) -> bytes:
        """Read the whole body; a file or an iterable is replaced by what it held."""
        if self._content is None:
            body = self.options.get("body")
            self._content = whole_body(body)
            if body is not None and not isinstance(body, bytes | str):
                self.options["body"] = self._content
        return self._content


class _BodyTee(BodyTee):
    """The wrappers on one response's reads (see :meth:`Urllib3Library.record_body`)."""

    _raw: Urllib3Response
    feeds = False  # the reads of ``_raw_read`` and ``_handle_chunk`` feed the recorder

    def _ending(self) -> BaseException | None:
        ended = getattr(self._raw, "_fp", None) is None or self._raw.isclosed()
        return StopIteration() if ended else None

    def feeding(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_off(*args: object, **kwargs: object) -> bytes:
            data = read(*args, **kwargs)
            if data:
                self._recorder.feed(data)
            return data

        return read_off

    def chunks(
        self, read_chunked: Callable[..., Iterator[bytes]]
    ) -> Callable[..., Iterator[bytes]]:
        @functools.wraps(read_chunked)
        def read_chunks(*args: object, **kwargs: object) -> Iterator[bytes]:
            pieces = read_chunked(*args, **kwargs)
            while True:
                try:
                    yield self.reported(lambda: next(pieces))
                except StopIteration:
                    return

        return read_chunks
