"""The one-line wording of what is wrong with a configuration, for the ``ConfigError`` of
:mod:`openprogram.errors`.

A problem is said where the user can fix it: a file, line and dotted key (``/x/config.toml, line 3:
record_replay.mode: …``), or an environment variable (``OPENPROGRAM_RECORD_REPLAY__MODE=bogus: …``).
Values of ``api_key_env`` are never repeated, in case someone put a key there.

The line a dotted key is written on is found in the TOML text by a line scanner, not a
parser (:func:`key_line`): it follows ``[table]`` and ``[[array]]`` headers and dotted
keys, and steps over multi-line strings. Keys inside an inline table resolve to the line of
the table's key. Good enough for messages; ``None`` when the key is not found."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

    from openprogram.config.models import Mode


SECRET_KEYS = frozenset({"api_key_env"})

TABLE_TYPES = frozenset({"model_type", "dict_type", "model_attributes_type"})

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")

_TOML_POSITION = re.compile(r"\s*\((?:at line (\d+), column (\d+)|at end of document)\)$")


def dotted_key(location: Sequence[str | int]) -> str:
    """``("providers", "a.b", "timeout")`` → ``providers."a.b".timeout``; list indexes drop out."""
    parts = [part for part in location if isinstance(part, str)]
    return ".".join(part if _BARE_KEY.fullmatch(part) else _quoted(part) for part in parts)


def _quoted(part: str) -> str:
    escaped = part.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def is_secret_key(location: Sequence[str | int]) -> bool:
    """Whether the value at ``location`` must not be repeated in a message."""
    return any(part in SECRET_KEYS for part in location if isinstance(part, str))


def syntax_problem(error: tomllib.TOMLDecodeError, text: str) -> tuple[str, int | None, int | None]:
    """The problem, line and column of a TOML syntax error (``tomllib`` puts them in its
    message; the end of the document is its last line)."""
    message = str(error)
    match = _TOML_POSITION.search(message)
    if match is None:
        return _sentence(message), None, None
    problem = _sentence(message[: match.start()])
    if match.group(1) is None:
        return f"{problem} at the end of the file", max(1, len(text.splitlines())), None
    return problem, int(match.group(1)), int(match.group(2))


def encoding_problem(error: UnicodeDecodeError, data: bytes) -> tuple[str, int]:
    """The problem and line of bytes that are not UTF-8."""
    line = data.count(b"\n", 0, error.start) + 1
    return f"not UTF-8 text (byte {data[error.start]:#04x}); TOML files are UTF-8", line


def value_problem(
    error: ErrorDetails, known_keys: Sequence[str] | None, *, show_input: bool = True
) -> str:
    """One pydantic error as a short clause: ``must be one of off, record, replay (found 'x')``.

    ``known_keys`` are the keys allowed where an unknown key was found; ``show_input=False``
    leaves out the value found."""
    kind = error["type"]
    if kind == "extra_forbidden":
        known = f" (known keys: {', '.join(known_keys)})" if known_keys else ""
        return f"unknown key{known}"
    if kind == "literal_error":
        expected = re.findall(r"'([^']*)'", str(error.get("ctx", {}).get("expected", "")))
        problem = f"must be one of {', '.join(expected)}"
    elif kind in TABLE_TYPES:
        problem = "must be a table"
    elif kind == "value_error":
        problem = _sentence(str(error["msg"]).removeprefix("Value error, "))
    else:
        problem = _sentence(str(error["msg"]).replace("Input should be", "must be"))
    if not show_input or is_secret_key(error["loc"]):
        return problem
    return f"{problem} (found {_shown(error['input'])})"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _sentence(text: str) -> str:
    """A clause to follow a colon: first letter lower-cased, no final full stop."""
    text = text.strip().rstrip(".")
    if len(text) > 1 and text[0].isupper() and not text[1].isupper():
        return text[0].lower() + text[1:]
    return text


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


def file_not_set_problem(mode: Mode) -> str:
    """What is wrong when ``mode`` (record or replay) has no ``record_replay.file`` to use;
    the runtime blocks with it and ``status`` reports it."""
    return f"record_replay.mode is {mode!r} but record_replay.file is not set"
