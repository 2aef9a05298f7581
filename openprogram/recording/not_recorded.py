"""The ``not_recorded`` row: the connections a recorded session opened that no boundary
captured, so that ``status`` and ``show`` can say what a replay of the recording will refuse.

The row holds ``connections``, a list of objects each with ``host`` (the address connected
to), ``port`` (a whole number, or null), ``library`` (the client library that connected, or
``raw socket``) and, when the program connected by name, ``name``. A recording may hold
several such rows (each block or process that recorded into it adds its own); the reader
gathers their connections, each host and port once, in the order first written. The row is
announced by the header feature :data:`NOT_RECORDED_FEATURE`. It is not a call: it takes no
part in the transcript hash, ``diff`` or replay."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "NOT_RECORDED_FEATURE",
    "connection_text",
    "gathered_connections",
    "not_recorded_problem",
    "not_recorded_row",
]

NOT_RECORDED_FEATURE = "not_recorded"
"""The header feature announcing ``not_recorded`` rows."""


def not_recorded_row(connections: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The row listing ``connections`` (objects with ``host``, ``port``, ``library`` and,
    when it differs from the host, ``name``)."""
    return {"type": "not_recorded", "connections": list(connections)}


def not_recorded_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a ``not_recorded`` row, as a phrase; None when nothing is."""
    connections = row.get("connections")
    if not isinstance(connections, list):
        return f"not_recorded connections must be a list, found {connections!r}"
    for position, entry in enumerate(connections):
        where = f"not_recorded connections[{position}]"
        if not isinstance(entry, dict):
            return f"{where} must be an object, found {entry!r}"
        if not isinstance(entry.get("host"), str) or not entry["host"]:
            return f"{where}.host must be a non-empty string, found {entry.get('host')!r}"
        port = entry.get("port")
        if port is not None and (type(port) is not int or not 0 <= port <= 65535):
            return f"{where}.port must be a port number or null, found {port!r}"
        if not isinstance(entry.get("library"), str):
            return f"{where}.library must be a string, found {entry.get('library')!r}"
        name = entry.get("name")
        if name is not None and not isinstance(name, str):
            return f"{where}.name must be a string or null, found {name!r}"
    return None


def gathered_connections(known: list[dict[str, Any]], row: dict[str, Any]) -> list[dict[str, Any]]:
    """``known`` with the connections of ``row`` (checked) it lacks, by host and port."""
    seen = {(entry["host"], entry.get("port")) for entry in known}
    for entry in row["connections"]:
        key = (entry["host"], entry.get("port"))
        if key not in seen:
            seen.add(key)
            known.append(entry)
    return known


def connection_text(entry: dict[str, Any]) -> str:
    """``api.example.com (192.0.2.1):443 (urllib3)``, or ``127.0.0.1:9 (raw socket)``."""
    host, name = entry["host"], entry.get("name")
    named = f"{name} ({host})" if name and name != host else host
    return f"{named}:{entry.get('port')} ({entry['library']})"
