"""Finding the recorded call a request is paired with under ``content`` matching.

Under ``content`` matching (the default, :mod:`~openprogram.recording.replay_session`) a
:class:`~openprogram.recording.replay_session.ReplaySession` serves a request the earliest
unconsumed call *of the request's boundary* whose request equals it, wherever it stands in
the recording: calls made concurrently replay whatever order they arrive in, and identical
requests recorded several times are served in recorded order. :class:`ContentMatching` does
the looking up for the session:

* Recorded calls are indexed by the digest of their comparable request
  (:mod:`~openprogram.recording.request_index`, built once, at the first request of each
  boundary), so a lookup never scans the unconsumed calls; a call found by digest is
  confirmed by the exact comparison (the session's ``match``).
* With no equal request, the report compares the request with the *nearest* unconsumed call
  of its boundary (:mod:`~openprogram.recording.content_matching`: fewest differing leaf paths among
  the 64 unconsumed calls with the lowest indexes, ties to the lowest index) and names that
  call; a request one field away from the next call of its boundary is therefore reported
  against that call, exactly as by order (no call can be nearer, and a tie goes to it).
* With no unconsumed call of the boundary left, the earliest unconsumed call of the other
  boundary is a mismatch at field ``boundary``; with none at all, at field ``call_index``.

Every method runs under the session's lock.

The *nearest* recorded request to an incoming one: what a report compares a request with
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
from typing import TYPE_CHECKING, Any, NamedTuple

from openprogram.errors import ReplayMismatch
from openprogram.recording.difference import IgnoreRules, count_differences, ignore_rules
from openprogram.recording.format import request_sections
from openprogram.recording.mismatch import more_calls_than_recorded
from openprogram.recording.nondeterministic import request_ignore_fields
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.request_index import RequestDigester, RequestIndex

if TYPE_CHECKING:
    from openprogram.recording.replay_session import ReplaySession, ServedCalls
    from openprogram.recording.request_delta import RequestRedactor

__all__ = [
    "NEAREST_CANDIDATES",
    "ContentMatching",
    "NearestRequest",
    "nearest_request",
    "request_differences",
]


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


class ContentMatching:
    """The ``content`` lookups of ``session``, whose served calls are ``served``: the
    recorded calls' digest indexes (one per boundary and ignored fields) and the digesters
    (one per set of ignore rules) that digest recorded and incoming requests alike."""

    def __init__(self, session: ReplaySession, served: ServedCalls) -> None:
        self._session = session
        self._served = served
        self._indexes: dict[tuple[str, frozenset[str]], RequestIndex] = {}
        self._digesters: dict[IgnoreRules, RequestDigester] = {}

    def digester(self, rules: IgnoreRules) -> RequestDigester:
        """The one digester for ``rules``."""
        digester = self._digesters.get(rules)
        if digester is None:
            digester = self._digesters[rules] = RequestDigester(rules)
        return digester

    def equal_by_digest(
        self,
        boundary: str,
        digest: bytes,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignored: frozenset[str],
        *,
        as_stored: bool,
    ) -> int | None:
        """The earliest unserved call of ``boundary`` whose request has ``digest`` and
        equals ``incoming``, or None."""
        session = self._session
        key = (boundary, ignored)
        index = self._indexes.get(key)
        if index is None:
            rules = ignore_rules(ignored)
            index = self._indexes[key] = RequestIndex(
                session.recording.calls,
                boundary,
                rules,
                self._index_redactor(boundary),
                self.digester(rules),
                keep=session.compares_as_stored,
            )
        calls = session.recording.calls
        for call_index in index.candidates(digest, self._served.flags):
            mismatch = session.match(
                calls[call_index], boundary, incoming, redactor, ignored, as_stored=as_stored
            )
            if mismatch is None:
                return call_index
        return None

    def equal_or_nearest(
        self,
        boundary: str,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignored: frozenset[str],
    ) -> int:
        """No digest found an equal call: the nearest unserved call of ``boundary`` when it
        equals ``incoming`` after all (a recorded request holding, as text, a credential
        only this call's redactor knows, which the index saw unredacted); else raise the
        mismatch against it (kept by the session)."""
        chosen, mismatch = self.nearest_open_call(boundary, incoming, redactor, ignored)
        if mismatch is None:
            return chosen
        raise self._session.keep(mismatch)

    def nearest_open_call(
        self,
        boundary: str,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignored: frozenset[str],
    ) -> tuple[int, ReplayMismatch | None]:
        """The nearest unserved call of ``boundary`` and why ``incoming`` is not it (None:
        it is); with no unserved call of ``boundary``, -1 and the mismatch of
        :meth:`_nothing_left`."""
        candidates = self._served.open_calls(boundary, NEAREST_CANDIDATES)
        calls = self._session.recording.calls
        if not candidates:
            return -1, self._nothing_left(boundary, incoming, redactor, ignored)
        nearest = nearest_request(
            incoming,
            [redactor(calls[index].request) for index in candidates],
            boundary=boundary,
            ignore_fields=ignored,
        )
        assert nearest is not None
        chosen = candidates[nearest.position]
        return chosen, self._session.match(calls[chosen], boundary, incoming, redactor, ignored)

    def _index_redactor(self, boundary: str) -> RequestRedactor:
        """How the index sees a recorded request: as stored, when the recording was
        redacted by the current rules and the session's user redaction (redacting it again
        changes nothing but a credential this process knows that the recording process did
        not); else redacted again, with the current rules, the session's user redaction and
        the process's known credentials."""
        if self._session.compares_as_stored:
            return _as_stored
        redactor = SecretRedactor(user=self._session.user_redaction)
        return redactor.redact_http_request if boundary == "http" else redactor.redact_request

    def _nothing_left(
        self,
        boundary: str,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignored: frozenset[str],
    ) -> ReplayMismatch:
        """The mismatch for a request with no unserved call of its boundary left."""
        calls = self._session.recording.calls
        served = self._served
        if served.next_call >= len(calls):
            return more_calls_than_recorded(served.count, len(calls))
        head = calls[served.next_call]  # of the other boundary: a mismatch at ``boundary``
        mismatch = self._session.match(head, boundary, incoming, redactor, ignored)
        assert mismatch is not None
        return mismatch


def _as_stored(request: dict[str, Any]) -> dict[str, Any]:
    return request
