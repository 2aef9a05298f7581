"""aiohttp, captured at ``ClientSession._request`` through an innermost client middleware:
:class:`AiohttpLibrary`.

While an HTTP boundary is active, the patched ``_request`` adds one middleware after the
session's (or the request's) own, around aiohttp's connect-and-send of each request (each
redirect hop and retry is one exchange), unless httpx over aiohttp captured it above
(:mod:`~openprogram.http_boundary.boundary`). The middleware drives the one
:func:`~openprogram.http_boundary.exchange.exchange_flow`: under record it calls aiohttp's
handler, and the response's ``content`` becomes a stream reader that pulls from aiohttp's
own and reports each piece to the recorder as the program reads it (already decoded, as
aiohttp holds it); releasing or closing the response reports what had arrived by then.
Under replay no socket is opened: the answer is a real ``ClientResponse`` whose ``content``
is fed the recorded body as the program reads it. A recorded error replays as the aiohttp
class of its name (``ClientConnectorError`` from the request's connection key and the
recorded reason). An aiohttp before 3.12 has no client middlewares and is left unhooked.
This module imports no aiohttp: what it needs is taken from ``sys.modules`` once hooked."""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Iterator, Mapping
from types import ModuleType, SimpleNamespace
from typing import TYPE_CHECKING, Protocol, cast

from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    BodyRecorder,
    HeaderList,
    HttpHeaders,
    HttpRequest,
    RequestView,
    URLView,
    reason_phrase,
    rebuilt_error,
)

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = ["AiohttpLibrary"]

_PATCH_MARK = "_openprogram_http_capture"
_READ_LIMIT = 2**16
"""The buffer limit of a stream reader built here (aiohttp's default ``read_bufsize``)."""
_REASON = re.compile(r" \[(.*)\]\Z", re.DOTALL)
"""The OS reason at the end of a ``ClientConnectorError``'s message."""


def _no_flow_control() -> SimpleNamespace:
    """The protocol of a stream reader built here: nothing to pause."""
    return SimpleNamespace(connected=True, pause_reading=_nothing, resume_reading=_nothing)


def _nothing(*args: object, **kwargs: object) -> None:
    pass


class _YarlURL(Protocol):
    """aiohttp's URL (``yarl.URL``)."""

    @property
    def host(self) -> str | None: ...
    @property
    def explicit_port(self) -> int | None: ...
    @property
    def scheme(self) -> str: ...


class _StreamReader(Protocol):
    """aiohttp's ``StreamReader``, as the recording reads it."""

    async def readany(self) -> bytes: ...
    def read_nowait(self, n: int = -1) -> bytes: ...
    def at_eof(self) -> bool: ...
    def exception(self) -> BaseException | None: ...
    def feed_data(self, data: bytes) -> object: ...
    def feed_eof(self) -> None: ...
    def on_eof(self, callback: Callable[[], None]) -> None: ...


class _ClientResponse(Protocol):
    """aiohttp's ``ClientResponse``."""

    status: int
    content: _StreamReader

    @property
    def headers(self) -> Mapping[str, str]: ...  # a multidict: ``items`` repeats a name
    def close(self) -> None: ...
    def release(self) -> object: ...


class _ClientRequest(Protocol):
    """aiohttp's ``ClientRequest``, as a middleware sees it (its ``body`` a payload)."""

    method: str
    url: _YarlURL
    headers: Mapping[str, str]
    body: object
    connection_key: object
    request_info: object
    response_class: Callable[..., _ClientResponse]


_Handler = Callable[[_ClientRequest], Awaitable[_ClientResponse]]
_Middleware = Callable[[_ClientRequest, _Handler], Awaitable[_ClientResponse]]
_RequestMethod = Callable[..., Awaitable[_ClientResponse]]


class AiohttpLibrary:
    """aiohttp, as the HTTP boundary captures it; bound to ``aiohttp.client`` when that is
    hooked."""

    name = "aiohttp"
    module_names = ("aiohttp.client",)

    def __init__(self) -> None:
        self._module: ModuleType | None = None
        # combined with aiohttp's StreamReader once it is hooked
        self._recording_content: type = _RecordingContent
        self._replay_content: type = _ReplayContent
        self._response_takes_stream_writer = False

    def hook(self, module: ModuleType) -> None:
        """Patch ``ClientSession._request`` of ``module`` once (called under the patching's
        lock); an aiohttp without client middlewares is left alone."""
        session_class = getattr(module, "ClientSession", None)
        if not isinstance(session_class, type) or _PATCH_MARK in session_class.__dict__:
            return
        original = session_class.__dict__.get("_request")
        if original is None or "middlewares" not in inspect.signature(original).parameters:
            return
        library = self if self._module in (None, module) else AiohttpLibrary()
        library._module = module
        reader: type = sys.modules["aiohttp.streams"].StreamReader
        library._recording_content = type(
            "RecordingContent", (_RecordingContent, reader), {"__slots__": ("_recorder", "_source")}
        )
        library._replay_content = type(
            "ReplayContent", (_ReplayContent, reader), {"__slots__": ("_chunks",)}
        )
        parameters = inspect.signature(module.ClientResponse.__init__).parameters
        library._response_takes_stream_writer = "stream_writer" in parameters
        session_class._request = _capturing(original, library)  # type: ignore[attr-defined]
        setattr(session_class, _PATCH_MARK, True)

    def head(self, response: _ClientResponse) -> tuple[int, HttpHeaders]:
        return response.status, HeaderList(response.headers.items())

    def response(
        self,
        request: HttpRequest,
        status: int,
        headers: list[tuple[str, str]],
        body: Iterator[bytes],
        *,
        asynchronous: bool,
    ) -> _ClientResponse:
        view = cast(_RequestView, request)
        sent = view.request
        loop = sys.modules["asyncio"].get_running_loop()
        # a replayed response was sent, and nothing of it was written (aiohttp 3.14 on)
        written = {"stream_writer": SimpleNamespace(output_size=0)}
        response = sent.response_class(
            sent.method,
            sent.url,
            writer=None,
            continue100=None,
            timer=None,
            request_info=sent.request_info,
            traces=[],
            loop=loop,
            session=view.session,
            **(written if self._response_takes_stream_writer else {}),
        )
        multidict = sys.modules["multidict"]
        content = self._replay_content(_no_flow_control(), _READ_LIMIT, loop=loop)
        content._chunks = body
        vars(response).update(
            version=sys.modules["aiohttp.http"].HttpVersion11,
            status=status,
            reason=reason_phrase(status),
            _headers=multidict.CIMultiDictProxy(multidict.CIMultiDict(headers)),
            _raw_headers=tuple((k.encode(), v.encode("utf-8")) for k, v in headers),
            content=content,
            _closed=False,
        )
        content.on_eof(response._response_eof)  # type: ignore[attr-defined]
        return response

    def record_body(
        self, response: _ClientResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        loop = sys.modules["asyncio"].get_running_loop()
        content = self._recording_content(_no_flow_control(), _READ_LIMIT, loop=loop)
        content._source = response.content
        content._recorder = recorder
        release, close = response.release, response.close

        def released() -> object:
            content.settle()
            return release()

        def closed() -> None:
            content.settle()
            close()

        vars(response).update(content=content, release=released, close=closed)

    def content_decoder(self, content_encoding: str) -> None:
        """None: aiohttp's reader already holds the body decoded."""
        return None

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The aiohttp class of that name for an aiohttp error, the built-in class for a
        built-in, else ``RecordedProviderError`` naming the recorded type."""
        exceptions = sys.modules["aiohttp.client_exceptions"]

        def build(cls: type[Exception], message: str) -> BaseException | None:
            candidates: list[tuple[object, ...]] = [(message,), ()]
            if issubclass(cls, exceptions.ClientConnectorError):
                match = _REASON.search(message)
                reason = OSError(None, match.group(1) if match else message)
                candidates.insert(0, (cast(_RequestView, request).request.connection_key, reason))
            for arguments in candidates:
                try:
                    return cls(*arguments)
                except TypeError:
                    continue
            return None

        ours = recorded.type.split(".")[0] == "aiohttp"
        return rebuilt_error(recorded, exceptions if ours else None, build)


def _capturing(original: _RequestMethod, library: AiohttpLibrary) -> _RequestMethod:
    # the exchange (and what it imports) loads once a library is hooked
    from openprogram.http_boundary.exchange import captures, drive_async, exchange_flow

    def capture(session: object) -> _Middleware:
        async def middleware(request: _ClientRequest, handler: _Handler) -> _ClientResponse:
            __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
            boundary = ACTIVATIONS.current
            url = request.url
            seen = URLView(url.host or "", url.explicit_port, url.scheme, str(url))
            if boundary is None or not captures(session, seen, boundary, library):
                return await handler(request)
            view = _RequestView(request, session, seen)
            flow = exchange_flow(boundary, library, view, asynchronous=True)

            async def send() -> _ClientResponse:
                return await handler(request)

            async def close(response: _ClientResponse) -> None:
                response.close()

            return await drive_async(flow, send, view.aread, close)

        return middleware

    @functools.wraps(original)
    def _request(self: object, *args: object, **kwargs: object) -> Awaitable[_ClientResponse]:
        if ACTIVATIONS.current is None:
            return original(self, *args, **kwargs)
        own = kwargs.get("middlewares")
        chain = getattr(self, "_middlewares", ()) if own is None else own
        kwargs["middlewares"] = (*cast("tuple[_Middleware, ...]", chain), capture(self))
        return original(self, *args, **kwargs)

    return _request


class _RequestView(RequestView):
    """An aiohttp request as the exchange reads it; its body is read once, by ``aread``."""

    def __init__(self, request: _ClientRequest, session: object, url: URLView) -> None:
        super().__init__(request.method, url, request.headers.items())
        self.request = request
        self.session = session

    async def aread(self) -> bytes:
        body = self.request.body
        if isinstance(body, bytes | bytearray):
            self._content = bytes(body)
        else:
            as_bytes = getattr(body, "as_bytes", None)
            self._content = b"" if as_bytes is None else await as_bytes()
        return self._content


class _RecordingContent:
    """A response's ``content`` under record (combined with aiohttp's ``StreamReader``):
    each time the program waits for more of the body, the next piece aiohttp's own reader
    holds is taken, reported to the recorder, and handed on."""

    __slots__ = ()
    _source: _StreamReader
    _recorder: BodyRecorder

    async def _wait(self, func_name: str) -> None:
        reader = cast(_StreamReader, self)
        try:
            data = await self._source.readany()
        except BaseException as exc:
            self._recorder.ended_by(exc)
            raise
        if data:
            self._recorder.feed(data)
            reader.feed_data(data)
        else:
            self._recorder.ended_by(StopAsyncIteration())
            reader.feed_eof()

    def settle(self) -> None:
        """The program releases the response: what had arrived is reported, and the call
        ends complete when that was the whole body, else as the recorder's ``closed``."""
        source, recorder = self._source, self._recorder
        try:
            while source.exception() is None and (data := source.read_nowait(-1)):
                recorder.feed(data)
        except RuntimeError:  # another task is waiting on the reader
            pass
        if source.exception() is None and source.at_eof():
            recorder.ended_by(StopAsyncIteration())
        else:
            recorder.closed()


class _ReplayContent:
    """A replayed response's ``content`` (combined with aiohttp's ``StreamReader``): each
    time the program waits for more of the body, the next recorded piece is fed, then the
    end (the recorded call's end is raised here when it is not a plain end)."""

    __slots__ = ()
    _chunks: Iterator[bytes]

    async def _wait(self, func_name: str) -> None:
        try:
            chunk = next(self._chunks)
        except StopIteration:
            cast(_StreamReader, self).feed_eof()
            return
        cast(_StreamReader, self).feed_data(chunk)
