"""Tape rows: the entries of a recording's tapes, checked field by field for the reader.

A *tape* records one non-deterministic function (a tool, the clock, a random draw, a web
API behind ``openprogram.taped``): each call is one ``tape`` row, written whole once the call
returned or raised::

    {"type":"tape","tape":"clock","args":{},"result":1767225600.5,"nondeterministic":true}
    {"type":"tape","tape":"fetch_weather","args":{"city":"Paris"},"result":{…},"typed":true}
    {"type":"tape","tape":"fetch_weather","args":{"city":"Atlantis"},"error":{"type":…,"message":…}}
    {"type":"tape","tape":"tool:get_weather","args":{"city":"Paris"},"result":{"text":…,"is_error":false}}

* ``tape`` names the tape (a non-empty string); an agent tool's tape is ``tool:`` and the
  tool's name.
* ``args`` is an object: the call's arguments by parameter name.
* exactly one of ``result`` (any JSON value, null included) and ``error`` (``{"type",
  "message"}``: the exception raised, its message redacted).
* ``typed`` (optional, true): the result was converted to JSON through the function's return
  annotation (a pydantic model, a tuple, a date), and replay rebuilds it through that
  annotation.
* ``nondeterministic`` (optional, true): the result changes from run to run by nature (the
  clock, a random draw): the transcript hash and ``diff`` leave it out.
* ``within`` (optional): the tape whose call was being recorded when this call was made (the
  clock read inside a tool): replay does not require the entry to be read when that call is
  not run again.

An entry's index is its position among the rows of its tape (``clock[0]``, ``clock[1]``, …), so rows
written by several processes or threads need no index allocation. Rows of different tapes, and tape
rows and call rows, interleave freely. Recordings announce them with the header feature ``tapes``.

**Which tape covers the code running now** (:func:`enclosing_tape`): the taped function or
agent tool whose call is being recorded, which the tape boundary enters and leaves around the
call (:func:`enter_tape`, :func:`leave_tape`).

* *Nested entries and calls.* A taped call made while another one runs under record (the
  clock read inside a tool, a taped web API called by a taped function) is written with
  ``"within"``: the enclosing tape; so is a model or HTTP call recorded meanwhile (the writer
  adds it to the request row). Replay never requires them when the enclosing call is not run
  again — a taped function, or a tool replayed with policy ``replay``.
* *HTTP.* While a taped *function* runs under record (:func:`taped_function_running`), the
  HTTP requests it sends (through httpx or httpx2, an SDK, a web API client) are sent as they
  are and not recorded at the HTTP boundary: its tape holds what the function made of them,
  and replay returns that without running the function, so the requests are never made
  again. An agent tool's requests are recorded as usual, since a tool replayed ``live``
  sends them again.

The state is a ``ContextVar``: it covers the call's own thread, the tasks it starts and
whatever runs in a copy of its context (``asyncio.to_thread``), not other threads."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextvars import ContextVar, Token
from typing import Any, Final, NamedTuple

from openprogram.recording.difference import join_field_path
from openprogram.recording.format import TOOL_TAPE_PREFIX, RecordedError, TapeEntry

__all__ = [
    "TAPES_FEATURE",
    "Enclosing",
    "comparable_entry",
    "enclosing_tape",
    "enter_tape",
    "is_tool_tape",
    "leave_tape",
    "recording_tape_strings",
    "row_of_entry",
    "tape_entry_from_row",
    "tape_row",
    "tape_row_problem",
    "tape_strings",
    "taped_function_running",
]

TAPES_FEATURE: Final = "tapes"
"""The header feature a recording holding tape rows announces."""
_ROW_KEYS: Final = frozenset(
    {"type", "tape", "args", "result", "error", "typed", "nondeterministic", "within"}
)


def is_tool_tape(tape: str) -> bool:
    return tape.startswith(TOOL_TAPE_PREFIX)


def tape_row(
    tape: str,
    args: dict[str, Any],
    *,
    result: Any = None,
    error: RecordedError | None = None,
    typed: bool = False,
    nondeterministic: bool = False,
    within: str | None = None,
) -> dict[str, Any]:
    """The row of one tape entry (values already JSON and redacted)."""
    row: dict[str, Any] = {"type": "tape", "tape": tape, "args": args}
    if error is not None:
        row["error"] = {"type": error.type, "message": error.message}
    else:
        row["result"] = result
    if typed:
        row["typed"] = True
    if nondeterministic:
        row["nondeterministic"] = True
    if within is not None:
        row["within"] = within
    return row


def row_of_entry(entry: TapeEntry) -> dict[str, Any]:
    """The row ``entry`` was read from (to write a recording anew)."""
    return tape_row(
        entry.tape,
        entry.args,
        result=entry.result,
        error=entry.error,
        typed=entry.typed,
        nondeterministic=entry.nondeterministic,
        within=entry.within,
    )


def tape_row_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with a ``tape`` row, or None."""
    tape = row.get("tape")
    if not isinstance(tape, str) or not tape:
        return f"a tape row needs a tape name (a non-empty string), found {tape!r}"
    if not isinstance(row.get("args"), dict):
        return f"tape {tape!r}: args must be an object"
    has_result, error = "result" in row, row.get("error")
    if has_result == ("error" in row):
        return f"tape {tape!r}: a tape row holds exactly one of result and error"
    if not has_result and RecordedError.from_row(error) is None:
        return f'tape {tape!r}: error must be {{"type", "message"}}'
    for flag in ("typed", "nondeterministic"):
        if flag in row and row[flag] is not True:
            return f"tape {tape!r}: {flag} is true when present, found {row[flag]!r}"
    within = row.get("within")
    if "within" in row and (not isinstance(within, str) or not within):
        return f"tape {tape!r}: within must name a tape, found {within!r}"
    unknown = sorted(set(row) - _ROW_KEYS)
    if unknown:
        return f"tape {tape!r}: unknown field {unknown[0]!r}"
    return None


def tape_entry_from_row(row: dict[str, Any], *, line: int, index: int) -> TapeEntry:
    """The entry of a row :func:`tape_row_problem` found nothing wrong with."""
    return TapeEntry(
        tape=row["tape"],
        index=index,
        line=line,
        args=row["args"],
        result=row.get("result"),
        error=RecordedError.from_row(row.get("error")),
        typed=row.get("typed", False),
        nondeterministic=row.get("nondeterministic", False),
        within=row.get("within"),
    )


def comparable_entry(entry: TapeEntry) -> dict[str, Any]:
    """What the transcript hash and ``diff`` compare of an entry: its arguments, and its
    result or error unless the result is non-deterministic by nature (then the mark)."""
    if entry.nondeterministic:
        return {"args": entry.args, "nondeterministic": True}
    if entry.error is not None:
        return {
            "args": entry.args,
            "error": {"type": entry.error.type, "message": entry.error.message},
        }
    return {"args": entry.args, "result": entry.result}


def recording_tape_strings(entries: Iterable[TapeEntry]) -> Iterator[tuple[TapeEntry, str, str]]:
    """Every string of every entry (``recording.tapes``), with the entry and the field path:
    what ``recordings scan`` reports as ``file:LINE: tape NAME[INDEX], field PATH``, the
    entry giving its ``line``, ``tape`` and ``index``."""
    for entry in entries:
        for field_path, text in tape_strings(entry):
            yield entry, field_path, text


def tape_strings(entry: TapeEntry) -> Iterator[tuple[str, str]]:
    """Every string an entry holds (keys included), with its field path (``args.city``,
    ``result.text``, ``error.message``): what a secret scan reads."""
    stack: list[tuple[str, Any]] = [("args", entry.args)]
    if entry.error is not None:
        stack.append(("error.message", entry.error.message))
    else:
        stack.append(("result", entry.result))
    stack.reverse()
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            yield path, value
        elif isinstance(value, dict):
            children = []
            for key, item in value.items():
                child = join_field_path(path, key)
                yield child, key
                children.append((child, item))
            stack.extend(reversed(children))
        elif isinstance(value, list):
            stack.extend(
                reversed([(join_field_path(path, i), item) for i, item in enumerate(value)])
            )


class Enclosing(NamedTuple):
    tape: str
    covers_http: bool
    """True for a taped function (its HTTP requests are not recorded), False for a tool."""


_running: ContextVar[Enclosing | None] = ContextVar("openprogram_enclosing_tape", default=None)


def enclosing_tape() -> str | None:
    """The tape whose call is being recorded in this context, or None."""
    found = _running.get()
    return None if found is None else found.tape


def taped_function_running() -> str | None:
    """The tape of the taped function being recorded in this context (whose HTTP requests
    its tape covers), or None."""
    found = _running.get()
    return found.tape if found is not None and found.covers_http else None


def enter_tape(tape: str, *, covers_http: bool) -> Token[Enclosing | None]:
    return _running.set(Enclosing(tape, covers_http))


def leave_tape(token: Token[Enclosing | None]) -> None:
    try:
        _running.reset(token)
    except ValueError:  # left in another context than it was entered in
        _running.set(None)
