"""Client libraries stacked as programs stack them, each layer a library the HTTP boundary
captures: a transport of httpx or httpx2 that sends through aiohttp (the shape of
``httpx-aiohttp``, the SDKs' ``DefaultAioHttpClient`` and litellm's default async transport),
through a client of httpx or httpx2, or through ``requests`` — in the calling thread, or
handed to a worker thread that carries the context; a urllib3 connection that relays each
request through a second urllib3 pool, or sends it with a plain ``http.client`` connection.

Each layer hands the bytes on as they came (no content decoding), so the outer client reads
the response as it would read its own.
"""

from __future__ import annotations

import http.client
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from types import ModuleType
from typing import Any

import aiohttp
import requests
import urllib3

Handoff = Callable[..., Awaitable[Any]]
"""How an async transport runs a function in a worker thread (``asyncio.to_thread``, …)."""


def aiohttp_transport(outer: ModuleType) -> Any:
    """An async transport of ``outer`` (httpx or httpx2) that sends each request with an
    aiohttp ``ClientSession``."""

    class Body(outer.AsyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, response: aiohttp.ClientResponse) -> None:
            self._response = response

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._response.content.iter_any():
                yield chunk

        async def aclose(self) -> None:
            self._response.release()

    class AiohttpTransport(outer.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self._session: aiohttp.ClientSession | None = None

        async def handle_async_request(self, request: Any) -> Any:
            if self._session is None:
                self._session = aiohttp.ClientSession()
            response = await self._session.request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                data=await request.aread(),
                allow_redirects=False,
                auto_decompress=False,
            )
            headers = list(response.headers.items())
            return outer.Response(
                response.status, headers=headers, stream=Body(response), request=request
            )

        async def aclose(self) -> None:
            if self._session is not None:
                await self._session.close()

    return AiohttpTransport()


def client_transport(outer: ModuleType, inner: ModuleType, *, asynchronous: bool) -> Any:
    """A transport of ``outer`` that sends each request with a client of ``inner`` (httpx
    or httpx2 each): sync, or async with ``asynchronous``."""
    if asynchronous:

        class AsyncBody(outer.AsyncByteStream):  # type: ignore[name-defined,misc]
            def __init__(self, response: Any) -> None:
                self._response = response

            async def __aiter__(self) -> AsyncIterator[bytes]:
                async for chunk in self._response.aiter_raw():
                    yield chunk

            async def aclose(self) -> None:
                await self._response.aclose()

        class AsyncClientTransport(outer.AsyncBaseTransport):  # type: ignore[name-defined,misc]
            def __init__(self) -> None:
                self.client = inner.AsyncClient()

            async def handle_async_request(self, request: Any) -> Any:
                sent = self.client.build_request(
                    request.method,
                    str(request.url),
                    headers=request.headers.multi_items(),
                    content=await request.aread(),
                )
                response = await self.client.send(sent, stream=True)
                headers = response.headers.multi_items()
                return outer.Response(
                    response.status_code, headers=headers, stream=AsyncBody(response)
                )

            async def aclose(self) -> None:
                await self.client.aclose()

        return AsyncClientTransport()

    class SyncBody(outer.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, response: Any) -> None:
            self._response = response

        def __iter__(self) -> Iterator[bytes]:
            yield from self._response.iter_raw()

        def close(self) -> None:
            self._response.close()

    class ClientTransport(outer.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self.client = inner.Client()

        def handle_request(self, request: Any) -> Any:
            sent = self.client.build_request(
                request.method,
                str(request.url),
                headers=request.headers.multi_items(),
                content=request.read(),
            )
            response = self.client.send(sent, stream=True)
            headers = response.headers.multi_items()
            return outer.Response(response.status_code, headers=headers, stream=SyncBody(response))

        def close(self) -> None:
            self.client.close()

    return ClientTransport()


def requests_transport(outer: ModuleType) -> Any:
    """A sync transport of ``outer`` that sends each request with a ``requests.Session``."""

    class RawBody(outer.SyncByteStream):  # type: ignore[name-defined,misc]
        def __init__(self, response: requests.Response) -> None:
            self._response = response

        def __iter__(self) -> Iterator[bytes]:
            yield from self._response.raw.stream(decode_content=False)

        def close(self) -> None:
            self._response.close()

    class RequestsTransport(outer.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self) -> None:
            self.session = requests.Session()

        def handle_request(self, request: Any) -> Any:
            response = self.session.request(
                request.method,
                str(request.url),
                headers=dict(request.headers),
                data=request.read(),
                stream=True,
                allow_redirects=False,
                timeout=10,
            )
            headers = list(response.raw.headers.items())
            return outer.Response(response.status_code, headers=headers, stream=RawBody(response))

        def close(self) -> None:
            self.session.close()

    return RequestsTransport()


def threaded_requests_transport(outer: ModuleType, handoff: Handoff) -> Any:
    """An async transport of ``outer`` that hands each request to a worker thread with
    ``handoff``, where ``requests`` sends it and reads its body."""
    threaded = requests_transport(outer)

    def send(request: Any) -> tuple[int, list[tuple[str, str]], bytes]:
        response = threaded.handle_request(request)
        try:
            return response.status_code, response.headers.multi_items(), response.read()
        finally:
            response.close()

    class ThreadedTransport(outer.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        async def handle_async_request(self, request: Any) -> Any:
            content = await request.aread()
            sent = outer.Request(
                request.method, request.url, headers=request.headers, content=content
            )
            status, headers, body = await handoff(send, sent)
            return outer.Response(status, headers=headers, stream=outer.ByteStream(body))

        async def aclose(self) -> None:
            threaded.close()

    return ThreadedTransport()


class RelayConnection(urllib3.connection.HTTPConnection):
    """A urllib3 connection that sends each request through a second urllib3 pool to the same
    host (as an adapter relaying through a pool of its own does) and returns that pool's
    response, its body unread and undecoded."""

    def request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        **options: Any,
    ) -> None:
        self._relay = urllib3.HTTPConnectionPool(self.host, self.port)
        self._relayed = self._relay.urlopen(
            method,
            url,
            body=body,
            headers=headers,
            preload_content=False,
            decode_content=False,
            retries=False,
            redirect=False,
        )

    def getresponse(self) -> Any:  # type: ignore[override]
        return self._relayed

    def close(self) -> None:
        relay = getattr(self, "_relay", None)
        if relay is not None:
            relay.close()
        super().close()


class HttpClientConnection(urllib3.connection.HTTPConnection):
    """A urllib3 connection that sends each request with a plain ``http.client`` connection of
    its own, and reads its response as urllib3 reads one of its own connections'."""

    def request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: Any = None,
        *,
        preload_content: bool = True,
        decode_content: bool = True,
        enforce_content_length: bool = True,
        **options: Any,
    ) -> None:
        self._inner = http.client.HTTPConnection(self.host, self.port, timeout=10)
        self._inner.request(method, url, body=body, headers=dict(headers or {}))
        self._options = (method, url, preload_content, decode_content, enforce_content_length)

    def getresponse(self) -> Any:  # type: ignore[override]
        method, url, preload_content, decode_content, enforce_content_length = self._options
        raw = self._inner.getresponse()
        return urllib3.response.HTTPResponse(
            body=raw,
            headers=urllib3.HTTPHeaderDict(raw.getheaders()),
            status=raw.status,
            version=raw.version,
            version_string="HTTP/1.1",
            reason=raw.reason,
            preload_content=preload_content,
            decode_content=decode_content,
            original_response=raw,
            enforce_content_length=enforce_content_length,
            request_method=method,
            request_url=url,
        )

    def close(self) -> None:
        inner = getattr(self, "_inner", None)
        if inner is not None:
            inner.close()
        super().close()


def requests_over(connection: type[urllib3.connection.HTTPConnection]) -> requests.Session:
    """A ``requests.Session`` whose plain-HTTP pools make connections of class
    ``connection``."""
    session = requests.Session()
    adapter = requests.adapters.HTTPAdapter()

    class Pool(urllib3.HTTPConnectionPool):
        ConnectionCls = connection

    adapter.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": Pool}
    adapter.poolmanager.key_fn_by_scheme = dict(adapter.poolmanager.key_fn_by_scheme)
    session.mount("http://", adapter)
    return session
