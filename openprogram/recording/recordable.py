"""What a recording can hold, checked before a row is written.

JSON has no ``inf`` or ``NaN``: orjson writes them as ``null`` (and pydantic's JSON dump
turns those inside free-form fields such as ``metadata`` or tool-call arguments into
``None``), so a request with ``temperature=inf`` would be recorded as ``temperature: null``
and the identical run could never replay its own recording, and a tool would be replayed
``None`` where the model gave ``NaN``. And the reader refuses a row nested deeper than
:data:`~openprogram.json_nesting.MAX_NESTING_DEPTH`, so a row nested deeper must not be
written. The recorder checks each request and event as the caller and the provider gave it
(:func:`check_recordable`, before pydantic's dump can hide a ``NaN``, and before a deep value
reaches code that recurses), and refuses such a value with :class:`UnrecordableValueError`
naming the field, before anything of that row reaches disk. Rows given to the writer
directly are checked as they are encoded (:func:`encode_recordable_row`).

The walk knows JSON values (dicts, lists, tuples, scalars); a boundary whose requests are
objects (the provider boundary's pydantic models) passes ``fields_of`` to walk into them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from openprogram.errors import OpenProgramError
from openprogram.json_nesting import MAX_NESTING_DEPTH, json_text_may_exceed_nesting_limit
from openprogram.recording.difference import format_report_path, join_field_path

__all__ = ["FieldsOf", "UnrecordableValueError", "check_recordable", "encode_recordable_row"]

FieldsOf = Callable[[object], Iterable[tuple[str, Any]] | None]
"""The fields of an object that is not a JSON value, by their JSON names (None: the object
is not one to walk into)."""

_TOO_DEEP = f"is nested deeper than {MAX_NESTING_DEPTH} levels, which a recording cannot hold"


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


def encode_recordable_row(path: str, row: dict[str, Any], *, checked: bool = False) -> bytes:
    """``row`` as one complete line; raises :class:`UnrecordableValueError` if it holds a
    non-finite number or nests deeper than the reader accepts (``path``: the recording).

    ``checked``: the values in ``row`` already passed :func:`check_recordable`. Otherwise
    the encoded line decides cheaply whether the row needs walking at all: a non-finite
    number is encoded as ``null``, and deep nesting needs many brackets.
    """
    try:
        line = orjson.dumps(row) + b"\n"
    except orjson.JSONEncodeError as exc:  # nested past orjson's own limit, or not JSON
        _check_row(path, row)
        raise UnrecordableValueError(
            path, "", f"cannot be written as JSON ({exc})", "report this", None
        ) from None
    if not checked and (b"null" in line or json_text_may_exceed_nesting_limit(line)):
        _check_row(path, row)
    return line


def _check_row(path: str, row: dict[str, Any]) -> None:
    call_index = row.get("call_index") if row.get("type") == "event" else None
    check_recordable(path, row, call_index=call_index if type(call_index) is int else None)


def check_recordable(
    path: str,
    value: Any,
    *,
    call_index: int | None = None,
    fields_of: FieldsOf | None = None,
) -> None:
    """Raise :class:`UnrecordableValueError` for the first non-finite float in ``value``, or
    the first container nested deeper than a row may be.

    ``value`` stands for a row: a dict (level 1) of dicts, lists and tuples — and of the
    objects ``fields_of`` walks into (``{"model": model, "context": context, "options":
    options}`` for a provider call), each of which is one level, as in its JSON dump.
    Walked without recursion, so any depth is safe; field paths start at ``value``'s keys.
    """
    parents: list[tuple[int, str | int]] = []  # (parent entry, key) of each container seen
    stack: list[tuple[Any, int, int]] = [(value, -1, 1)]
    while stack:
        item, entry, depth = stack.pop()
        pairs: Any
        if isinstance(item, dict):
            pairs = item.items()
        elif isinstance(item, list | tuple):
            pairs = enumerate(item)
        else:
            pairs = fields_of(item) if fields_of is not None else None
            if pairs is None:
                continue
        if depth > MAX_NESTING_DEPTH:
            raise UnrecordableValueError(
                path, _path_of(parents, entry), _TOO_DEEP, "flatten it", call_index
            )
        for key, child in pairs:
            kind = type(child)
            if kind is str or kind is int or child is None or kind is bool:
                continue  # most of a request: skipped before any isinstance
            if isinstance(child, float):
                if not math.isfinite(child):
                    raise UnrecordableValueError(
                        path,
                        join_field_path(_path_of(parents, entry), key),
                        f"is {child!r}, which a recording cannot hold (JSON has no inf or NaN)",
                        "pass a finite number or leave it unset",
                        call_index,
                    )
            elif isinstance(child, dict | list | tuple) or fields_of is not None:
                parents.append((entry, key))
                stack.append((child, len(parents) - 1, depth + 1))


def _path_of(parents: list[tuple[int, str | int]], entry: int) -> str:
    keys: list[str | int] = []
    while entry >= 0:
        entry, key = parents[entry]
        keys.append(key)
    field_path = ""
    for key in reversed(keys):
        field_path = join_field_path(field_path, key)
    return field_path
