"""The *nearest* recorded request to an incoming one: what a report compares a request with
when no recorded request equals it.

Distance is counted in leaf paths, under the comparison rules (the redacted sections of the
boundary in comparison order, the ignored fields left out, an absent key equal to null):
each differing scalar counts once, and so does a key or a list item one side lacks and a
change of type, whatever the subtree under it holds
(:func:`~openprogram.recording.difference.count_differences`). The nearest candidate is the
one with the fewest differences; of several, the earliest. At most
:data:`NEAREST_CANDIDATES` candidates are looked at — the first ones given, which replay
makes the unconsumed calls of the boundary with the lowest call indexes — so a report costs
the same however long the recording; and each count stops as soon as it cannot win.

Replay uses it to name the call a drifted request is reported against; ``recordings diff``
to pair the requests of calls found in one recording only.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from openprogram.recording.difference import count_differences
from openprogram.recording.format import request_sections
from openprogram.recording.nondeterministic import request_ignore_fields

__all__ = ["NEAREST_CANDIDATES", "NearestRequest", "nearest_request", "request_differences"]

NEAREST_CANDIDATES = 64
"""The most candidates :func:`nearest_request` looks at."""


class NearestRequest(NamedTuple):
    """The nearest candidate: its position among the candidates given, and how many leaf
    paths it differs at (0: it equals the incoming request)."""

    position: int
    differences: int


def request_differences(
    recorded: dict[str, Any],
    incoming: dict[str, Any],
    *,
    boundary: str,
    ignore_fields: Iterable[str] | None = None,
    limit: int | None = None,
) -> int:
    """How many leaf paths two requests of ``boundary`` (their sections, both redacted)
    differ at, summed over the sections. ``ignore_fields``: what the comparison leaves out
    (None: the boundary's non-deterministic fields only). Counting stops as soon as the sum
    passes ``limit`` (the result is then above it)."""
    ignored = request_ignore_fields(boundary) if ignore_fields is None else frozenset(ignore_fields)
    total = 0
    for section in request_sections(boundary):
        remaining = None if limit is None else limit - total
        total += count_differences(
            recorded.get(section),
            incoming.get(section),
            ignore_fields=ignored,
            path=section,
            limit=remaining,
        )
        if limit is not None and total > limit:
            break
    return total


def nearest_request(
    incoming: dict[str, Any],
    candidates: Sequence[dict[str, Any]],
    *,
    boundary: str,
    ignore_fields: Iterable[str] | None = None,
    cap: int = NEAREST_CANDIDATES,
) -> NearestRequest | None:
    """The candidate request nearest ``incoming`` (see the module's docstring), among the
    first ``cap`` of ``candidates``; None when there is none."""
    ignored = request_ignore_fields(boundary) if ignore_fields is None else frozenset(ignore_fields)
    best: NearestRequest | None = None
    for position, recorded in enumerate(candidates[:cap]):
        limit = None if best is None else best.differences - 1  # a tie does not win
        differences = request_differences(
            recorded, incoming, boundary=boundary, ignore_fields=ignored, limit=limit
        )
        if best is None or differences < best.differences:
            best = NearestRequest(position, differences)
            if differences == 0:
                break
    return best
