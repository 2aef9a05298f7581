"""Every difference between two recordings: what ``openprogram recordings diff`` shows.

Calls are aligned by content, not by position, so two runs of a concurrent session whose
calls interleaved differently are the same, and a call inserted or removed does not shift
every later call into a difference:

1. a call of A and a call of B whose requests *and* replies are equal pair first (calls with
   the same digest, :func:`~openprogram.store.hashing.call_digest`), in recorded order;
2. then calls whose requests are equal under the hash's rules pair, in recorded order
   (identical requests pair first with first, second with second): a changed reply is a
   difference in the events, or the ending, of a paired call;
3. the calls left are *only in A* or *only in B*. Each call only in A, in order, is compared
   with the nearest call left only in B (see :func:`nearest_call`), and the first field
   their requests differ at is reported; a call with no such counterpart is reported alone.

Tape entries are compared after the calls, each tape as a multiset of its entries
(:mod:`~openprogram.store.comparison`), the results of the clock and random draws left out.

The differences come in that order: the unpaired calls (A's, then B's left over), then the paired
calls whose replies differ, then the tape entries, one difference each: for a call, the first event
that differs (at the field inside it), or how the call ended. Requests are walked as replay walks
them (the boundary first, then the sections of the boundary in order), with the non-deterministic
fields skipped, an HTTP call's URL without a loopback server's port, and an absent key equal to an
explicit null, so two recordings have no difference exactly when their transcript hashes are equal.

How the tape entries of two recordings differ: the tape part of ``recordings diff``.

Each tape is compared as a multiset of its entries, as the transcript hash counts it: what
is compared of an entry is its arguments and its result or error, unless the result is
non-deterministic by nature (the clock, random draws), whose calls count but not their
values (:func:`~openprogram.recording.tape_rows.comparable_entry`). So:

1. an entry of A and an entry of B of the same tape that are equal pair first (same digest),
   in recorded order — the order of a tape's entries does not matter;
2. each entry of A left is compared with the *nearest* entry of B left on the same tape
   (fewest differing fields among the first 64, ties to the earliest) and the first field
   they differ at is reported (``difference at tape fetch_weather[0], field result.temp``);
3. an entry with no counterpart left is reported alone, as only in A or only in B."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from openprogram.recording.call_digest import (
    call_ending,
    comparable_events,
    comparable_request,
    request_text,
    session_identities,
    with_loopback_port_left_out,
)
from openprogram.recording.content_matching import (
    NEAREST_CANDIDATES,
    nearest_request,
    request_differences,
)
from openprogram.recording.difference import count_differences, find_first_difference
from openprogram.recording.format import TapeEntry, request_sections
from openprogram.recording.minted_ids import CallIds, Link, MintedIds, call_links
from openprogram.recording.mismatch import describe_call
from openprogram.recording.report import DIFF_SIDES, MISSING, FirstDifference, value_at
from openprogram.recording.tape_rows import comparable_entry
from openprogram.store.hashing import hash_of_digests, tape_entry_digest

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, Recording

__all__ = [
    "DifferenceKind",
    "RecordingComparison",
    "RecordingDifference",
    "compare_recordings",
    "first_difference",
    "nearest_call",
    "tape_differences",
]


_NOTHING_IGNORED: frozenset[str] = frozenset()


def tape_differences(
    a: Sequence[TapeEntry],
    b: Sequence[TapeEntry],
    digests_a: Sequence[str] | None = None,
    digests_b: Sequence[str] | None = None,
) -> list[FirstDifference]:
    """Every difference between the tape entries of A and of B (see the module's docstring),
    tape by tape in the order tapes first appear in A, then in B. ``digests_*``: the
    entries' :func:`~openprogram.store.hashing.tape_entry_digest`, when known."""
    digests_a = digests_a if digests_a is not None else [tape_entry_digest(e) for e in a]
    digests_b = digests_b if digests_b is not None else [tape_entry_digest(e) for e in b]
    waiting: dict[str, deque[int]] = {}
    for position, digest in enumerate(digests_b):
        waiting.setdefault(digest, deque()).append(position)
    paired_b: set[int] = set()
    left_a: dict[str, list[TapeEntry]] = {}
    for entry, digest in zip(a, digests_a, strict=True):
        same = waiting.get(digest)
        if same:
            paired_b.add(same.popleft())
        else:
            left_a.setdefault(entry.tape, []).append(entry)
    left_b: dict[str, list[TapeEntry]] = {}
    for position, entry in enumerate(b):
        if position not in paired_b:
            left_b.setdefault(entry.tape, []).append(entry)
    differences: list[FirstDifference] = []
    for tape in [*left_a, *(name for name in left_b if name not in left_a)]:
        others = left_b.get(tape, [])
        for entry in left_a.get(tape, []):
            nearest = _nearest(entry, others)
            if nearest is None:
                differences.append(_entry_alone(entry, "A"))
            else:
                differences.append(_entry_difference(entry, others.pop(nearest)))
        differences.extend(_entry_alone(entry, "B") for entry in others)
    return differences


def _nearest(entry: TapeEntry, candidates: list[TapeEntry]) -> int | None:
    if not candidates:
        return None
    comparable = comparable_entry(entry)
    scores = [
        count_differences(comparable, comparable_entry(other), ignore_fields=_NOTHING_IGNORED)
        for other in candidates[:NEAREST_CANDIDATES]
    ]
    return scores.index(min(scores))


def _entry_difference(a: TapeEntry, b: TapeEntry) -> FirstDifference:
    found = find_first_difference(
        comparable_entry(a), comparable_entry(b), ignore_fields=_NOTHING_IGNORED
    )
    field_path, value_a, value_b = ("", a, b) if found is None else found
    return FirstDifference(
        a.index,
        field_path,
        value_a,
        value_b,
        incoming_call_index=b.index,
        sides=DIFF_SIDES,
        tape=a.tape,
    )


def _entry_alone(entry: TapeEntry, side: str) -> FirstDifference:
    other = "B" if side == "A" else "A"
    present: Any = comparable_entry(entry)
    return FirstDifference(
        entry.index,
        "tape",
        present if side == "A" else MISSING,
        MISSING if side == "A" else present,
        detail=(
            f"only in {side}: tape {entry.label}; {other} has no unpaired entry of tape "
            f"{entry.tape} left to compare it with"
        ),
        incoming_call_index=None if side == "A" else entry.index,
        sides=DIFF_SIDES,
        tape=entry.tape,
    )


DifferenceKind = Literal["request", "only_in_a", "only_in_b", "reply", "tape"]
"""``request``: a call only in A against the nearest call only in B; ``only_in_a`` /
``only_in_b``: an unpaired call with no counterpart left; ``reply``: a paired call whose
events or ending differ; ``tape``: a tape entry of one side equal to none of the other's
(:mod:`~openprogram.store.comparison`)."""


@dataclass(frozen=True)
class RecordingDifference:
    """One difference ``diff`` found: what kind, and the report's value."""

    kind: DifferenceKind
    difference: FirstDifference
    """Its ``call_index`` is A's call (B's for ``only_in_b``), ``incoming_call_index`` B's."""

    @property
    def a_call_index(self) -> int | None:
        """A's call (for a ``tape`` difference: A's entry on the tape), or None."""
        if self.kind == "only_in_b" or self.difference.recorded is MISSING:
            return None
        return self.difference.call_index

    @property
    def b_call_index(self) -> int | None:
        """B's call (for a ``tape`` difference: B's entry on the tape), or None."""
        return None if self.kind == "only_in_a" else self.difference.incoming_call_index

    def to_json(self) -> dict[str, Any]:
        found = self.difference
        return {
            "kind": self.kind,
            "a_call_index": self.a_call_index,
            "b_call_index": self.b_call_index,
            "event_index": found.event_index,
            "field_path": found.field_path,
            "a": None if found.recorded is MISSING else found.recorded,
            "b": None if found.incoming is MISSING else found.incoming,
            "a_missing": found.recorded is MISSING,
            "b_missing": found.incoming is MISSING,
            "detail": found.detail,
            "tape": found.tape,
        }


@dataclass(frozen=True)
class RecordingComparison:
    calls_a: int
    calls_b: int
    hash_a: str
    hash_b: str
    only_in_a: list[int]
    only_in_b: list[int]
    differences: list[RecordingDifference]
    """Every difference, in the order of the module's docstring."""
    tape_entries_a: int = 0
    tape_entries_b: int = 0
    pairs: dict[int, int] = field(default_factory=dict)
    """Each of B's calls paired with one of A's: B's ``call_index`` to A's."""

    @property
    def same(self) -> bool:
        return not self.differences

    @property
    def first(self) -> RecordingDifference | None:
        """The first difference, or None."""
        return self.differences[0] if self.differences else None

    @property
    def paired_replies_differing(self) -> int:
        return sum(1 for found in self.differences if found.kind == "reply")

    @property
    def tape_entries_differing(self) -> int:
        return sum(1 for found in self.differences if found.kind == "tape")

    def to_json(self) -> dict[str, Any]:
        first = self.first
        return {
            "same": self.same,
            "calls": {"a": self.calls_a, "b": self.calls_b},
            "tape_entries": {"a": self.tape_entries_a, "b": self.tape_entries_b},
            "hash": {"a": self.hash_a, "b": self.hash_b},
            "only_in_a": self.only_in_a,
            "only_in_b": self.only_in_b,
            "differences": [found.to_json() for found in self.differences],
            "difference": None if first is None else first.to_json(),
        }


def compare_recordings(a: Recording, b: Recording) -> RecordingComparison:
    """Compare two parsed recordings (see the module's docstring)."""
    identities_a, session_a = session_identities(a.calls)
    identities_b, session_b = session_identities(b.calls)
    digests_a, links_a = call_links(identities_a)
    digests_b, links_b = call_links(identities_b)
    sessions = (session_a, session_b)
    pairs, left_a, left_b = _align(a.calls, b.calls, digests_a, digests_b, sessions)
    differences = _unpaired_differences(a.calls, b.calls, left_a, left_b, sessions)
    for index_a, index_b in pairs:
        call_a, call_b = a.calls[index_a], b.calls[index_b]
        found = _reply_difference(call_a, call_b, sessions) or _link_difference(
            (a.calls, links_a, session_a), (b.calls, links_b, session_b), index_a, index_b
        )
        if found is not None:
            differences.append(RecordingDifference("reply", found))
    tapes_a = [tape_entry_digest(entry) for entry in a.tapes]
    tapes_b = [tape_entry_digest(entry) for entry in b.tapes]
    for found in tape_differences(a.tapes, b.tapes, tapes_a, tapes_b):
        differences.append(RecordingDifference("tape", found))
    return RecordingComparison(
        calls_a=len(a.calls),
        calls_b=len(b.calls),
        hash_a=hash_of_digests(digests_a + tapes_a),
        hash_b=hash_of_digests(digests_b + tapes_b),
        only_in_a=[a.calls[index].call_index for index in left_a],
        only_in_b=[b.calls[index].call_index for index in left_b],
        differences=differences,
        tape_entries_a=len(a.tapes),
        tape_entries_b=len(b.tapes),
        pairs={b.calls[j].call_index: a.calls[i].call_index for i, j in pairs},
    )


def first_difference(a: Recording, b: Recording) -> FirstDifference | None:
    """The first difference :func:`compare_recordings` finds, or None."""
    first = compare_recordings(a, b).first
    return None if first is None else first.difference


_Sessions = tuple[MintedIds, MintedIds]
"""The ids the responses of A's calls, and of B's, made up."""


def _request_text(call: RecordedCall, session: MintedIds) -> bytes:
    """:func:`request_text` of a call of a recording whose responses made up ``session``."""
    return request_text(call, ids=CallIds(session, call.call_index))


def _align(
    calls_a: Sequence[RecordedCall],
    calls_b: Sequence[RecordedCall],
    digests_a: list[str],
    digests_b: list[str],
    sessions: _Sessions,
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """The pairs (positions in A and B, in A's order) whose replies may differ, and the
    positions left unpaired on each side."""
    by_digest: dict[str, deque[int]] = {}
    for position, digest in enumerate(digests_b):
        by_digest.setdefault(digest, deque()).append(position)
    paired_b: set[int] = set()
    rest_a: list[int] = []
    for position, digest in enumerate(digests_a):
        same = by_digest.get(digest)
        if same:
            paired_b.add(same.popleft())
        else:
            rest_a.append(position)
    by_request: dict[bytes, deque[int]] = {}
    for position, call in enumerate(calls_b):
        if position not in paired_b:
            by_request.setdefault(_request_text(call, sessions[1]), deque()).append(position)
    pairs: list[tuple[int, int]] = []
    left_a: list[int] = []
    for position in rest_a:
        same = by_request.get(_request_text(calls_a[position], sessions[0]))
        if same:
            pairs.append((position, same.popleft()))
        else:
            left_a.append(position)
    left_b = sorted(position for waiting in by_request.values() for position in waiting)
    return pairs, left_a, left_b


def _unpaired_differences(
    calls_a: Sequence[RecordedCall],
    calls_b: Sequence[RecordedCall],
    left_a: list[int],
    left_b: list[int],
    sessions: _Sessions,
) -> list[RecordingDifference]:
    differences: list[RecordingDifference] = []
    waiting = list(left_b)
    for position in left_a:
        call = calls_a[position]
        nearest = nearest_call(call, [calls_b[other] for other in waiting])
        if nearest is None:
            differences.append(RecordingDifference("only_in_a", _alone(call, "A", "B")))
            continue
        other = calls_b[waiting.pop(nearest)]
        found = _request_difference(call, other, sessions)
        differences.append(RecordingDifference("request", found))
    for position in waiting:
        call = calls_b[position]
        alone = _alone(call, "B", "A")
        differences.append(RecordingDifference("only_in_b", alone))
    return differences


def nearest_call(call: RecordedCall, candidates: Sequence[RecordedCall]) -> int | None:
    """The position in ``candidates`` of the call whose request is nearest ``call``'s, by
    replay's rule (:mod:`openprogram.recording.content_matching`: the fewest differing leaf paths
    among the first :data:`NEAREST_CANDIDATES` calls of the same boundary, the earliest on a
    tie); the first candidate when none is at ``call``'s boundary; None when there is none."""
    same: list[int] = []
    for position, other in enumerate(candidates):
        if other.boundary == call.boundary:
            same.append(position)
            if len(same) == NEAREST_CANDIDATES:
                break
    if not same:
        return 0 if candidates else None
    # Unpaired requests are never equal, so a first candidate one leaf away is the nearest.
    first = candidates[same[0]].request
    if request_differences(first, call.request, boundary=call.boundary, limit=1) <= 1:
        return same[0]
    nearest = nearest_request(
        call.request, [candidates[position].request for position in same], boundary=call.boundary
    )
    return None if nearest is None else same[nearest.position]


def _alone(call: RecordedCall, side: str, other: str) -> FirstDifference:
    present, absent = call.request, MISSING
    return FirstDifference(
        call.call_index,
        "call_index",
        present if side == "A" else absent,
        absent if side == "A" else present,
        detail=(
            f"only in {side}: {describe_call(call.boundary, call.request)}; {other} has no "
            "unpaired call left to compare it with"
        ),
        incoming_call_index=None if side == "A" else call.call_index,
        sides=DIFF_SIDES,
    )


def _request_difference(a: RecordedCall, b: RecordedCall, sessions: _Sessions) -> FirstDifference:
    def found(field_path: str, value_a: Any, value_b: Any) -> FirstDifference:
        return FirstDifference(
            a.call_index,
            field_path,
            value_a,
            value_b,
            incoming_call_index=b.call_index,
            sides=DIFF_SIDES,
        )

    if a.boundary != b.boundary:
        return found("boundary", a.boundary, b.boundary)
    compared_a, ids_a = comparable_request(a, sessions[0])
    compared_b, ids_b = comparable_request(b, sessions[1])
    if a.boundary == "http":  # as the hash compares it: a loopback server's port left out
        compared_a = with_loopback_port_left_out(compared_a)
        compared_b = with_loopback_port_left_out(compared_b)
    for section in request_sections(a.boundary):
        difference = find_first_difference(
            compared_a.get(section), compared_b.get(section), ignore_fields=(), path=section
        )
        if difference is not None and difference.field_path == "url":
            return found("url", a.request.get("url"), b.request.get("url"))  # as sent
        if difference is not None:
            return found(
                difference.field_path,
                _as_recorded(difference.recorded, ids_a, a, difference.field_path),
                _as_recorded(difference.incoming, ids_b, b, difference.field_path),
            )
    # Requests whose texts differ differ under the comparison too; a request holding
    # something beside its sections is the one way left.
    return found("", a.request, b.request)


def _reply_difference(
    a: RecordedCall, b: RecordedCall, sessions: _Sessions
) -> FirstDifference | None:
    """The first difference in the events, then in the ending, of two calls whose requests
    are equal."""

    def found(field_path: str, value_a: Any, value_b: Any, event: int | None) -> FirstDifference:
        return FirstDifference(
            a.call_index,
            field_path,
            value_a,
            value_b,
            event_index=event,
            incoming_call_index=b.call_index,
            sides=DIFF_SIDES,
        )

    compared_a = comparable_events(a, sessions[0])
    compared_b = comparable_events(b, sessions[1])
    for event_index, (event_a, event_b) in enumerate(zip(a.event_rows, b.event_rows, strict=False)):
        difference = find_first_difference(
            compared_a[event_index], compared_b[event_index], ignore_fields=(), path="event"
        )
        if difference is not None:
            return found(difference.field_path, event_a, event_b, event_index)
    if len(a.event_rows) != len(b.event_rows):
        event_index = min(len(a.event_rows), len(b.event_rows))
        return found(
            "event",
            a.event_rows[event_index] if event_index < len(a.event_rows) else MISSING,
            b.event_rows[event_index] if event_index < len(b.event_rows) else MISSING,
            event_index,
        )
    difference = find_first_difference(
        call_ending(a.outcome, a.error), call_ending(b.outcome, b.error)
    )
    if difference is not None:
        return found(difference.field_path, difference.recorded, difference.incoming, None)
    return None


def _as_recorded(value: Any, ids: CallIds, call: RecordedCall, field_path: str) -> Any:
    """A compared request value as the recording holds it: an id's name as the id, a text
    whose ids were named as the text."""
    named = ids.value_of(value)
    if named is not value or type(value) is not str or "#q" not in value:
        return named
    held = value_at(call.request, field_path)
    return held if type(held) is str else value


def _link_difference(
    a: tuple[Sequence[RecordedCall], list[list[Link]], MintedIds],
    b: tuple[Sequence[RecordedCall], list[list[Link]], MintedIds],
    index_a: int,
    index_b: int,
) -> FirstDifference | None:
    """The first id of two paired calls' requests, equal in every other way, that comes
    from another earlier call (or stands for another value) in A than in B."""
    (calls_a, links_a, session_a), (calls_b, links_b, session_b) = a, b
    call_a, call_b = calls_a[index_a], calls_b[index_b]
    for position, (link_a, link_b) in enumerate(
        zip(links_a[index_a], links_b[index_b], strict=False)
    ):
        if link_a.same_as(link_b):
            continue
        _, ids_a = comparable_request(call_a, session_a)
        _, ids_b = comparable_request(call_b, session_b)
        name = f"#q{position}"
        detail = None  # two ids of the program's own: their values say it
        if link_a.source is not None or link_b.source is not None:
            detail = (
                f"the id links to {_link_text(link_a, calls_a)} in A and to "
                f"{_link_text(link_b, calls_b)} in B"
            )
        return FirstDifference(
            call_a.call_index,
            ids_a.paths[position] if position < len(ids_a.paths) else "",
            ids_a.value_of(name),
            ids_b.value_of(name),
            detail=detail,
            incoming_call_index=call_b.call_index,
            sides=DIFF_SIDES,
        )
    return None


def _link_text(link: Link, calls: Sequence[RecordedCall]) -> str:
    if link.source is None:
        return "no earlier call's response"
    if isinstance(link.made, int) and link.made > 0:
        return (
            f"call {calls[link.source].call_index}'s response (the id it made up {link.made + 1}.)"
        )
    return f"call {calls[link.source].call_index}'s response"
