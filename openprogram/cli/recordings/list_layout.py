"""How ``recordings list`` lays out its rows: a table when it fits, two lines each when not.

The table has every column: the active mark, name, created, calls, size, models, state and
the short hash; an invalid recording's problem is shortened to the room left, never wrapped.
When even that does not fit the width (a narrow terminal, or output that is not a terminal:
80 columns unless ``COLUMNS`` says otherwise), each recording takes two lines instead, with
the same fields::

    * rec-20261201-071300  valid  59ecb154b204
        created 2026-12-01 07:13:00 · 2 calls · 3.6 KB · echo:echo

When the table is too wide, its models give way first: shown without their hosts and apis
(``gpt-4o-mini, claude-sonnet-4-5``), then cut to the room left (at least
:data:`MIN_MODELS` columns); ``--json`` and the two-line layout show them whole. No field
is ever dropped; every text is made :func:`~openprogram.cli.output.visible`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from openprogram.cli.output import plural, visible

if TYPE_CHECKING:
    from openprogram.store.summary import RecordingSummary

HEADERS = ("", "name", "created", "calls", "size", "models", "state", "hash")
RIGHT_ALIGNED = frozenset({"calls", "size"})
GAP = "  "
INVALID = "INVALID"
MIN_PROBLEM = 20
"""The least room a shortened problem gets in the table before the two-line layout is used."""
INDENT = "    "


@dataclass(frozen=True)
class ListedRecording:
    """One recording's fields as text, ready to lay out."""

    mark: str
    name: str
    created: str
    calls: int
    size: str
    models: str
    state: str
    """``valid``, ``empty`` (valid, but no call nor tape entry: nothing to replay),
    ``truncated`` or ``INVALID``."""
    problem: str
    hash: str
    short_models: str = ""
    """The models without their hosts and apis (``gpt-4o-mini``), for a narrow table."""

    @classmethod
    def of(cls, summary: RecordingSummary, *, active: bool) -> ListedRecording:
        from openprogram.store.hashing import short_hash

        state = (
            "truncated"
            if summary.truncated
            else "empty"
            if summary.calls == 0 and summary.tape_entries == 0
            else "valid"
        )
        return cls(
            mark="*" if active else "",
            name=_text(summary.name),
            created=_text((summary.created_at or "?").replace("T", " ").removesuffix("Z")),
            calls=summary.calls,
            size=size_text(summary.size),
            models=_text(", ".join(summary.models)),
            short_models=_text(", ".join(dict.fromkeys(map(_short_label, summary.models)))),
            state=state if summary.valid else INVALID,
            problem=_text(summary.problem or ""),
            hash=short_hash(summary.transcript_hash) if summary.transcript_hash else "",
        )


def lay_out(listed: list[ListedRecording], width: int) -> list[str]:
    """The lines to print for ``listed`` in ``width`` columns: the table, its models
    shortened (their hosts and apis left out, then cut) before it gives way to two lines a
    recording."""
    full = [item.models for item in listed]
    short = [item.short_models for item in listed]
    table = (
        _table(listed, width, full)
        or _table(listed, width, short)
        or _table(listed, width, short, clip_models=True)
    )
    return table if table is not None else _two_lines_each(listed, width)


MIN_MODELS = 12
"""The least room the models column is cut to before the two-line layout is used."""


def _table(
    listed: list[ListedRecording], width: int, models: list[str], *, clip_models: bool = False
) -> list[str] | None:
    """The table, its problems shortened to the room left (and, with ``clip_models``, its
    models cut to the room left); ``None`` when it cannot fit."""
    rows = [
        [item.mark, item.name, item.created, str(item.calls), item.size, shown, "", item.hash]
        for item, shown in zip(listed, models, strict=True)
    ]
    state_column = HEADERS.index("state")
    models_column = HEADERS.index("models")
    widths = [
        max([_width(header), *(_width(row[column]) for row in rows)])
        for column, header in enumerate(HEADERS)
    ]
    if clip_models:
        states = [item.state if not item.problem else f"{item.state}: …" for item in listed]
        fixed = sum(widths) - widths[state_column] - widths[models_column]
        state_room = max([_width("state"), *(_width(state) for state in states)])
        models_room = width - fixed - state_room - len(GAP) * (len(HEADERS) - 1)
        if models_room < MIN_MODELS:
            return None
        for row in rows:
            row[models_column] = _clipped(row[models_column], models_room)
        widths[models_column] = max(
            [_width("models"), *(_width(row[models_column]) for row in rows)]
        )
    room = width - (sum(widths) - widths[state_column]) - len(GAP) * (len(HEADERS) - 1)
    states = [_state(item, room) for item in listed]
    needed = max([_width("state"), *(_width(state) for state in states)])
    shortest_problem = len(f"{INVALID}: ") + MIN_PROBLEM
    if room < needed or (any(item.problem for item in listed) and room < shortest_problem):
        return None
    widths[state_column] = needed
    for row, state in zip(rows, states, strict=True):
        row[state_column] = state
    return [_row(HEADERS, widths), *(_row(row, widths) for row in rows)]


def _state(item: ListedRecording, room: int) -> str:
    if not item.problem:
        return item.state
    return _clipped(f"{item.state}: {item.problem}", max(room, 1))


def _row(cells: tuple[str, ...] | list[str], widths: list[int]) -> str:
    padded = []
    for header, cell, size in zip(HEADERS, cells, widths, strict=True):
        fill = " " * (size - _width(cell))
        padded.append(fill + cell if header in RIGHT_ALIGNED else cell + fill)
    return GAP.join(padded).rstrip()


def _two_lines_each(listed: list[ListedRecording], width: int) -> list[str]:
    lines = []
    for item in listed:
        first = f"{item.mark or ' '} {item.name}{GAP}{item.state}"
        if item.problem:
            room = width - _width(first) - len(": ")
            first += f": {_clipped(item.problem, max(room, MIN_PROBLEM))}"
        elif item.hash:
            first += f"{GAP}{item.hash}"
        details = [f"created {item.created}", plural(item.calls, "call"), item.size]
        if item.models:
            details.append(item.models)
        lines += [first, INDENT + " · ".join(details)]
    return lines


def _short_label(label: str) -> str:
    """A model's label without its host or api (``api.openai.com:gpt-4o-mini`` →
    ``gpt-4o-mini``); a label of a call to no model (``GET host/path``) as it is."""
    if " " in label or ":" not in label:
        return label
    return label.split(":", 1)[1] or label


def size_text(size: int) -> str:
    """``512 B``, ``3.6 KB``, ``1.2 MB``."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _text(value: str) -> str:
    return visible(value, keep_lines=False)


def _width(text: str) -> int:
    if text.isascii():  # one column a character: made visible, it holds no control
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _clipped(text: str, room: int) -> str:
    """``text`` cut to ``room`` columns, ending in ``…`` when it was cut."""
    if _width(text) <= room:
        return text
    cut = text[:room]
    while cut and _width(cut) > room - 1:
        cut = cut[:-1]
    return f"{cut}…"
