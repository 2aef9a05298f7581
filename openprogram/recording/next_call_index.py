"""The call index the next call takes, found in the rows other writers appended.

Every process writing to a recording numbers its calls in one sequence, so before it writes a
request row a writer reads the bytes appended since it last looked (under the file lock) and
takes one past the highest call index among their request rows. Writers start a request row
with :data:`REQUEST_ROW_START` and append request rows in index order, so the highest index
is found from the end without parsing every line.
"""

from __future__ import annotations

import orjson

__all__ = ["REQUEST_ROW_START", "UnreadableRow", "next_call_after"]

REQUEST_ROW_START = b'{"type":"request","call_index":'
"""How every writer starts a request row: the call index follows."""


class UnreadableRow(Exception):
    """A line a writer cannot make sense of; ``offset`` is where it starts."""

    def __init__(self, offset: int) -> None:
        self.offset = offset


def next_call_after(data: bytes) -> int:
    """One past the highest call index among the request rows in ``data`` (0 if none).

    Writers append request rows in index order under the lock, so the last request row
    holds the highest index: find it from the end instead of parsing every line. Rows
    laid out differently (written by hand) fall back to a full scan. Raises
    :class:`UnreadableRow` for a line that is not a row with a whole-number index.
    """
    start = data.rfind(REQUEST_ROW_START)
    if start == 0 or (start > 0 and data[start - 1 : start] == b"\n"):
        end = data.find(b"\n", start)
        return _request_index(data[start : end if end >= 0 else len(data)], start) + 1
    highest = -1
    offset = 0
    for line in data.split(b"\n"):
        if b'"request"' in line:
            highest = max(highest, _request_index(line, offset))
        offset += len(line) + 1
    return highest + 1


def _request_index(line: bytes, offset: int) -> int:
    """The call index of a request row (-1 for another row type)."""
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise UnreadableRow(offset) from None
    if not isinstance(row, dict):
        raise UnreadableRow(offset)
    if row.get("type") != "request":
        return -1
    index = row.get("call_index")
    if type(index) is not int or index < 0:
        raise UnreadableRow(offset)
    return index
