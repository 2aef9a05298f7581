"""urllib3 (and so ``requests`` and botocore, which send through it), captured at its
connection pools' ``_make_request``: :class:`Urllib3Library`.

``HTTPConnectionPool._make_request`` sends one request on one connection and returns its
one response; ``urlopen`` around it follows urllib3's retries and redirects, and
``PoolManager`` its redirects across hosts, each hop one ``_make_request``. So each request
urllib3 makes on the wire is one captured exchange, and nothing is captured twice. While an
HTTP boundary is active and the request is captured
(:func:`~openprogram.http_boundary.exchange.captures`: not a passthrough host), the patched
method drives the one :func:`~openprogram.http_boundary.exchange.exchange_flow`; while none
is, it calls the original after one attribute read.

A body that is a file or an iterable is read whole, and that whole body is what is sent.
Recording sends the request with the response's body left unread, and tees the live
``urllib3.response.HTTPResponse`` (:func:`tee`): each piece of the body read off the
connection is reported to the recorder before urllib3 decodes it. Replaying wraps the
replayed ``http.client`` response (:mod:`~openprogram.http_boundary.clients.raw_http`) in an
``HTTPResponse`` of the module, no connection made. Either way a body the caller asked
preloaded is read afterwards, as urllib3 itself does. A recorded error replays as the
urllib3 exception of its name, its message as recorded.

This module imports no urllib3: what it needs of the library is bound when
``urllib3.connectionpool`` is hooked, after the program imported it (urllib3 2; an older
one is left alone).
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    BodyRecorder,
    HeaderList,
    HttpHeaders,
    HttpRequest,
    ReadsThroughProtocols,
    RequestView,
    exception_of,
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

__all__ = ["Urllib3Library", "Urllib3Request", "tee"]

_PATCH_MARK = "_openprogram_http_capture"
T = TypeVar("T")


class Urllib3Headers(Protocol):
    """urllib3's ``HTTPHeaderDict``: ``items`` repeats a name sent more than once."""

    def items(self) -> Iterable[tuple[str, str]]: ...


class Urllib3Pool(Protocol):
    """An ``HTTPConnectionPool``."""

    scheme: str
    host: str
    port: int | None
    num_requests: int


class Urllib3Response(Protocol):
    """urllib3's ``HTTPResponse``, as the boundary reads and tees it."""

    status: int
    headers: Urllib3Headers

    def read(
        self, amt: int | None = None, decode_content: bool | None = None, cache_content: bool = ...
    ) -> bytes: ...
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
        module = self.response_module
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
        tee(response, recorder)

    def content_decoder(self, content_encoding: str) -> JoinedDecoder | None:
        """urllib3's decoder of ``content_encoding``, as its ``HTTPResponse`` picks it (none
        for an encoding it does not know: the bytes are kept as they came)."""
        module = self.response_module
        known = module.HTTPResponse.CONTENT_DECODERS
        encoding = content_encoding.lower()
        if encoding in known or any(e.strip() in known for e in encoding.split(",")):
            return JoinedDecoder(module._get_decoder(encoding))
        return None

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The class of urllib3 by that name for a urllib3 error, each argument its
        constructor requires the connection, the pool or the URL it names, else the message
        (a built-in by its name; else ``RecordedProviderError``)."""
        sent = cast(Urllib3Request, request)
        arguments = {"conn": sent.options.get("conn"), "pool": sent.pool, "url": sent.target}
        ours = recorded.type.split(".")[0] == "urllib3"
        return rebuilt_error(
            recorded,
            self._exceptions if ours else None,
            functools.partial(exception_of, arguments=arguments),
        )


def _capturing(
    original: Callable[..., Urllib3Response],
    signature: inspect.Signature,
    library: Urllib3Library,
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
        request = Urllib3Request(self, dict(bound.arguments), original)
        if not captures(self, request.url, boundary, library):
            return original(self, *args, **kwargs)
        flow = exchange_flow(boundary, library, request, asynchronous=False)
        return request.delivered(drive(flow, request.send, request.read, lambda raw: raw.close()))

    return _make_request


class Urllib3Request(RequestView):
    """One request ``_make_request`` was asked to send (``options``: its arguments by
    name), as the boundary reads it."""

    def __init__(
        self, pool: Urllib3Pool, options: dict[str, object], send: Callable[..., Urllib3Response]
    ) -> None:
        self.pool = pool
        self.options = options
        self.target = options.get("url")
        self._send = send
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

    def send(self) -> Urllib3Response:
        """Send the request for real, its response's body left unread."""
        return self._send(**{**self.options, "preload_content": False})

    def delivered(self, raw: Urllib3Response) -> Urllib3Response:
        """The urllib3 response the caller gets: its body read now when it asked for it
        preloaded."""
        if self.options.get("preload_content", True):
            decode = self.options.get("decode_content", True)
            raw.read(decode_content=bool(decode), cache_content=True)
        return raw


class JoinedDecoder:
    """urllib3's content decoder as the recorder uses one."""

    __slots__ = ("_decoder",)

    def __init__(self, decoder: _Decoder) -> None:
        self._decoder = decoder

    def decode(self, data: bytes) -> bytes:
        return self._decoder.decompress(data)

    def flush(self) -> bytes:
        return self._decoder.decompress(b"") + self._decoder.flush()


def tee(raw: Urllib3Response, recorder: BodyRecorder) -> None:
    """Have ``raw`` report to ``recorder`` each piece of its body as it is read off the
    connection (urllib3's ``_raw_read`` and ``_handle_chunk``, before it decodes them),
    the end of the body once its connection's response is read to the end (``read``,
    ``read1``, ``read_chunked``), an error one of them raises, and the client's close (a
    close urllib3 makes itself while a read fails is that failure)."""
    body = _BodyTee(raw, recorder)
    feeding = {name: body.feeding(getattr(raw, name)) for name in ("_raw_read", "_handle_chunk")}
    ending = {name: body.ending(getattr(raw, name)) for name in ("read", "read1")}
    body.install({**feeding, **ending, "read_chunked": body.chunks(getattr(raw, "read_chunked"))})  # noqa: B009


class _BodyTee(BodyTee):
    """The wrappers :func:`tee` puts on one response's reads."""

    _raw: Urllib3Response

    def _ended(self) -> bool:
        """Whether the connection's response has been read to its end."""
        return getattr(self._raw, "_fp", None) is None or self._raw.isclosed()

    def feeding(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_off(*args: object, **kwargs: object) -> bytes:
            data = read(*args, **kwargs)
            if data:
                self._recorder.feed(data)
            return data

        return read_off

    def ending(self, read: Callable[..., bytes]) -> Callable[..., bytes]:
        @functools.wraps(read)
        def read_body(*args: object, **kwargs: object) -> bytes:
            data = self._reported(lambda: read(*args, **kwargs))
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
                try:
                    piece = self._reported(lambda: next(pieces))
                except StopIteration:
                    return
                yield piece

        return read_chunks

    def _reported(self, call: Callable[[], T]) -> T:
        """``call()``, a read under way; what it raises (its end too) is reported."""
        self._reading += 1
        try:
            return call()
        except BaseException as exc:
            self._recorder.ended_by(exc)
            raise
        finally:
            self._reading -= 1
