"""Host lists: the one syntax of ``allowed_hosts``, ``http_passthrough_hosts`` and
``model_hosts``, and whether a list names a host.

An entry is ``host`` (any port) or ``host:port``: a host name, an IPv4 address or a
bracketed IPv6 address (``[::1]``, ``[::1]:8080``), with no scheme and no path. The
configuration checks each entry with :func:`check_host_entry` and keeps it lower-cased,
an IPv6 address without its brackets; :func:`normalized_hosts` makes any list of entries
into the set :func:`is_allowed` compares with, case-insensitively, brackets or not.

Imports nothing of openprogram: the socket guard, the configuration and the model-traffic
rule all read host lists through it."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["check_host_entry", "is_allowed", "normalized_hosts"]

_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
)
"""A host name, an IPv4 address or a bracketed IPv6 address, and an optional port."""


def check_host_entry(entry: str) -> str:
    """``entry`` as the configuration keeps it (lower case, an IPv6 address without
    brackets); raises ``ValueError`` saying how to write one when it is not a host."""
    if not _HOST.fullmatch(entry):
        raise ValueError(
            f"{entry!r} is not a host: write a host name or address, with a port if "
            'it matters, like "telemetry.example.com" or "localhost:4318" (no scheme, '
            "no path)"
        )
    return entry.lower().replace("[", "").replace("]", "")


def normalized_hosts(hosts: Iterable[str]) -> frozenset[str]:
    """Host-list entries as :func:`is_allowed` compares them: lower case, and a bracketed
    IPv6 address without a port (``[::1]``) without its brackets, as a host is given."""
    found = set()
    for entry in hosts:
        host = entry.strip().lower() if entry else ""
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if host:
            found.add(host)
    return frozenset(found)


def is_allowed(
    allowed: frozenset[str], host: str, port: int | None, name: str | None = None
) -> bool:
    """Whether ``allowed`` (``host`` or ``host:port`` entries, lower-case) names a
    connection to ``host`` on ``port``, ``host`` having been resolved from ``name``."""
    for candidate in (host, name):
        if not candidate:
            continue
        lowered = candidate.lower()
        bare = lowered.strip("[]")
        if lowered in allowed or bare in allowed:
            return True
        if port is not None and (f"{bare}:{port}" in allowed or f"[{bare}]:{port}" in allowed):
            return True
    return False
