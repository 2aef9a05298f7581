"""What replay pairs a request with a recorded call by: the request, its rules, the calls served.

Both matchings (:mod:`~openprogram.recording.replay_session`, the door to replay) work on the
three values this module holds:

* :class:`IncomingRequest` — one request, its sections redacted as its boundary redacts
  them, through the conversations served before when it may be
  (:mod:`~openprogram.recording.shared_lists`), with the same request redacted whole for a
  report (:meth:`IncomingRequest.whole`);
* :class:`ComparisonRules` — what a request of one boundary is compared without (the
  boundary's non-deterministic fields and the caller's ``ignore_fields``), how an HTTP call's
  URL is compared (:mod:`~openprogram.recording.url_comparison`), and the conversations served
  under those rules;
* :class:`ServedCalls` — which recorded calls one replay has served so far;

and are given the session's exact comparison of a request with one call (:data:`Match`).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from openprogram.errors import ReplayMismatch
from openprogram.recording.difference import ignore_rules
from openprogram.recording.format import RecordedCall, request_sections
from openprogram.recording.shared_lists import (
    DumpableRequest,
    ListTexts,
    ServedConversations,
    dumped,
)
from openprogram.recording.url_comparison import UrlComparison, http_ignore_fields, url_comparison

if TYPE_CHECKING:
    from openprogram.recording.redaction import RequestRedactor

__all__ = ["ComparisonRules", "IncomingRequest", "Match", "ServedCalls"]


Match = Callable[[RecordedCall, "IncomingRequest"], ReplayMismatch | None]
"""The exact comparison of a request with one recorded call (the session's ``match``): why
the request is not the call, or None when it is."""


class ComparisonRules:
    """How the requests of ``boundary`` are compared, leaving out the fields ``ignored``:
    the sections in comparison order, the compiled ignore rules, how an HTTP call's URL is
    compared (``url``; None at any other boundary), and the conversations served under them
    (none with an ignored field path: a list may then be shorter and still equal, so no
    served list is reused)."""

    __slots__ = ("boundary", "conversations", "ignore_rules", "ignored", "sections", "url")

    def __init__(
        self, boundary: str, ignored: frozenset[str], *, compare_loopback_ports: bool = False
    ) -> None:
        self.boundary = boundary
        self.url: UrlComparison | None = None
        if boundary == "http":
            ignored = http_ignore_fields(ignored)
            self.url = url_comparison(ignored, compare_loopback_ports=compare_loopback_ports)
        self.ignored = ignored
        self.ignore_rules = ignore_rules(ignored)
        self.sections = self.ignore_rules.compared_sections(request_sections(boundary))
        self.conversations = ServedConversations() if self.ignore_rules.paths is None else None


class IncomingRequest:
    """One request replay pairs with a recorded call: ``redacted``, its sections as its
    boundary redacts them, compared under ``rules`` (the session's for its boundary).

    Given ``redaction`` (what tells redactors apart; the session passes it only when it
    compares recorded requests as stored) and rules that keep served conversations, it is
    redacted through them and ``as_stored``: its shared lists may hold the items of a call
    served before (``starts`` maps each list so built to the recorded list it starts with),
    and recorded requests are compared with it as stored. :meth:`whole` is the same request
    redacted whole, compared with recorded requests redacted again: what a report compares.
    """

    __slots__ = (
        "_remember",
        "_source",
        "as_stored",
        "boundary",
        "redacted",
        "redactor",
        "rules",
        "starts",
    )

    def __init__(
        self,
        rules: ComparisonRules,
        source: dict[str, Any] | DumpableRequest,
        redactor: RequestRedactor,
        redaction: Hashable = None,
    ) -> None:
        self.rules = rules
        self.boundary = rules.boundary
        self.redactor = redactor
        self._source = source
        self._remember: tuple[Hashable, ListTexts] | None = None
        self.starts: dict[str, list[Any]] | None = None
        self.as_stored = redaction is not None and rules.conversations is not None
        if rules.conversations is None or redaction is None:
            self.redacted = redactor(dumped(source))
            return
        self.redacted, texts, self.starts = rules.conversations.redacted(
            rules.boundary, source, redactor, redaction
        )
        self._remember = (redaction, texts)

    def whole(self) -> IncomingRequest:
        """This request redacted whole (the same object if it is)."""
        if not self.as_stored:
            return self
        return IncomingRequest(self.rules, self._source, self.redactor)

    def served(self, call: RecordedCall) -> None:
        """It was served ``call``, equal to it: remembered, for the requests that extend it."""
        if self._remember is not None and self.rules.conversations is not None:
            redaction, texts = self._remember
            self.rules.conversations.remember(self.rules.boundary, redaction, texts, call.request)


class ServedCalls:
    """Which of a recording's calls (``calls``, in index order) one replay has served.

    A flag per call, how many are served, the first call not served yet (every call before
    it is served), and per boundary where its first unserved call stands, so that finding
    the open calls of a boundary never walks the calls served long ago again. Not
    thread-safe: the session calls it under its lock.
    """

    __slots__ = ("_first_open", "_of_boundary", "count", "flags", "next_call")

    def __init__(self, calls: Sequence[RecordedCall]) -> None:
        self.flags = bytearray(len(calls))
        """1 at the index of each call served, 0 elsewhere."""
        self.count = 0
        """How many calls are served."""
        self.next_call = 0
        """No call before it is unserved (under ``order`` matching: the next call)."""
        self._of_boundary: dict[str, list[int]] = {}
        for call in calls:
            self._of_boundary.setdefault(call.boundary, []).append(call.call_index)
        self._first_open: dict[str, int] = dict.fromkeys(self._of_boundary, 0)

    def serve(self, index: int) -> None:
        """Count the call at ``index`` as served."""
        self.flags[index] = 1
        self.count += 1
        served = self.flags
        while self.next_call < len(served) and served[self.next_call]:
            self.next_call += 1

    def indexes(self) -> list[int]:
        """The calls served so far, by index."""
        return [index for index, served in enumerate(self.flags) if served]

    def open_calls(self, boundary: str, limit: int) -> list[int]:
        """The first ``limit`` unserved calls of ``boundary``, by index."""
        of_boundary = self._of_boundary.get(boundary, [])
        position = self._first_open.get(boundary, 0)
        served = self.flags
        while position < len(of_boundary) and served[of_boundary[position]]:
            position += 1
        if boundary in self._first_open:
            self._first_open[boundary] = position
        found: list[int] = []
        for index in of_boundary[position:]:
            if not served[index]:
                found.append(index)
                if len(found) == limit:
                    break
        return found
