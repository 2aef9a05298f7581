"""What crosses the server between a client and its upstream: the request's headers on the
way up, the response's on the way back, and the connections to each upstream.

The request reaches the upstream as the client sent it, but for what belongs to the hop between the
client and the server: ``host`` (the upstream's own is set), the framing and connection headers, and
the server's own ``x-openprogram-*`` headers. A client's ``accept-encoding`` is narrowed to the
encodings the recorder can decode (gzip, deflate), so that the recording holds the body the client
read; the upstream's bytes are passed on as they came, encoded or not. The response reaches the
client with the upstream's headers, but for the connection's own.

The upstream's connections are made directly, or through the proxy the environment names for its
scheme (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``), as a client on this machine would."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import httpx

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["OWN_HEADER_PREFIX", "Upstreams", "client_headers", "upstream_headers"]

OWN_HEADER_PREFIX = "x-openprogram-"
"""The server's own request headers (``x-openprogram-recording``): never forwarded."""

HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
"""Headers of one connection, not of the request or response (RFC 9110, 7.6.1)."""
_NOT_FORWARDED = HOP_HEADERS | {"host", "content-length", "expect"}
_DECODABLE = frozenset({"gzip", "deflate", "identity"})
"""The content encodings the recorder stores decoded (httpx's own decoders, always there)."""


def upstream_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a request is forwarded with: the client's, without the hop's own and the
    server's own, ``accept-encoding`` narrowed to what the recorder decodes."""
    connection_named: set[str] = set()
    items = list(headers)
    for name, value in items:
        if name.lower() == "connection":
            connection_named.update(token.strip().lower() for token in value.split(","))
    forwarded: list[tuple[str, str]] = []
    for name, value in items:
        lower = name.lower()
        if lower in _NOT_FORWARDED or lower in connection_named:
            continue
        if lower.startswith(OWN_HEADER_PREFIX):
            continue
        if lower == "accept-encoding":
            value = _decodable(value)
        forwarded.append((lower, value))
    return forwarded


def _decodable(accept_encoding: str) -> str:
    """``accept-encoding`` with only the encodings the recorder decodes (``identity`` when
    none of them is left)."""
    kept = [
        token.strip()
        for token in accept_encoding.split(",")
        if token.split(";")[0].strip().lower() in _DECODABLE
    ]
    return ", ".join(kept) if kept else "identity"


def client_headers(headers: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers a response reaches the client with: the upstream's (or the recorded
    ones), without the connection's own."""
    return [(name, value) for name, value in headers if name.lower() not in HOP_HEADERS]


class Upstreams:
    """The upstream URL of each vendor, and one pool of connections per proxy used (direct
    ones in one pool)."""

    def __init__(self, urls: Mapping[str, str], *, read_timeout: float) -> None:
        self.urls = dict(urls)
        self.timeout = httpx.Timeout(read_timeout, connect=30.0)
        self._transports: dict[str | None, httpx.AsyncHTTPTransport] = {}
        self._proxies = urllib.request.getproxies()

    def transport_for(self, url: str) -> httpx.AsyncHTTPTransport:
        """The transport that connects to ``url``'s host (through the environment's proxy
        for it, if any)."""
        parts = urlsplit(url)
        proxy = self._proxies.get(parts.scheme)
        if proxy is not None and urllib.request.proxy_bypass(parts.hostname or ""):
            proxy = None
        transport = self._transports.get(proxy)
        if transport is None:
            limits = httpx.Limits(max_connections=None, max_keepalive_connections=64)
            transport = httpx.AsyncHTTPTransport(limits=limits, proxy=proxy)
            self._transports[proxy] = transport
        return transport

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()
        self._transports.clear()
