"""Where a request to ``openprogram serve`` goes: its vendor, its session, and the upstream
URL it is forwarded to (and recorded under).

The vendors' paths overlap (``/v1/models`` and ``/v1/files`` exist at OpenAI and at
Anthropic), so each vendor has a path prefix of its own, and everything after the prefix is
the vendor's path, forwarded as it is::

    /openai/v1/chat/completions           → https://api.openai.com/v1/chat/completions
    /anthropic/v1/messages                → https://api.anthropic.com/v1/messages
    /anthropic/messages                   → https://api.anthropic.com/v1/messages (a client
                                            whose base URL holds the version: Vercel's AI SDK)
    /gemini/v1beta/models/m:generateContent?alt=sse
                                          → https://generativelanguage.googleapis.com/v1beta/…
    /v1/chat/completions                  → OpenAI's (no prefix: OPENAI_BASE_URL=…/v1 works)

A request of a session opened through the control API carries the session in its path
(``/__openprogram/s/<id>/openai/v1/…``); the rest is routed as above. Each vendor's upstream
is its public API unless the server was given another (``--upstream openai=URL``: a litellm
proxy, a local vLLM); an upstream may hold a path, which the vendor's path is appended to.

:data:`VENDORS` also says, for each vendor, which environment variables the clients read
their base URL from (``openprogram exec`` points them at the server) and how the vendor's
API writes an error body (the errors the server answers itself are written so, so that an
SDK shows their message as it shows the vendor's own)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from openprogram.vendors import VENDOR_WIRES
from openprogram.vendors.wire import ServedApi

__all__ = [
    "CONTROL_PREFIX",
    "SESSION_PREFIX",
    "VENDORS",
    "Route",
    "RouteError",
    "check_upstream",
    "parse_upstreams",
    "route_of",
    "vendor_named",
]

CONTROL_PREFIX = "/__openprogram"
"""The server's own API: sessions, health."""
SESSION_PREFIX = f"{CONTROL_PREFIX}/s/"
"""A session's requests: ``/__openprogram/s/<id>/<vendor>/…``."""


VENDORS: tuple[ServedApi, ...] = tuple(
    wire.served for wire in VENDOR_WIRES if wire.served is not None
)
"""The vendor APIs the server forwards, each under its prefix (their ``served`` facts)."""
_BY_NAME = {vendor.name: vendor for vendor in VENDORS}
_UNPREFIXED = "openai"
"""The vendor of a path under no prefix (``/v1/...``): OpenAI-compatible."""


def vendor_named(name: str) -> ServedApi:
    """The vendor called ``name``; ``KeyError`` for another name."""
    return _BY_NAME[name]


class RouteError(ValueError):
    """A path the server does not forward (``status``: what it answers)."""

    def __init__(self, message: str, status: int = 404) -> None:
        self.status = status
        super().__init__(message)


@dataclass(frozen=True)
class Route:
    """Where one request goes."""

    vendor: ServedApi
    path: str
    """The vendor's path, from its first ``/``, with the query: ``/v1/messages?beta=true``."""
    session: str | None = None
    """The control API's session it belongs to (its id), or None."""

    def upstream_url(self, upstreams: Mapping[str, str]) -> str:
        """The URL it is forwarded to: the vendor's upstream (``upstreams[vendor]``, else its
        public API), then its path."""
        base = upstreams.get(self.vendor.name, self.vendor.upstream)
        return base.rstrip("/") + self.path


def route_of(path: str, query: str = "") -> Route:
    """The route of a request for ``path`` (as it came, still percent-encoded) with ``query``
    (without its ``?``); :class:`RouteError` for a path under no vendor."""
    session = None
    if path.startswith(SESSION_PREFIX):
        session, slash, path = path[len(SESSION_PREFIX) :].partition("/")
        if not session or not slash:
            raise RouteError(f"{path!r} names no session: /__openprogram/s/<id>/<vendor>/…")
        path = "/" + path
    elif path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/"):
        raise RouteError(f"no such control path: {path}")
    first, _, rest = path.lstrip("/").partition("/")
    vendor = _BY_NAME.get(first)
    if vendor is not None:
        path = "/" + rest
        version = vendor.versioned
        if version and path != version and not path.startswith(version + "/"):
            path = version + path
    elif first == "v1":
        vendor = _BY_NAME[_UNPREFIXED]
    else:
        prefixes = ", ".join(f"/{v.name}/…" for v in VENDORS)
        raise RouteError(
            f"{path} is under no vendor's prefix: use {prefixes} (or /v1/… for OpenAI)"
        )
    return Route(vendor, path + (f"?{query}" if query else ""), session)


def check_upstream(url: str) -> str:
    """``url`` as an upstream (without a trailing ``/``); ``ValueError`` saying what is wrong
    with it."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    if parts.query or parts.fragment:
        raise ValueError(f"{url!r} holds a query or a fragment: give the origin and path only")
    return url.rstrip("/")


def parse_upstreams(items: Iterable[str]) -> dict[str, str]:
    """``--upstream`` values (``VENDOR=URL``, several in one value separated by spaces or
    commas) as a mapping; ``ValueError`` naming the item at fault."""
    upstreams: dict[str, str] = {}
    for item in (piece for value in items for piece in value.replace(",", " ").split()):
        name, equals, url = item.partition("=")
        if not equals or name not in _BY_NAME:
            known = ", ".join(_BY_NAME)
            raise ValueError(f"--upstream {item!r}: write VENDOR=URL, VENDOR one of {known}")
        try:
            upstreams[name] = check_upstream(url)
        except ValueError as error:
            raise ValueError(f"--upstream {name}: {error}") from None
    return upstreams
