"""The first difference, and the one function that writes it as a report.

Replay, ``openprogram recordings diff``, ``verify``, the pytest plugin and the CLI all speak
of a drift with one value, :class:`FirstDifference`, and show it with one function,
:func:`format_report`. A replay mismatch reads::

    replay mismatch at call 1, field context.messages[2].content[0].text:
    recorded 'echo:hi', incoming 'echo:bye'

a drift in a tape (a taped function or an agent tool, see ``openprogram.tape_boundary``) names the
entry instead of a call::

    replay mismatch at tape clock[3], field args.city:
    recorded 'Paris', incoming 'Lyon'

and a difference ``diff`` finds between two recordings, with the sides named ``A`` and ``B``::

    difference at call 0, event 2 (sse), field data.choices[0].delta.content:
    A 'Let me check', B 'Let me look'

The first line says where (the call, the event by its index and type, the field), the second
what each side holds there — or, when a value says too little, a sentence (``detail``). A
third line, ``note: …``, is added when there is one. Changing how a report reads is a change
to this module only.

A value is shown on a report line as its ``repr`` with line breaks escaped, cut after
:data:`REPORT_LIMIT` characters (:func:`format_report_value`) — or, when the two sides are alike
that far, both from a little before the first character they differ at
(:func:`format_report_values`); a field path whole, or, when longer, its start and its end around a
``…`` (:func:`format_report_path`). :data:`MISSING` stands for the key or list item one side does
not have. :func:`which_calls` (a set of calls in a few words) and :func:`plural` (``1 call``,
``2 calls``) come from :mod:`openprogram.wording` and are named here too.

The module imports nothing else of openprogram but that: :mod:`openprogram.errors`, which
loads nothing when imported, reaches it for the messages it writes this way."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Final

from openprogram.wording import plural, which_calls

__all__ = [
    "DIFF_SIDES",
    "EVENT_PATH",
    "MISSING",
    "REPLAY_SIDES",
    "REPORT_LIMIT",
    "FirstDifference",
    "ReportSides",
    "ReportView",
    "format_report",
    "format_report_path",
    "format_report_value",
    "format_report_values",
    "plural",
    "report_view",
    "value_at",
    "which_calls",
]

EVENT_PATH: Final = "event"
"""The path an event's fields start with in a :class:`FirstDifference`."""


@dataclass(frozen=True, slots=True)
class ReportSides:
    """What a report calls the difference and its two sides."""

    heading: str
    recorded: str
    incoming: str


REPLAY_SIDES: Final = ReportSides("replay mismatch", "recorded", "incoming")
"""Replay: the recorded call against the request the run makes now."""
DIFF_SIDES: Final = ReportSides("difference", "A", "B")
"""``diff``: recording A against recording B."""


@dataclass(frozen=True)
class FirstDifference:
    """Where two calls first part, and what each side holds there.

    ``field_path`` is the path the comparison walked to (``context.messages[2].content``,
    ``body.messages[0].content``, ``event.delta`` inside an event, ``outcome``, ``boundary``,
    ``call_index``, ``event_index``). For a difference inside an event, ``recorded`` and
    ``incoming`` are the two whole events and ``event_index`` says which; the report shows
    the values found at the field. ``detail`` replaces the report's second line, ``note``
    adds a third."""

    call_index: int
    """The call on the recorded side (replay's recording, ``diff``'s A)."""
    field_path: str
    recorded: Any
    """The recorded side's value, or :data:`MISSING`."""
    incoming: Any
    """The incoming side's value (the run's request, ``diff``'s B), or ``MISSING``."""
    event_index: int | None = None
    detail: str | None = None
    note: str | None = None
    incoming_call_index: int | None = None
    """The call on the incoming side when it is another one (``diff`` pairs calls by
    content, so A's call 3 may be compared with B's call 4)."""
    sides: ReportSides = field(default=REPLAY_SIDES)
    tape: str | None = None
    """Set when the difference is in an entry of this tape, not in a call: ``call_index``
    (and ``incoming_call_index``) are then indexes of entries on the tape, and the report
    reads ``at tape clock[3]``."""


@dataclass(frozen=True)
class ReportView:
    """A :class:`FirstDifference` as a report shows it."""

    where: str
    """``call 1``, ``call 1 (B: call 2)``, ``call 1, event 3 (sse)``."""
    field: str | None
    """The field path inside the request or the event; None for a whole event or a position."""
    recorded: Any
    incoming: Any
    """The values at ``field`` (or :data:`MISSING`)."""


def format_report(difference: FirstDifference) -> str:
    """The report of ``difference``: two lines (three with a note), the one way every part
    of openprogram writes a drift."""
    view = report_view(difference)
    sides = difference.sides
    field_part = "" if view.field is None else f", field {format_report_path(view.field)}"
    recorded, incoming = format_report_values(view.recorded, view.incoming)
    second = difference.detail or f"{sides.recorded} {recorded}, {sides.incoming} {incoming}"
    third = "" if difference.note is None else f"\nnote: {difference.note}"
    return f"{sides.heading} at {view.where}{field_part}:\n{second}{third}"


def report_view(difference: FirstDifference) -> ReportView:
    """Where ``difference`` is, in words, and the values a report shows.

    A difference in a request, or in how a call ended, is shown at its field path. One in an
    event names the event by its index and type, and the field inside it, with the two
    values found there rather than the two whole events; when one side lacks the event, or
    the events differ as wholes, the whole events are shown."""
    where = _position(difference.tape, difference.call_index)
    other = difference.incoming_call_index
    if other is not None and other != difference.call_index:
        where += f" ({difference.sides.incoming}: {_position(difference.tape, other)})"
    recorded, incoming = difference.recorded, difference.incoming
    if difference.event_index is None:
        return ReportView(where, difference.field_path, recorded, incoming)
    where += f", event {difference.event_index}"
    kinds = [event.get("type") for event in (recorded, incoming) if isinstance(event, dict)]
    names = list(dict.fromkeys(kind for kind in kinds if isinstance(kind, str)))
    if names:
        where += f" ({' / '.join(names)})"
    path = difference.field_path
    if not path.startswith((f"{EVENT_PATH}.", f"{EVENT_PATH}[")):
        return ReportView(where, None, recorded, incoming)
    inside = path.removeprefix(EVENT_PATH).removeprefix(".")
    return ReportView(where, inside, value_at(recorded, inside), value_at(incoming, inside))


def _position(tape: str | None, index: int) -> str:
    """``call 3``, or ``tape clock[3]`` for an entry of a tape."""
    return f"call {index}" if tape is None else f"tape {tape}[{index}]"


_SEGMENT: Final = re.compile(r'\.?([A-Za-z0-9_-]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


def value_at(value: Any, path: str) -> Any:
    """The value at ``path`` (``data.choices[0].delta.content``, ``["a b"].c``) inside ``value``;
    :data:`MISSING` where a key or an index is absent."""
    position = 0
    while position < len(path):
        match = _SEGMENT.match(path, position)
        if match is None:
            return MISSING
        key, index, quoted = match.groups()
        position = match.end()
        if index is not None:
            if not isinstance(value, list) or int(index) >= len(value):
                return MISSING
            value = value[int(index)]
            continue
        name = key if key is not None else json.loads(quoted)
        if not isinstance(value, dict) or name not in value:
            return MISSING
        value = value[name]
    return value


class _Missing:
    """The type of :data:`MISSING`: a key or list item that one side does not have."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        # pickle and copy look the name up in this module, so they hand back the singleton.
        return "MISSING"


MISSING: Final = _Missing()


REPORT_LIMIT: Final = 200
"""Characters of a value or a field path a report line shows before cutting it."""


_ESCAPE_LINE_BREAKS: Final = str.maketrans(
    {
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "\v": "\\x0b",
        "\f": "\\x0c",
        "\x1c": "\\x1c",
        "\x1d": "\\x1d",
        "\x1e": "\\x1e",
        "\x85": "\\x85",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)


def format_report_value(value: Any, limit: int = REPORT_LIMIT) -> str:
    """Show a value on one line of a mismatch report: its repr, cut after ``limit`` chars."""
    text = repr(value).translate(_ESCAPE_LINE_BREAKS)
    if len(text) > limit:
        return text[:limit] + "…"
    return text


_BEFORE_THE_DIFFERENCE: Final = 40
"""Characters a window shows before the first one two values differ at."""


def format_report_values(
    recorded: Any, incoming: Any, limit: int = REPORT_LIMIT
) -> tuple[str, str]:
    """Show the two sides of a difference on a report line, each as :func:`format_report_value` does
    — unless one is cut before the first character their texts differ at (with little after it):
    then both are shown from a little before that character, ``…`` marking what is left out, so that
    two long values alike for their first ``limit`` characters do not read the same."""
    old = repr(recorded).translate(_ESCAPE_LINE_BREAKS)
    new = repr(incoming).translate(_ESCAPE_LINE_BREAKS)
    if len(old) <= limit and len(new) <= limit:
        return old, new
    first = next(
        (index for index, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    if first + _BEFORE_THE_DIFFERENCE <= limit:
        return _clip(old, 0, limit), _clip(new, 0, limit)
    start = first - _BEFORE_THE_DIFFERENCE
    return _clip(old, start, limit), _clip(new, start, limit)


def _clip(text: str, start: int, limit: int) -> str:
    """``limit`` characters of ``text`` from ``start``, with ``…`` where it was cut."""
    shown = text[start : start + limit]
    return ("…" if start > 0 else "") + shown + ("…" if start + limit < len(text) else "")


def format_report_path(field_path: str, limit: int = REPORT_LIMIT) -> str:
    """Show a field path on one line of a report: whole, or, when longer than ``limit``
    characters, its start and its end around a ``…`` (the end says which leaf it is)."""
    if len(field_path) <= limit:
        return field_path
    keep = limit - 1
    head = keep * 2 // 3
    return field_path[:head] + "…" + field_path[len(field_path) - (keep - head) :]
