"""aiohttp, captured at ``ClientSession._request`` through an innermost client middleware:
:class:`AiohttpLibrary`.

While an HTTP boundary is active, the patched ``_request`` adds one middleware after the
session's (or the request's) own, so it runs around aiohttp's connect-and-send of each
request it sends — every hop of a redirect and every retry on a fresh connection is one
exchange, recorded as sent — unless it is captured above: a transport of httpx over aiohttp
(litellm's default async one, the SDKs' ``DefaultAioHttpClient``) is httpx's call, and the
middleware passes it through (:mod:`~openprogram.http_boundary.stacking`). The middleware
drives the one :func:`~openprogram.http_boundary.exchange.exchange_flow`: under record it
calls aiohttp's handler (the connection is opened and the request sent for real), and the
response's ``content`` becomes a stream reader that pulls from aiohttp's own and reports
each piece to the recorder as the program reads it (line by line, by chunk, ``read()``,
``json()``, ``text()``); releasing or closing the response reports what had arrived by then.
Under replay the handler is never called, so no socket is opened: the answer is a real
``ClientResponse`` of the recorded status and headers whose ``content`` is a stream reader
fed the recorded body as the program reads it. Client middlewares exist from aiohttp 3.12
on; an older aiohttp is left unhooked (its connections are then refused under replay by the
connection guard).

aiohttp already decodes a ``content-encoding`` before its stream reader holds the body, so
what the recorder is fed is the decoded body. A recorded error replays as the aiohttp class
of its name (``ClientConnectorError`` built from the request's connection key and an
``OSError`` holding the recorded reason, so its message is the recorded one). This module
imports no aiohttp (nor asyncio): what it needs of them is taken from ``sys.modules`` once
aiohttp is hooked, having imported them.
"""

from __future__ import annotations

import builtins
import functools
import inspect
import re
import sys
from collections.abc import Awaitable, Callable, Iterator
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

from openprogram.errors import RecordedProviderError
from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.http_boundary.clients.interface import (
    AsyncByteStream,
    BodyRecorder,
    HttpRequest,
    HttpResponse,
    ReadsThroughProtocols,
    SyncByteStream,
    reason_phrase,
)

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedError

__all__ = ["AiohttpLibrary"]

_PATCH_MARK = "_openprogram_http_capture"
_READ_LIMIT = 2**16
"""The buffer limit of a stream reader built here (aiohttp's default ``read_bufsize``)."""
_REASON = re.compile(r" \[(.*)\]\Z", re.DOTALL)
"""The OS reason at the end of a ``ClientConnectorError``'s message."""


class _MultiDict(Protocol):
    """aiohttp's headers (a ``multidict`` mapping: case-insensitive, repeated names)."""

    def get(self, key: str, default: str | None = None) -> str | None: ...
    def items(self) -> Iterator[tuple[str, str]]: ...


class _YarlURL(Protocol):
    """aiohttp's URL (``yarl.URL``)."""

    @property
    def host(self) -> str | None: ...
    @property
    def explicit_port(self) -> int | None: ...
    @property
    def scheme(self) -> str: ...


class _Payload(Protocol):
    """A request body of aiohttp."""

    async def as_bytes(self) -> bytes: ...


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
    def headers(self) -> _MultiDict: ...
    def close(self) -> None: ...
    def release(self) -> object: ...


class _ClientRequest(Protocol):
    """aiohttp's ``ClientRequest``, as a middleware sees it."""

    @property
    def method(self) -> str: ...
    @property
    def url(self) -> _YarlURL: ...
    @property
    def headers(self) -> _MultiDict: ...
    @property
    def body(self) -> _Payload | bytes: ...
    @property
    def connection_key(self) -> object: ...
    @property
    def request_info(self) -> object: ...
    @property
    def response_class(self) -> Callable[..., _ClientResponse]: ...


_Handler = Callable[[_ClientRequest], Awaitable[_ClientResponse]]
_Middleware = Callable[[_ClientRequest, _Handler], Awaitable[_ClientResponse]]
_RequestMethod = Callable[..., Awaitable[_ClientResponse]]


class AiohttpLibrary(ReadsThroughProtocols):
    """aiohttp, as the HTTP boundary captures it; bound to ``aiohttp.client`` when that is
    hooked."""

    def __init__(self) -> None:
        self._module: ModuleType | None = None
        self._recording_content: type | None = None
        self._replay_content: type | None = None
        self._response_takes_stream_writer = False

    @property
    def name(self) -> str:
        return "aiohttp"

    @property
    def module_names(self) -> tuple[str, ...]:
        return ("aiohttp.client",)

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
        library._bind(module)
        session_class._request = _capturing(original, library)  # type: ignore[attr-defined]
        setattr(session_class, _PATCH_MARK, True)

    def _bind(self, module: ModuleType) -> None:
        self._module = module
        reader: type = sys.modules["aiohttp.streams"].StreamReader
        self._recording_content = type(
            "RecordingContent", (_RecordingContent, reader), {"__slots__": ("_recorder", "_source")}
        )
        self._replay_content = type(
            "ReplayContent", (_ReplayContent, reader), {"__slots__": ("_chunks",)}
        )
        parameters = inspect.signature(module.ClientResponse.__init__).parameters
        self._response_takes_stream_writer = "stream_writer" in parameters

    @property
    def module(self) -> ModuleType:
        """The ``aiohttp.client`` module this library is bound to."""
        module = self._module
        assert module is not None, "aiohttp is used before it was hooked"
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
        view = cast(_RequestView, request)
        sent = view.request
        loop = sys.modules["asyncio"].get_running_loop()
        arguments: dict[str, object] = {
            "writer": None,
            "continue100": None,
            "timer": None,
            "request_info": sent.request_info,
            "traces": [],
            "loop": loop,
            "session": view.session,
        }
        if self._response_takes_stream_writer:
            arguments["stream_writer"] = _SentWriter()
        response = sent.response_class(sent.method, sent.url, **arguments)
        multidict = sys.modules["multidict"]
        fields = vars(response)
        fields["version"] = sys.modules["aiohttp.http"].HttpVersion11
        fields["status"] = status
        fields["reason"] = reason_phrase(status)
        fields["_headers"] = multidict.CIMultiDictProxy(multidict.CIMultiDict(headers))
        fields["_raw_headers"] = tuple((k.encode(), v.encode("utf-8")) for k, v in headers)
        replay_content = self._replay_content
        assert replay_content is not None
        content = replay_content(_NoFlowControl(), _READ_LIMIT, loop=loop)
        content._chunks = body
        fields["content"] = content
        fields["_closed"] = False
        content.on_eof(response._response_eof)  # type: ignore[attr-defined]
        return _ResponseView(response, view)

    def record_body(
        self, response: HttpResponse, recorder: BodyRecorder, *, asynchronous: bool
    ) -> None:
        received = cast(_ResponseView, response).response
        source = received.content
        recording_content = self._recording_content
        assert recording_content is not None
        content = recording_content(
            _NoFlowControl(), _READ_LIMIT, loop=sys.modules["asyncio"].get_running_loop()
        )
        content._source = source
        content._recorder = recorder
        fields = vars(received)
        fields["content"] = content
        release, close = received.release, received.close

        def released() -> object:
            content.settle()
            return release()

        def closed() -> None:
            content.settle()
            close()

        fields["release"] = released
        fields["close"] = closed

    def content_decoder(self, content_encoding: str) -> _AlreadyDecoded:
        return _AlreadyDecoded()

    def rebuild_error(self, recorded: RecordedError, request: HttpRequest) -> BaseException:
        """The aiohttp class of that name for an aiohttp error, the built-in class for a
        built-in, else ``RecordedProviderError`` naming the recorded type."""
        module, _, name = recorded.type.rpartition(".")
        sent = cast(_RequestView, request).request
        if module == "aiohttp" or module.startswith("aiohttp."):
            exceptions = sys.modules["aiohttp.client_exceptions"]
            cls = getattr(exceptions, name, None)
            if isinstance(cls, type) and issubclass(cls, Exception):
                if issubclass(cls, exceptions.ClientConnectorError):
                    match = _REASON.search(recorded.message)
                    reason = match.group(1) if match else recorded.message
                    try:
                        return cls(sent.connection_key, OSError(None, reason))
                    except TypeError:
                        pass
                for arguments in ((recorded.message,), ()):
                    try:
                        return cls(*arguments)
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


def _capturing(original: _RequestMethod, library: AiohttpLibrary) -> _RequestMethod:
    # the exchange (and what it imports) loads once a library is hooked
    from openprogram.http_boundary.exchange import captures, drive_async, exchange_flow

    def capture(session: object) -> _Middleware:
        async def middleware(request: _ClientRequest, handler: _Handler) -> _ClientResponse:
            __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
            boundary = ACTIVATIONS.current
            if boundary is None or not captures(session, _URLView(request.url), boundary, library):
                return await handler(request)
            view = _RequestView(request, session)
            flow = exchange_flow(boundary, library, view, asynchronous=True)

            async def send() -> _ResponseView:
                return _ResponseView(await handler(request), view)

            async def close(response: _ResponseView) -> None:
                response.close()

            answer = await drive_async(flow, send, view.aread, close)
            return answer.response

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


class _URLView:
    """An aiohttp URL as the boundary reads one: ``port`` as the URL names it."""

    __slots__ = ("_url",)

    def __init__(self, url: _YarlURL) -> None:
        self._url = url

    @property
    def host(self) -> str:
        return self._url.host or ""

    @property
    def port(self) -> int | None:
        return self._url.explicit_port

    @property
    def scheme(self) -> str:
        return self._url.scheme

    def __str__(self) -> str:
        return str(self._url)


class _HeadersView:
    """aiohttp's headers as the boundary reads them (lower-case names)."""

    __slots__ = ("_headers",)

    def __init__(self, headers: _MultiDict) -> None:
        self._headers = headers

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self._headers.get(key)
        return default if value is None else value

    def multi_items(self) -> list[tuple[str, str]]:
        return [(name.lower(), value) for name, value in self._headers.items()]


class _RequestView:
    """An aiohttp request as the exchange reads it; its body is read once, by ``aread``."""

    __slots__ = ("_content", "request", "session")

    def __init__(self, request: _ClientRequest, session: object) -> None:
        self.request = request
        self.session = session
        self._content = b""

    @property
    def method(self) -> str:
        return self.request.method

    @property
    def url(self) -> _URLView:
        return _URLView(self.request.url)

    @property
    def headers(self) -> _HeadersView:
        return _HeadersView(self.request.headers)

    @property
    def content(self) -> bytes:
        return self._content

    def read(self) -> bytes:
        return self._content

    async def aread(self) -> bytes:
        body = self.request.body
        if isinstance(body, bytes | bytearray):
            self._content = bytes(body)
        else:
            as_bytes = getattr(body, "as_bytes", None)
            self._content = b"" if as_bytes is None else await as_bytes()
        return self._content


class _NoBody:
    """The ``stream`` of a response view: the body is the aiohttp response's own."""

    def __iter__(self) -> Iterator[bytes]:
        return iter(())

    def close(self) -> None:
        pass


class _ResponseView:
    """An aiohttp response as the exchange reads it."""

    __slots__ = ("request", "response", "stream")

    def __init__(self, response: _ClientResponse, request: _RequestView) -> None:
        self.response = response
        self.request: HttpRequest = request
        self.stream: SyncByteStream | AsyncByteStream = _NoBody()

    @property
    def status_code(self) -> int:
        return self.response.status

    @property
    def headers(self) -> _HeadersView:
        return _HeadersView(self.response.headers)

    @property
    def is_stream_consumed(self) -> bool:
        return False

    @property
    def content(self) -> bytes:
        return b""

    def close(self) -> None:
        self.response.close()

    async def aclose(self) -> None:
        self.response.close()


class _AlreadyDecoded:
    """The content decoder of an aiohttp body: aiohttp's reader already holds it decoded."""

    def decode(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


class _NoFlowControl:
    """The protocol of a stream reader built here: nothing to pause."""

    connected = True

    def pause_reading(self) -> None:
        pass

    def resume_reading(self, resume_parser: bool = True) -> None:
        pass


class _SentWriter:
    """The stream writer of a replayed response: its request is sent, nothing was written."""

    output_size = 0


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
