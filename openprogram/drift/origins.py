"""Where drift sends a recorded call, and whether its vendor's credentials may go there.

A recording is outside input: a pull request, an imported cassette or a hand edit can point
its URLs anywhere. So drift sends a call only to an origin (scheme, host and port) trusted
for the call's vendor, and a vendor's key — or a ``--header`` value — goes only with such a
call. Trusted for a vendor are:

* its official API, over https on the default port (:func:`is_official`):
  ``https://api.openai.com``, ``https://api.anthropic.com``,
  ``https://generativelanguage.googleapis.com`` (and Vertex AI's
  ``https://[REGION-]aiplatform.googleapis.com``), and Bedrock's runtime,
  ``https://bedrock-runtime[-fips].REGION.amazonaws.com``;
* ``VENDOR=ORIGIN`` (``recordings drift --base-url``, the pytest option
  ``--openprogram-drift-base-url``): ORIGIN is the vendor's API, as an SDK's base URL makes
  it — the vendor's calls recorded to its official API, or to ORIGIN itself, are sent to
  ORIGIN (one ORIGIN per vendor);
* ``HOST=ORIGIN`` (HOST a recorded host, any port, or ``host:port``): the calls recorded to
  HOST are sent to ORIGIN, each with its own vendor's credentials and the ``--header``
  values — naming it vouches for ORIGIN with all of them (``api.example.com=https://api.
  example.com`` trusts a host as it is). A host's entry comes before a vendor's;
* the configuration's ``providers.<api>.base_url``: its origin is trusted for the api's
  vendor (``openai-completions``: openai, ``anthropic-messages``: anthropic), and the calls
  recorded to it are sent there; it moves no other call.

A call to any other origin is not sent — no connection is opened, with a key or without —
and is skipped for a reason that names its origin and the option that would trust it
(``http://127.0.0.2:8080 is not openai's API; pass --base-url openai=http://127.0.0.2:8080 to
trust it``). Loopback is no exception: other users, containers and browser pages reach it.
The URL sent is rebuilt from the trusted origin and the recorded path and query, so the
origin checked is the one connected to.

Each vendor's name and official hosts are its :class:`~openprogram.vendors.wire.Wire`'s,
read when first needed: the pytest plugin parses its option with this module at start-up, and
imports nothing else of openprogram then."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    from openprogram.config.models import Settings

__all__ = [
    "BaseUrlError",
    "BaseUrls",
    "UntrustedOrigin",
    "configured_base_urls",
    "is_official",
    "origin_of",
    "parse_base_urls",
    "vendor_names",
]


@functools.cache
def vendor_names() -> tuple[str, ...]:
    """The vendors drift knows the credentials of."""
    return tuple(_official_hosts())


@functools.cache
def _official_hosts() -> dict[str, re.Pattern[str]]:
    """Each vendor's official API hosts, served over https on the default port."""
    from openprogram.vendors import VENDOR_WIRES

    return {wire.vendor: re.compile(wire.official_hosts) for wire in VENDOR_WIRES}


_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_HOST: Final = re.compile(r"[a-z0-9_.-]+|[0-9a-f:.]+")
"""A host drift sends to: a name or an IPv4 address, or an IPv6 address (no zone)."""
_FORMS: Final = "VENDOR=ORIGIN or HOST=ORIGIN"


class BaseUrlError(ValueError):
    """A base-URL option's value that cannot be used; the message is one line naming it."""


class UntrustedOrigin(Exception):
    """A recorded call to an origin not trusted for its vendor: it is not sent, and the
    message says why and what would trust it."""


@dataclass(frozen=True)
class BaseUrls:
    """The origins the user named, and where each recorded call is sent (:meth:`destination`)."""

    vendors: Mapping[str, str] = field(default_factory=dict)
    """``VENDOR=ORIGIN``: vendor → origin."""
    hosts: Mapping[tuple[str, int | None], str] = field(default_factory=dict)
    """``HOST=ORIGIN``: (host, port or None for any) → origin."""
    configured: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The configuration's ``providers.<api>.base_url`` origins, by vendor."""
    option: str = "--base-url"
    """The option that names an origin, as a skipped call's reason gives it."""

    def destination(self, url: str, vendor: str | None) -> str:
        """The URL to send a call recorded to ``url`` (made to ``vendor``'s API, if known)
        to; raises :class:`UntrustedOrigin` when its origin is not trusted for the vendor."""
        parts = _split(url)
        origin = origin_of(url)
        if parts is None or origin is None:
            raise UntrustedOrigin(f"its URL names no origin drift sends to ({url[:80]!r})")
        host = str(parts.hostname)
        port = parts.port or _DEFAULT_PORTS[parts.scheme.lower()]
        target = self.hosts.get((host, port)) or self.hosts.get((host, None))
        if target is None and vendor is not None:
            given = self.vendors.get(vendor)
            if given is not None and (origin == given or is_official(vendor, origin)):
                target = given
            elif origin in self.configured.get(vendor, ()) or is_official(vendor, origin):
                target = origin
        if target is None:
            raise UntrustedOrigin(self._untrusted(origin, vendor))
        query = f"?{parts.query}" if parts.query else ""
        return f"{target}{parts.path}{query}"

    def _untrusted(self, origin: str, vendor: str | None) -> str:
        host = origin.partition("://")[2]
        if vendor is None:
            return (
                f"{origin} is not the API of a vendor drift knows; pass {self.option} "
                f"{host}={origin} to trust it"
            )
        # one origin per vendor: with the vendor's taken, the host's form trusts another
        key = host if vendor in self.vendors else vendor
        return f"{origin} is not {vendor}'s API; pass {self.option} {key}={origin} to trust it"


def is_official(vendor: str, origin: str) -> bool:
    """Whether ``origin`` (as :func:`origin_of` writes it) is ``vendor``'s official API."""
    official = _official_hosts().get(vendor)
    scheme, _, host = origin.partition("://")
    return official is not None and scheme == "https" and official.fullmatch(host) is not None


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` of ``url`` — lower case, the default port left out, an IPv6
    address in brackets — or None for a URL that names no http(s) origin."""
    parts = _split(url)
    if parts is None:
        return None
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in _DEFAULT_PORTS or not host or not _HOST.fullmatch(host):
        return None
    shown = f"[{host}]" if ":" in host else host
    port = parts.port
    if port is None or port == _DEFAULT_PORTS[scheme]:
        return f"{scheme}://{shown}"
    return f"{scheme}://{shown}:{port}"


def _split(url: str) -> SplitResult | None:
    try:
        parts = urlsplit(url)
        _ = parts.port  # a port out of range raises here
    except ValueError:
        return None
    return parts


def parse_base_urls(
    values: Iterable[str],
    *,
    option: str = "--base-url",
    configured: Mapping[str, frozenset[str]] | None = None,
) -> BaseUrls:
    """The :class:`BaseUrls` of ``option``'s values (``VENDOR=ORIGIN`` or ``HOST=ORIGIN``);
    raises :class:`BaseUrlError` for one that cannot be used."""
    vendors: dict[str, str] = {}
    hosts: dict[tuple[str, int | None], str] = {}
    for text in values:
        key, equals, value = (part.strip() for part in text.partition("="))
        key = key.lower()
        if not equals or not key:
            raise BaseUrlError(f"{option} takes {_FORMS}, found {text!r}")
        origin = _given_origin(value)
        if origin is None:
            raise BaseUrlError(
                f"{option} {key}= takes an origin (scheme://host[:port], no path), found {value!r}"
            )
        if key in vendor_names():
            if vendors.setdefault(key, origin) != origin:
                raise BaseUrlError(
                    f"{option} {key}= is given two origins, {vendors[key]} and {origin}: name "
                    f"one, and trust another by its host ({option} HOST=ORIGIN)"
                )
            continue
        host = _host_key(key)
        if host is None:
            raise BaseUrlError(
                f"{option} takes {_FORMS} (VENDOR one of {', '.join(vendor_names())}; HOST a host "
                f"or host:port), found {text!r}"
            )
        if hosts.setdefault(host, origin) != origin:
            raise BaseUrlError(f"{option} {key}= is given two origins, {hosts[host]} and {origin}")
    return BaseUrls(vendors, hosts, dict(configured or {}), option)


def _given_origin(text: str) -> str | None:
    parts = _split(text)
    if parts is None or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    if parts.username is not None or parts.password is not None:
        return None
    return origin_of(text)


def _host_key(text: str) -> tuple[str, int | None] | None:
    """``host`` or ``host:port`` as (host, port or None); None when it is neither."""
    if any(mark in text for mark in "/?#@\\") or any(c.isspace() for c in text):
        return None
    parts = _split(f"http://{text}")
    if parts is None or not parts.hostname or not _HOST.fullmatch(parts.hostname):
        return None
    return parts.hostname, parts.port


def configured_base_urls(settings: Settings) -> dict[str, frozenset[str]]:
    """The origins of the configuration's ``providers.<api>.base_url``, by the api's vendor
    (an api openprogram does not ship is its own vendor)."""
    # loaded here, not at the top: the pytest plugin imports this module at every start-up
    from openprogram.providers.builtins import VENDOR_OF_API

    origins: dict[str, set[str]] = {}
    for api, provider in settings.providers.items():
        origin = origin_of(provider.base_url or "")
        if origin is not None:
            origins.setdefault(VENDOR_OF_API.get(api, api), set()).add(origin)
    return {vendor: frozenset(found) for vendor, found in origins.items()}
