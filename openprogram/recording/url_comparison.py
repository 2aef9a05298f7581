"""How an HTTP call's URL is compared: by replay, by the transcript hash and by ``diff``.

**A loopback server's port is left out.** A model server on this machine (Ollama, vLLM, a
litellm proxy) listens on whatever port it was started on; restarted on another one, the
same session makes the same calls. So the port of a URL whose host is a loopback address
(``127.0.0.0/8``, ``::1``) or ``localhost`` (and any ``*.localhost`` name) is not compared:
``http://127.0.0.1:8000/v1/chat/completions`` and ``http://127.0.0.1:9999/v1/chat/completions``
are one URL (:func:`without_loopback_port`). The host itself is compared (``localhost`` and
``127.0.0.1`` differ), and so is every other host's port. Replay compares a loopback port too
under the setting ``record_replay.compare_loopback_ports`` (``record_replay(...,
compare_loopback_ports=True)``, ``@pytest.mark.openprogram(compare_loopback_ports=True)``);
the transcript hash and ``recordings diff`` never do, so two recordings of one session made
against a server on two ports hash the same.

**By parts.** An ``ignore_fields`` entry naming a part of the URL — ``url.scheme``,
``url.userinfo``, ``url.host``, ``url.port``, ``url.path``, ``url.query`` (the whole query),
``url.query.<name>`` (one parameter; ``url.query["a name"]`` for a name that is not plain, and
``url.query.*`` for every one), ``url.fragment`` — makes replay compare the URL as those parts
(:func:`url_parts`): ``{"scheme": "https", "host": "models.example.com", "port": 8443,
"path": "/v1/chat/completions", "query": {"key": "…"}}``, a query parameter given several times
as the list of its values, the host in lower case, an absent part as null (the query as
``{}``), a loopback host's port as null unless ports are compared. A difference is then
reported at the part (``field url.port``). An entry naming no part (``url.hostname``) is
refused by :func:`check_http_ignore_fields`, with a one-line ``ValueError`` naming the
setting. ``url`` alone still leaves the whole URL out.

**Header names** in ``headers.<name>`` entries are matched in lower case, as the request's
headers are stored (:func:`http_ignore_fields`)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "DEFAULT_URL_COMPARISON",
    "URL_PARTS",
    "UrlComparison",
    "check_http_ignore_fields",
    "http_ignore_fields",
    "is_loopback_host",
    "url_comparison",
    "url_parts",
    "without_loopback_port",
]

URL_PARTS: Final = ("scheme", "userinfo", "host", "port", "path", "query", "fragment")
"""The parts of a URL an ``ignore_fields`` entry may name (``url.<part>``)."""

_WITH_PORT: Final = re.compile(
    r"(?P<start>[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/?#]*@)?)"
    r"(?P<host>\[[^\]/?#]*\]|[^:/?#\[\]]*)"
    r":(?P<port>[0-9]*)"
    r"(?P<rest>[/?#].*)?",
    re.DOTALL,
)
_URL_ENTRY: Final = re.compile(r"url\.(?P<part>[^.\[]*)(?P<rest>.*)", re.DOTALL)
_QUERY_PARAMETER: Final = re.compile(r"\.(?:[A-Za-z0-9_-]+|\*)|\[\"(?:[^\"\\]|\\.)*\"\]", re.DOTALL)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this
    machine's loopback: ``127.0.0.0/8``, ``::1``, ``localhost`` or a ``*.localhost`` name."""
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@lru_cache(maxsize=1024)
def without_loopback_port(url: str) -> str:
    """``url`` without its port when its host is a loopback one (``http://127.0.0.1/v1``
    for ``http://127.0.0.1:8000/v1``); any other URL as it is. Cached: a replay compares
    the same few URLs over and over."""
    found = _WITH_PORT.fullmatch(url)
    if found is None or not is_loopback_host(found["host"]):
        return url
    return found["start"] + found["host"] + (found["rest"] or "")


def url_parts(url: str, *, loopback_port: bool = False) -> dict[str, Any]:
    """``url`` as the parts replay compares when an ``ignore_fields`` entry names one (see
    the module's docstring); ``loopback_port``: keep the port of a loopback host."""
    split = urlsplit(url)
    netloc = split.netloc
    userinfo, at, _ = netloc.rpartition("@")
    try:
        port: Any = split.port
    except ValueError:  # not a number: compared as written
        port = netloc.rpartition(":")[2]
    host = split.hostname
    if host is not None and not loopback_port and is_loopback_host(host):
        port = None
    query: dict[str, Any] = {}
    for name, value in parse_qsl(split.query, keep_blank_values=True):
        held = query.get(name)
        if held is None:
            query[name] = value
        elif isinstance(held, list):
            held.append(value)
        else:
            query[name] = [held, value]
    return {
        "scheme": split.scheme or None,
        "userinfo": userinfo if at else None,
        "host": host,
        "port": port,
        "path": split.path or None,
        "query": query,
        "fragment": split.fragment or None,
    }


@dataclass(frozen=True, slots=True)
class UrlComparison:
    """How an HTTP request's ``url`` is compared: as its parts (``by_parts``) or as one
    string, a loopback host's port left out unless ``loopback_ports``."""

    by_parts: bool = False
    loopback_ports: bool = False

    def form(self, url: Any) -> Any:
        """``url`` as the comparison sees it (anything but a string as it is)."""
        if type(url) is not str:
            return url
        if self.by_parts:
            return url_parts(url, loopback_port=self.loopback_ports)
        return url if self.loopback_ports else without_loopback_port(url)


DEFAULT_URL_COMPARISON: Final = UrlComparison()
"""The URL compared as one string, a loopback host's port left out: the transcript hash's
and ``diff``'s rule, and replay's by default."""


def url_comparison(
    ignore_fields: Iterable[str], *, compare_loopback_ports: bool = False
) -> UrlComparison:
    """How replay compares the URL, leaving out ``ignore_fields`` (checked by
    :func:`check_http_ignore_fields`): by parts when an entry names one."""
    by_parts = any(_url_part_entry(entry) for entry in ignore_fields)
    if not by_parts and not compare_loopback_ports:
        return DEFAULT_URL_COMPARISON
    return UrlComparison(by_parts=by_parts, loopback_ports=compare_loopback_ports)


def http_ignore_fields(ignore_fields: Iterable[str]) -> frozenset[str]:
    """``ignore_fields`` as an HTTP request is compared with them: the name in a
    ``headers.<name>`` entry in lower case, as the headers are stored."""
    return frozenset(
        "headers." + entry.removeprefix("headers.").lower()
        if entry.startswith("headers.")
        else entry
        for entry in ignore_fields
    )


def check_http_ignore_fields(ignore_fields: Iterable[str], setting: str | None = None) -> None:
    """Raise ``ValueError`` (one line, starting with ``setting`` when given: the caller may
    name it itself) for an entry starting with ``url.`` that names no part of a URL (see the
    module's docstring)."""
    for entry in ignore_fields:
        if not _url_part_entry(entry):
            continue
        found = _URL_ENTRY.fullmatch(entry)
        part, rest = ("", "") if found is None else (found["part"], found["rest"])
        if part not in (*URL_PARTS, "*") or (rest and not _is_query_parameter(part, rest)):
            where = "" if setting is None else f"{setting}: "
            raise ValueError(
                f"{where}{entry!r} names no part of an HTTP call's URL: write url, "
                f"{', '.join(f'url.{name}' for name in URL_PARTS)} or url.query.<name>"
            )


def _url_part_entry(entry: str) -> bool:
    return entry.startswith("url.")


def _is_query_parameter(part: str, rest: str) -> bool:
    """Whether ``rest`` (after ``url.<part>``) names one query parameter: ``.name``,
    ``.*`` or ``["a name"]``."""
    return part == "query" and _QUERY_PARAMETER.fullmatch(rest) is not None
