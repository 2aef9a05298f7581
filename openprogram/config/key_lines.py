"""Find the line where a dotted key is written in TOML text, so a problem can name it.

A line scanner, not a parser: it follows ``[table]`` and ``[[array]]`` headers and dotted
keys, and steps over multi-line strings. Keys inside an inline table resolve to the line of
the table's key. Good enough for messages; ``None`` when the key is not found.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence

_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\]|\\.)*"|'[^']*')"""
_KEY = rf"{_PART}(?:[ \t]*\.[ \t]*{_PART})*"
_HEADER = re.compile(rf"^[ \t]*(\[\[?)[ \t]*(?P<key>{_KEY})[ \t]*\]")
_ASSIGNMENT = re.compile(rf"^[ \t]*(?P<key>{_KEY})[ \t]*=[ \t]*(?P<value>.*)$")
_PARTS = re.compile(_PART)
_MULTILINE_QUOTES = ('"""', "'''")


def find_key_line(text: str, location: Sequence[str | int]) -> int | None:
    """The 1-based line of the key at ``location`` (list indexes ignored), or of the nearest
    enclosing key or table written in the text; ``None`` when none is."""
    wanted = tuple(part for part in location if isinstance(part, str))
    lines = key_lines(text)
    for length in range(len(wanted), 0, -1):
        line = lines.get(wanted[:length])
        if line is not None:
            return line
    return None


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Every key path written in ``text`` (tables and keys) → the first line it appears on."""
    found: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    closing: str | None = None  # the quotes that end the multi-line string we are inside
    for number, line in enumerate(text.splitlines(), start=1):
        if closing is not None:
            if closing in line:
                closing = None
            continue
        header = _HEADER.match(line)
        if header is not None:
            table = _split_key(header["key"])
            found.setdefault(table, number)
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment is None:
            continue
        path = table + _split_key(assignment["key"])
        for length in range(len(table) + 1, len(path) + 1):  # dotted keys define their parents
            found.setdefault(path[:length], number)
        closing = _opens_multiline(assignment["value"])
    return found


def _split_key(key: str) -> tuple[str, ...]:
    return tuple(_unquote(part) for part in _PARTS.findall(key))


def _unquote(part: str) -> str:
    if part[0] == "'":
        return part[1:-1]
    if part[0] == '"':
        try:
            return str(tomllib.loads(f"k = {part}")["k"])
        except tomllib.TOMLDecodeError:
            return part[1:-1]
    return part


def _opens_multiline(value: str) -> str | None:
    for quotes in _MULTILINE_QUOTES:
        if value.startswith(quotes) and quotes not in value[3:]:
            return quotes
    return None
