"""What a recording can hold, checked before a row is written.

JSON has no ``inf`` or ``NaN``: orjson writes them as ``null`` (and pydantic's JSON dump
turns those inside free-form fields such as ``metadata`` or tool-call arguments into
``None``), so a request with ``temperature=inf`` would be recorded as ``temperature: null``
and the identical run could never replay its own recording, and a tool would be replayed
``None`` where the model gave ``NaN``. And the reader refuses a row nested deeper than
:data:`~openprogram.json_nesting.MAX_NESTING_DEPTH`, so a row nested deeper must not be
written. The recorder checks each request and event as the caller and the provider gave it
(:func:`check_finite`, before pydantic's dump can hide a ``NaN``), and every row it writes
(:func:`encode_recordable_row`), and refuses such a value with
:class:`UnrecordableValueError` naming the field, before anything of that row reaches disk.
"""

from __future__ import annotations

import math
from typing import Any

import orjson
from pydantic import BaseModel

from openprogram.errors import OpenProgramError
from openprogram.json_nesting import MAX_NESTING_DEPTH, json_text_may_exceed_nesting_limit
from openprogram.providers.difference import format_report_path, join_field_path

__all__ = ["UnrecordableValueError", "check_finite", "encode_recordable_row"]

_NON_FINITE = "which a recording cannot hold (JSON has no inf or NaN)"
_USE_FINITE = "pass a finite number or leave it unset"


class UnrecordableValueError(OpenProgramError, ValueError):
    """A request or event holds a value a recording cannot hold faithfully.

    ``field_path`` is the whole path of the value within the row (``options.temperature``,
    ``event.tool_call.arguments.x``); ``problem`` says what is wrong with it.
    """

    def __init__(
        self, path: str, field_path: str, problem: str, advice: str, call_index: int | None
    ) -> None:
        self.path = path
        self.field_path = field_path
        self.problem = problem
        self.call_index = call_index
        call = "" if call_index is None else f" (call {call_index})"
        where = f"field {format_report_path(field_path)}" if field_path else "the row"
        super().__init__(f"cannot record into {path}{call}: {where} {problem}; {advice}")


def encode_recordable_row(path: str, row: dict[str, Any]) -> bytes:
    """``row`` as one complete line; raises :class:`UnrecordableValueError` if it holds a
    non-finite number or nests deeper than the reader accepts (``path``: the recording).

    The encoded line decides cheaply whether the row needs walking at all: a non-finite
    number is encoded as ``null``, and deep nesting needs many brackets.
    """
    try:
        line = orjson.dumps(row) + b"\n"
    except orjson.JSONEncodeError as exc:  # nested past orjson's own limit, or not JSON
        raise _first_problem(path, row) or UnrecordableValueError(
            path, "", f"cannot be written as JSON ({exc})", "report this", None
        ) from None
    if b"null" in line or json_text_may_exceed_nesting_limit(line):
        problem = _first_problem(path, row)
        if problem is not None:
            raise problem
    return line


def check_finite(path: str, value: Any, *, call_index: int | None = None) -> None:
    """Raise :class:`UnrecordableValueError` for the first non-finite float in ``value``: a
    dict of pydantic models (``{"options": options}``), dicts, lists and tuples, walked
    without recursion. Field paths start at ``value``'s keys."""
    parents: list[tuple[int, str | int]] = []  # (parent entry, key) of each container seen
    stack: list[tuple[Any, int]] = [(value, -1)]
    while stack:
        item, entry = stack.pop()
        pairs: Any
        if isinstance(item, dict):
            pairs = item.items()
        elif isinstance(item, list | tuple):
            pairs = enumerate(item)
        elif isinstance(item, BaseModel):
            pairs = item.__dict__.items()
        else:
            continue
        for key, child in pairs:
            if isinstance(child, float):
                if not math.isfinite(child):
                    field_path = join_field_path(_path_of(parents, entry), key)
                    raise UnrecordableValueError(
                        path, field_path, f"is {child!r}, {_NON_FINITE}", _USE_FINITE, call_index
                    )
            elif isinstance(child, dict | list | tuple | BaseModel):
                parents.append((entry, key))
                stack.append((child, len(parents) - 1))


def _path_of(parents: list[tuple[int, str | int]], entry: int) -> str:
    keys: list[str | int] = []
    while entry >= 0:
        entry, key = parents[entry]
        keys.append(key)
    field_path = ""
    for key in reversed(keys):
        field_path = join_field_path(field_path, key)
    return field_path


def _first_problem(path: str, row: dict[str, Any]) -> UnrecordableValueError | None:
    found = _find_unrecordable(row, 1)
    if found is None:
        return None
    keys, problem, advice = found
    field_path = ""
    for key in reversed(keys):
        field_path = join_field_path(field_path, key)
    call_index = row.get("call_index") if row.get("type") == "event" else None
    return UnrecordableValueError(
        path, field_path, problem, advice, call_index if type(call_index) is int else None
    )


def _find_unrecordable(value: Any, depth: int) -> tuple[list[str | int], str, str] | None:
    """The keys leading to the first unrecordable value (innermost first), the problem and
    the advice; None when everything can be recorded. ``depth`` counts ``value`` itself.

    Recursion is bounded: the walk stops one level past the limit.
    """
    children: Any
    if isinstance(value, dict):
        children = value.items()
    elif isinstance(value, list | tuple):
        children = enumerate(value)
    else:
        if isinstance(value, float) and not math.isfinite(value):
            return [], f"is {value!r}, {_NON_FINITE}", _USE_FINITE
        return None
    if depth > MAX_NESTING_DEPTH:
        return (
            [],
            f"is nested deeper than {MAX_NESTING_DEPTH} levels, which a recording cannot hold",
            "flatten it",
        )
    for key, child in children:
        if isinstance(child, dict | list | tuple | float):
            found = _find_unrecordable(child, depth + 1)
            if found is not None:
                found[0].append(key)
                return found
    return None
