"""The client libraries the HTTP boundary captures, each behind one typed seam.

    interface       ``ClientLibrary``, what the boundary needs of a client library (the
                    modules it hooks, a captured request as a ``CapturedRequest``, where it
                    connects, a response's head, a response and a recorded error built in
                    that library, its body teed), the protocols of the library objects it
                    touches, and what every adapter reads alike (``RequestView``,
                    ``HeaderList``, ``rebuilt_error``)
    raw_http        what ``http.client`` and urllib3 share on the wire: a request's URL and
                    whole body, a replayed response, the tee of a live one
    httpx_clients   httpx and httpx2, captured at their clients' ``_transport_for_url``
    urllib3_client  urllib3 (and so ``requests`` and botocore), captured at its connection
                    pools' ``_make_request``
    aiohttp_client  aiohttp, captured by an innermost client middleware that
                    ``ClientSession._request`` adds while a boundary is active
    http_client     Python's ``http.client`` (and so ``urllib.request``), captured at
                    ``HTTPConnection.request`` and ``getresponse`` (urllib3's connections
                    left to urllib3)

:data:`CLIENT_LIBRARIES` is the list the capture walks: another library is one module here
and one entry in it. Importing this package imports no client library: each is hooked once
the program has imported it."""

from __future__ import annotations

from typing import Any

from openprogram.http_boundary.clients.aiohttp_client import AiohttpLibrary
from openprogram.http_boundary.clients.http_client import HttpClientLibrary
from openprogram.http_boundary.clients.httpx_clients import HttpxLibrary
from openprogram.http_boundary.clients.interface import (
    AsyncByteStream,
    AsyncTransport,
    BodyRecorder,
    CapturedRequest,
    ClientLibrary,
    ContentDecoder,
    Destination,
    HttpHeaders,
    HttpRequest,
    HttpResponse,
    HttpTransport,
    HttpURL,
    SyncByteStream,
    SyncTransport,
)
from openprogram.http_boundary.clients.urllib3_client import Urllib3Library

__all__ = [
    "CLIENT_LIBRARIES",
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
    "SyncByteStream",
    "SyncTransport",
]

CLIENT_LIBRARIES: tuple[ClientLibrary[Any], ...] = (
    HttpxLibrary("httpx"),
    HttpxLibrary("httpx2"),
    Urllib3Library(),
    AiohttpLibrary(),
    HttpClientLibrary(),
)
"""The client libraries captured, each hooked once one of its modules is imported."""
