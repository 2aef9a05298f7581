"""The first difference between two recordings, as ``openprogram recordings diff`` shows it.

A difference in a request, or in how a call ended, is shown at its field path
(``body.messages[2].content``, ``context.messages[0].content``, ``outcome``). A difference in
an event names the event by its index and type, and the field inside it, with the two values
found there rather than the two whole events: ``call 1, event 3 (sse)``, field
``data.choices[0].delta.content``, ``'Hel'`` against ``'Help'``. When one recording lacks the
event, or the events differ as wholes, the whole events are shown.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.recording.difference import MISSING

if TYPE_CHECKING:
    from openprogram.recordings.comparison import RecordingDifference

__all__ = ["DifferenceView", "difference_view", "value_at"]

EVENT_PATH = "event"
"""The path an event's fields start with in a :class:`RecordingDifference`."""

_SEGMENT = re.compile(r'\.?([A-Za-z0-9_-]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')


@dataclass(frozen=True)
class DifferenceView:
    """Where the difference is, in words, and the value each recording has there."""

    where: str
    """``call 1`` or ``call 1, event 3 (sse)``."""
    field: str | None
    """The field path inside the request or the event; None for a whole event."""
    a: Any
    b: Any
    """The values (or :data:`~openprogram.recording.difference.MISSING`)."""


def difference_view(found: RecordingDifference) -> DifferenceView:
    """How to show ``found``."""
    where = f"call {found.call_index}"
    if found.event_index is None:
        return DifferenceView(where, found.field_path, found.a, found.b)
    where += f", event {found.event_index}"
    kinds = [event.get("type") for event in (found.a, found.b) if isinstance(event, dict)]
    names = list(dict.fromkeys(kind for kind in kinds if isinstance(kind, str)))
    if names:
        where += f" ({' / '.join(names)})"
    field = found.field_path.removeprefix(EVENT_PATH).removeprefix(".")
    if not field or not found.field_path.startswith(EVENT_PATH):
        return DifferenceView(where, None, found.a, found.b)
    return DifferenceView(where, field, value_at(found.a, field), value_at(found.b, field))


def value_at(value: Any, path: str) -> Any:
    """The value at ``path`` (``data.choices[0].delta.content``, ``["a b"].c``) inside
    ``value``; :data:`MISSING` where a key or an index is absent."""
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
