"""Damaged copies of a small real recording, for the read-command fuzz tests.

The recording is the two-call echo tool session (``tests.support.tool_sessions``) with its
timestamps fixed. Its copies are cut at byte offsets, have fields of every row replaced by
values of other JSON types, renamed or removed (at the top of a row or at any depth), and
hold values nested hundreds of levels deep. Each :class:`Mutant` says what was done to it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.tool_sessions import record_tool_session

Row = dict[str, Any]

FIXED_TIMESTAMP = 1_796_000_000_000
FIXED_CREATED_AT = "2026-11-30T10:00:00Z"


# --- the recording -------------------------------------------------------------------------


def fixed_tool_session(path: Path) -> bytes:
    """Record the two-call echo tool session into ``path``, its timestamps fixed so the file is
    the same bytes on every run; return them."""
    asyncio.run(record_tool_session(path))
    rows = [_fixed_times(json.loads(line)) for line in path.read_bytes().splitlines()]
    data = b"".join(encode(row) for row in rows)
    path.write_bytes(data)
    return data


def _fixed_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: FIXED_TIMESTAMP
            if key == "timestamp"
            else FIXED_CREATED_AT
            if key == "created_at"
            else _fixed_times(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_fixed_times(item) for item in value]
    return value


def encode(row: Any) -> bytes:
    """One row as the recorder writes it (compact), but able to hold a 200-digit integer."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def rows_of(data: bytes) -> list[Row]:
    return [json.loads(line) for line in data.splitlines()]


# --- mutations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A damaged copy of the recording, and what was done to it."""

    what: str
    data: bytes


def truncation_offsets(data: bytes) -> list[int]:
    """Every offset in the first and last rows and within 2 bytes of a line end, and every
    ``step``-th offset elsewhere, so the sweep stays fast on a file of a few KB."""
    step = 7
    first_end = data.index(b"\n") + 1
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    near_line_ends = {
        offset
        for index, byte in enumerate(data)
        if byte == ord("\n")
        for offset in range(index - 2, index + 3)
    }
    return sorted(
        offset
        for offset in range(len(data))
        if offset <= first_end
        or offset >= last_start
        or offset in near_line_ends
        or offset % step == 0
    )


def truncations(data: bytes) -> Iterator[Mutant]:
    for offset in truncation_offsets(data):
        yield Mutant(f"truncated to {offset} bytes ({_where(data, offset)})", data[:offset])


def _where(data: bytes, offset: int) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1)
    return f"line {line}, column {column}"


OTHER_TYPE_VALUES: dict[str, Any] = {
    "a string": "x",
    "an empty string": "",
    "an integer": 7,
    "a negative integer": -1,
    "a float": 2.5,
    "a list": [1, "x"],
    "an object": {"k": "v"},
    "null": None,
    "true": True,
    "false": False,
    "a 200-digit integer": int("9" * 200),
    "a huge float": 1.7976931348623157e308,
    "the string 'NaN'": "NaN",
    "the string '-Infinity'": "-Infinity",
}
"""What a field is replaced by (a value equal to the original is skipped)."""


def type_confusions(data: bytes) -> Iterator[Mutant]:
    """Each top-level field of each row replaced by a value of another type, renamed, removed."""
    rows = rows_of(data)
    for number, row in enumerate(rows):
        where = f"line {number + 1} ({row['type']})"
        for key, original in row.items():
            for label, value in OTHER_TYPE_VALUES.items():
                if type(value) is type(original) and value == original:
                    continue
                changed = {**row, key: value}
                yield Mutant(f"{where}: {key!r} = {label}", _with_row(rows, number, changed))
            renamed = {(name + "_" if name == key else name): item for name, item in row.items()}
            yield Mutant(f"{where}: {key!r} renamed", _with_row(rows, number, renamed))
            removed = {name: item for name, item in row.items() if name != key}
            yield Mutant(f"{where}: {key!r} removed", _with_row(rows, number, removed))


def nested_field_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every field and list item below ``value``, at any depth."""
    items: Iterator[tuple[Any, Any]]
    if isinstance(value, dict):
        items = iter(value.items())
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield (*prefix, key)
        yield from nested_field_paths(item, (*prefix, key))


def changed_below(rows: list[Row], number: int, path: tuple[Any, ...], how: str) -> Mutant:
    """``rows[number]`` with the field or list item at ``path`` (any depth) replaced by one of
    :data:`OTHER_TYPE_VALUES` (``how`` names it), renamed, or removed."""
    row = json.loads(json.dumps(rows[number]))
    parent = row
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if how == "removed":
        del parent[last]
    elif how == "renamed" and isinstance(parent, dict):
        parent[f"{last}_"] = parent.pop(last)
    else:
        parent[last] = OTHER_TYPE_VALUES.get(how)
    where = ".".join(str(part) for part in path)
    return Mutant(f"line {number + 1}: {where} {how}", _with_row(rows, number, row))


NESTED_PLACEHOLDER = "openprogram-fuzz-nested-value"


def replaced_at(rows: list[Row], number: int, path: tuple[Any, ...], value_json: str) -> bytes:
    """The recording with ``rows[number]`` at ``path`` set to the JSON text ``value_json``
    (spliced in as text: a value nested 1,000 deep is too deep for ``json.dumps``)."""
    row = json.loads(json.dumps(rows[number]))
    target = row
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = NESTED_PLACEHOLDER
    line = encode(row).replace(json.dumps(NESTED_PLACEHOLDER).encode(), value_json.encode())
    return b"".join(line if index == number else encode(other) for index, other in enumerate(rows))


def _with_row(rows: list[Row], number: int, row: Row) -> bytes:
    return b"".join(encode(row if index == number else other) for index, other in enumerate(rows))


NESTING_DEPTHS = (200, 300, 1000)


def nested(depth: int, container: str) -> str:
    """JSON text of a value ``depth`` containers deep: ``{"a":{"a":…1}}`` or ``[[…1]]``."""
    if container == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


def deep_nestings(data: bytes) -> Iterator[Mutant]:
    """Values nested 200, 300 and 1,000 levels deep inside a request and inside an event."""
    rows = rows_of(data)
    request = next(n for n, row in enumerate(rows) if row["type"] == "request")
    tool_call = next(
        n for n, row in enumerate(rows) if row["type"] == "event" and "tool_call" in row["event"]
    )
    delta = next(
        n for n, row in enumerate(rows) if row["type"] == "event" and "delta" in row["event"]
    )
    places = [
        (request, ("options", "metadata"), "object"),
        (request, ("context", "messages", 0, "content"), "list"),
        (tool_call, ("event", "tool_call", "arguments", "q"), "list"),
        (delta, ("event", "delta"), "object"),
    ]
    for depth in NESTING_DEPTHS:
        for number, path, container in places:
            where = ".".join(str(part) for part in path)
            yield Mutant(
                f"line {number + 1}: {where} = {container} nested {depth} deep",
                replaced_at(rows, number, path, nested(depth, container)),
            )
