"""The first difference between two recordings: what ``openprogram recordings diff`` shows.

Calls are compared in order. Within a call its boundary comes first (a provider call and
an HTTP call at one index differ at ``boundary``), then the request sections of its
boundary in order (``model``, ``context``, ``options``; or ``method``, ``url``,
``headers``, ``body``…), each walked as replay walks it, then the events one by one, then
how the call ended. The non-deterministic fields (:mod:`openprogram.recording.
nondeterministic`) are skipped and an absent key equals an explicit null, so two recordings
differ exactly when their transcript hashes differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.recording.difference import MISSING, find_first_difference
from openprogram.recording.format import request_sections
from openprogram.recording.nondeterministic import deterministic_event, request_ignore_fields
from openprogram.recordings.hashing import transcript_hash

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, Recording


@dataclass(frozen=True)
class RecordingDifference:
    """Where two recordings first part: the call, and a request field or an event."""

    call_index: int
    field_path: str
    """``model.id``, ``context.messages[2].content[0].text``, ``body.messages[0].content``,
    ``event.delta``, ``outcome``, ``boundary`` when the call was made at another boundary,
    or ``call_index`` when one recording has more calls."""
    a: Any
    b: Any
    event_index: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "call_index": self.call_index,
            "event_index": self.event_index,
            "field_path": self.field_path,
            "a": None if self.a is MISSING else self.a,
            "b": None if self.b is MISSING else self.b,
            "a_missing": self.a is MISSING,
            "b_missing": self.b is MISSING,
        }


@dataclass(frozen=True)
class RecordingComparison:
    calls_a: int
    calls_b: int
    hash_a: str
    hash_b: str
    difference: RecordingDifference | None

    @property
    def same(self) -> bool:
        return self.difference is None

    def to_json(self) -> dict[str, Any]:
        return {
            "same": self.same,
            "difference": None if self.difference is None else self.difference.to_json(),
            "calls": {"a": self.calls_a, "b": self.calls_b},
            "hash": {"a": self.hash_a, "b": self.hash_b},
        }


def compare_recordings(a: Recording, b: Recording) -> RecordingComparison:
    """Compare two parsed recordings (see :func:`first_difference`)."""
    return RecordingComparison(
        calls_a=len(a.calls),
        calls_b=len(b.calls),
        hash_a=transcript_hash(a),
        hash_b=transcript_hash(b),
        difference=first_difference(a, b),
    )


def first_difference(a: Recording, b: Recording) -> RecordingDifference | None:
    for call_a, call_b in zip(a.calls, b.calls, strict=False):
        difference = _call_difference(call_a, call_b)
        if difference is not None:
            return difference
    if len(a.calls) != len(b.calls):
        index = min(len(a.calls), len(b.calls))
        longer = a.calls if len(a.calls) > len(b.calls) else b.calls
        request = longer[index].request
        present, absent = (request, MISSING)
        return RecordingDifference(
            index,
            "call_index",
            present if len(a.calls) > len(b.calls) else absent,
            absent if len(a.calls) > len(b.calls) else present,
        )
    return None


def _call_difference(a: RecordedCall, b: RecordedCall) -> RecordingDifference | None:
    index = a.call_index
    if a.boundary != b.boundary:
        return RecordingDifference(index, "boundary", a.boundary, b.boundary)
    ignored = request_ignore_fields(a.boundary)
    for section in request_sections(a.boundary):
        found = find_first_difference(
            a.request.get(section), b.request.get(section), ignore_fields=ignored, path=section
        )
        if found is not None:
            return RecordingDifference(index, found.field_path, found.recorded, found.incoming)
    for event_index, (event_a, event_b) in enumerate(zip(a.event_rows, b.event_rows, strict=False)):
        found = find_first_difference(
            deterministic_event(a.boundary, event_a),
            deterministic_event(b.boundary, event_b),
            ignore_fields=ignored,
            path="event",
        )
        if found is not None:
            return RecordingDifference(
                index, found.field_path, event_a, event_b, event_index=event_index
            )
    if len(a.event_rows) != len(b.event_rows):
        event_index = min(len(a.event_rows), len(b.event_rows))
        return RecordingDifference(
            index,
            "event",
            a.event_rows[event_index] if event_index < len(a.event_rows) else MISSING,
            b.event_rows[event_index] if event_index < len(b.event_rows) else MISSING,
            event_index=event_index,
        )
    ending_a, ending_b = _ending(a), _ending(b)
    found = find_first_difference(ending_a, ending_b)
    if found is not None:
        return RecordingDifference(index, found.field_path, found.recorded, found.incoming)
    return None


def _ending(call: RecordedCall) -> dict[str, Any]:
    ending: dict[str, Any] = {"outcome": call.outcome}
    if call.error is not None:
        ending["error"] = {"type": call.error.type, "message": call.error.message}
    return ending


__all__ = [
    "RecordingComparison",
    "RecordingDifference",
    "compare_recordings",
    "first_difference",
]
