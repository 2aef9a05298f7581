"""How the tape entries of two recordings differ: the tape part of ``recordings diff``.

Each tape is compared as a multiset of its entries, as the transcript hash counts it: what
is compared of an entry is its arguments and its result or error, unless the result is
non-deterministic by nature (the clock, random draws), whose calls count but not their
values (:func:`~openprogram.recording.tape_rows.comparable_entry`). So:

1. an entry of A and an entry of B of the same tape that are equal pair first (same digest),
   in recorded order — the order of a tape's entries does not matter;
2. each entry of A left is compared with the *nearest* entry of B left on the same tape
   (fewest differing fields among the first 64, ties to the earliest) and the first field
   they differ at is reported (``difference at tape fetch_weather[0], field result.temp``);
3. an entry with no counterpart left is reported alone, as only in A or only in B.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from openprogram.recording.difference import MISSING, count_differences, find_first_difference
from openprogram.recording.nearest import NEAREST_CANDIDATES
from openprogram.recording.report import DIFF_SIDES, FirstDifference
from openprogram.recording.tape_rows import TapeEntry, comparable_entry
from openprogram.store.hashing import tape_entry_digest

__all__ = ["tape_differences"]

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
                differences.append(_alone(entry, "A"))
            else:
                differences.append(_entry_difference(entry, others.pop(nearest)))
        differences.extend(_alone(entry, "B") for entry in others)
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


def _alone(entry: TapeEntry, side: str) -> FirstDifference:
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
