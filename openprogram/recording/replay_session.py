"""One replay of one recording, shared by every boundary that replays from it.

A :class:`ReplaySession` holds a read :class:`~openprogram.recording.format.Recording` and
serves its calls to whichever boundary asks (the provider registry's ``ReplayProvider``, the
HTTP boundary's transport), and its tape entries to taped functions and agent tools
(:attr:`ReplaySession.tapes`, :mod:`~openprogram.recording.tape_replay`).

**A request** reaches :meth:`ReplaySession.take` as the sections of a call at its boundary,
before redaction. Redacted by the boundary's redactor, it is compared with a recorded call
section by section, without the boundary's non-deterministic fields and the caller's
``ignore_fields``, an absent key equal to null, an HTTP call's URL without a loopback
server's port unless ``compare_loopback_ports`` (and part by part when an ignored field names
a part of it: :mod:`~openprogram.recording.url_comparison`; :class:`ComparisonRules`). A
mismatch in the URL gets a note naming both URLs and the fix
(:func:`~openprogram.recording.mismatch.moved_url_note`). The recorded
request is compared as stored when the recording was redacted by the rules in force
(:func:`~openprogram.recording.redaction.recorded_redaction_is_current`), else redacted
again with them. The conversation a request repeats from one served before is not redacted,
digested or compared again (:mod:`~openprogram.recording.shared_lists`); a request equal to
no recorded call is compared again whole, so that its report reads the same either way.

**Pairing** follows ``match``, one strategy each, each with ``take`` (serve the request or
raise) and ``take_equal`` (serve it only if it equals a call):

* ``content`` (default, :class:`~openprogram.recording.content_matching.ContentMatching`) —
  the earliest unconsumed call *of the request's boundary* whose request equals it, found by
  digest wherever it stands; with none, the report names the *nearest* one;
* ``order`` (:class:`OrderMatching`) — the next recorded call, whatever its boundary: a call
  recorded at the other boundary is a mismatch at field ``boundary`` naming both (``recorded
  an HTTP call (POST https://…), incoming a provider call (echo:echo)``), any other the first
  difference (``body.messages[2].content``).

A run making more calls than the recording holds is a mismatch at field ``call_index``. The
session holds what both strategies share: the exact comparison (:meth:`ReplaySession.match`),
the account of the calls served (:class:`ServedCalls`), the lock, and the mismatches.

**A mismatch** consumes no call, and is kept in :attr:`ReplaySession.mismatches`, so a
harness can fail a run whose code caught one; it is found under the lock and kept once the
lock is released (:meth:`ReplaySession.keep` may report it at once). A truncated call (no
``call_end``) is served like any other; the boundary then raises ``RecordingTruncatedError``
where its recording stops. Calls never served and tape entries never read fail
:meth:`~ReplaySession.assert_consumed`.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from openprogram.errors import ReplayMismatch, UnconsumedCallsError
from openprogram.recording.call_digest import request_ignore_fields
from openprogram.recording.content_matching import ContentMatching
from openprogram.recording.difference import (
    DEFAULT_MATCHING,
    Matching,
    check_matching,
    find_first_difference,
    ignore_rules,
)
from openprogram.recording.format import (
    RecordedCall,
    Recording,
    refuse_a_snapshot,
    request_sections,
)
from openprogram.recording.mismatch import (
    more_calls_than_recorded,
    moved_url_note,
    other_boundary,
    other_redaction_note,
    removed_secret_note,
)
from openprogram.recording.redaction import RequestRedactor, recorded_redaction_is_current
from openprogram.recording.shared_lists import (
    DumpableRequest,
    IncomingRequest,
    ServedConversations,
)
from openprogram.recording.tape_replay import TapeReplay, ToolPolicies
from openprogram.recording.tape_rows import TapeEntry
from openprogram.recording.url_comparison import (
    UrlComparison,
    check_http_ignore_fields,
    http_ignore_fields,
    url_comparison,
)
from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "ComparisonRules",
    "OrderMatching",
    "ReplaySession",
    "ServedCalls",
]


class ReplaySession:
    """Serves the calls of ``recording`` to any boundary, paired by ``match`` (``"content"``
    or ``"order"``; see the module's docstring).

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields each boundary leaves out of the comparison;
    at the HTTP boundary, parts of the URL too (``url.port``, ``url.query.key``; ValueError
    for one naming no part). ``compare_loopback_ports``: compare the port of a URL whose host
    is a loopback one (see :mod:`~openprogram.recording.url_comparison`).
    Thread-safe: concurrent callers are served one call each, one at a time.
    """

    def __init__(
        self,
        recording: Recording,
        *,
        ignore_fields: Iterable[str] = (),
        match: str = DEFAULT_MATCHING,
        tools: Mapping[str, str] | None = None,
        user_redaction: UserRedaction | None = None,
        compare_loopback_ports: bool = False,
    ) -> None:
        refuse_a_snapshot(recording)
        self.recording = recording
        self._user_redaction = user_redaction
        self._ignore_fields = frozenset(ignore_fields)
        check_http_ignore_fields(self._ignore_fields, "ignore_fields")
        self.compare_loopback_ports = compare_loopback_ports
        """Whether an HTTP call's URL is compared with its port when its host is a loopback
        one (by default it is not: :mod:`~openprogram.recording.url_comparison`)."""
        self._matching: Matching = check_matching(match)
        self.mismatches: list[ReplayMismatch] = []
        """Every mismatch raised, kept so a harness can fail a run that swallowed one."""
        self.served = ServedCalls(recording.calls)
        """The calls served so far (read and changed under :attr:`lock`)."""
        self.lock = threading.Lock()
        """Held while a request is paired with a call and the call is served."""
        self._as_stored = recorded_redaction_is_current(recording.header, user_redaction)
        self._rules: dict[tuple[str, frozenset[str] | None], ComparisonRules] = {}
        self._strategy: ContentMatching | OrderMatching = (
            ContentMatching(self) if self._matching == "content" else OrderMatching(self)
        )
        self.tapes = TapeReplay(
            recording.tapes,
            path=str(recording.path),
            keep=self.keep,
            match=self._matching,
            tool_policies=ToolPolicies(tools),
        )
        """The recording's tape entries, served to taped functions and agent tools by
        :meth:`take_tape`; ``tools`` (tool name or ``"*"`` to policy) says which tools are
        replayed, checked or run live."""

    @property
    def ignore_fields(self) -> frozenset[str]:
        """The caller's own fields to ignore, for every boundary."""
        return self._ignore_fields

    @property
    def matching(self) -> Matching:
        """How a request is paired with a recorded call: ``content`` or ``order``."""
        return self._matching

    @property
    def user_redaction(self) -> UserRedaction | None:
        """The user redaction both sides of every comparison are redacted with, after the
        built-in rules (the boundaries build their redactors with it)."""
        return self._user_redaction

    @user_redaction.setter
    def user_redaction(self, user: UserRedaction | None) -> None:
        """Set before the first request: it decides how recorded requests are compared."""
        self._user_redaction = user
        self._as_stored = recorded_redaction_is_current(self.recording.header, user)

    @property
    def compares_as_stored(self) -> bool:
        """Whether recorded requests are compared as stored: the recording was redacted by
        the rules in force and this session's user redaction (else each recorded request is
        redacted again before it is compared)."""
        return self._as_stored

    @property
    def path(self) -> Path:
        return self.recording.path

    @property
    def calls_consumed(self) -> int:
        return self.served.count

    @property
    def served_calls(self) -> list[int]:
        """The calls served so far, by index."""
        return self.served.indexes()

    @property
    def unconsumed_calls(self) -> list[int]:
        """The calls never served, by index; a call made within a taped call that replay
        serves from its tape instead of running (a tool replayed with policy ``replay``) is
        never required."""
        served, calls, tapes = self.served.flags, self.recording.calls, self.tapes
        with self.lock:  # a report may read it while another thread is served a call
            return [
                index
                for index in range(self.served.next_call, len(served))
                if not served[index] and not tapes.not_run_again(calls[index].within)
            ]

    def ignore_fields_for(self, boundary: str) -> frozenset[str]:
        """What a request of ``boundary`` is compared without: the boundary's
        non-deterministic fields and the caller's ``ignore_fields``."""
        return request_ignore_fields(boundary) | self._ignore_fields

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested, or
        tape entries never read (see :meth:`unconsumed_error`)."""
        error = self.unconsumed_error()
        if error is not None:
            raise error

    @property
    def mismatched_calls(self) -> list[int]:
        """The calls never served that a request was compared with and differed from: they
        were requested, and :attr:`mismatches` says how they differed."""
        differed = {mismatch.call_index for mismatch in self.mismatches if not mismatch.tape}
        return [index for index in self.unconsumed_calls if index in differed]

    @property
    def never_requested_calls(self) -> list[int]:
        """The calls never served that no request was found to differ from either."""
        differed = {mismatch.call_index for mismatch in self.mismatches if not mismatch.tape}
        return [index for index in self.unconsumed_calls if index not in differed]

    def unconsumed_error(self) -> UnconsumedCallsError | None:
        """What :meth:`assert_consumed` raises, or None: the calls never requested and the
        tape entries never read (the tapes of tools replayed ``live`` left out). A call a
        request differed from is not among them: its mismatch is the report."""
        unconsumed, tapes = self.never_requested_calls, self.tapes.unconsumed()
        if not unconsumed and not tapes:
            return None
        return UnconsumedCallsError(
            str(self.path),
            unconsumed,
            len(self.recording.calls),
            tapes=tapes,
            appended_sessions=self.recording.appended_sessions,
        )

    def take_tape(self, tape: str, args: dict[str, Any]) -> TapeEntry:
        """The entry of ``tape`` a call with ``args`` (JSON, redacted as recorded) is served
        by; raises (and keeps) :class:`ReplayMismatch` when none is unread. See
        :mod:`~openprogram.recording.tape_replay`."""
        __tracebackhide__ = True
        return self.tapes.take(tape, args)

    def take(
        self,
        boundary: str,
        incoming: dict[str, Any] | DumpableRequest,
        *,
        redactor: RequestRedactor,
        ignore_fields: Iterable[str] | None = None,
        redaction: Hashable = None,
    ) -> RecordedCall:
        """The recorded call ``incoming`` (the request sections of a call at ``boundary``,
        before redaction) is paired with; it then counts as consumed.

        Raises :class:`ReplayMismatch` (kept in :attr:`mismatches`) otherwise.
        ``ignore_fields`` replaces :meth:`ignore_fields_for` for this call. ``redaction``
        tells redactors apart (:attr:`SecretRedactor.rules
        <openprogram.recording.redaction.SecretRedactor.rules>`): given, the conversation a
        request repeats from one served before is not redacted, digested or compared again
        (see :mod:`~openprogram.recording.shared_lists`); ``incoming`` may then be a
        :class:`~openprogram.recording.shared_lists.DumpableRequest`, dumped only as far as
        that needs.
        """
        __tracebackhide__ = True  # pytest: show the caller's line, not replay's internals
        rules = self.rules_for(boundary, ignore_fields)
        if not self._as_stored:
            redaction = None  # a recorded request must be redacted again: nothing is reused
        return self._strategy.take(IncomingRequest(rules, incoming, redactor, redaction))

    def take_equal(
        self,
        boundary: str,
        incoming: dict[str, Any],
        *,
        redactor: RequestRedactor,
    ) -> RecordedCall | None:
        """The recorded call :meth:`take` would serve ``incoming``, now consumed, or None
        when :meth:`take` would raise a mismatch (nothing is then kept in
        :attr:`mismatches`, and no call is consumed): under ``content`` the earliest
        unconsumed call of ``boundary`` whose request equals it, under ``order`` the next
        recorded call if it equals it. What a run that records the calls replay cannot serve
        asks (the pytest plugin's ``new_episodes``)."""
        request = IncomingRequest(self.rules_for(boundary, None), incoming, redactor)
        return self._strategy.take_equal(request)

    def rules_for(self, boundary: str, ignore_fields: Iterable[str] | None) -> ComparisonRules:
        """How a request of ``boundary`` is compared: without :meth:`ignore_fields_for`, or
        without ``ignore_fields`` when given."""
        key = (boundary, None if ignore_fields is None else frozenset(ignore_fields))
        rules = self._rules.get(key)
        if rules is None:
            ignored = self.ignore_fields_for(boundary) if key[1] is None else key[1]
            rules = self._rules.setdefault(
                key,
                ComparisonRules(
                    boundary, ignored, compare_loopback_ports=self.compare_loopback_ports
                ),
            )
        return rules

    def serve(self, index: int, request: IncomingRequest) -> RecordedCall:
        """Serve the call at ``index`` to ``request``, found equal to it (under the lock)."""
        self.served.serve(index)
        call = self.recording.calls[index]
        request.served(call)
        return call

    def match(self, call: RecordedCall, request: IncomingRequest) -> ReplayMismatch | None:
        """Why ``request`` is not ``call``, or None when it is: the exact comparison of one
        request with one recorded call. The recorded request is redacted again with the
        request's redactor first, unless the request is compared ``as_stored``."""
        boundary, incoming = request.boundary, request.redacted
        if call.boundary != boundary:
            return other_boundary(call, boundary, incoming)
        recorded = call.request if request.as_stored else request.redactor(call.request)
        rules = request.rules
        for section in rules.sections:
            old, new = recorded.get(section), incoming.get(section)
            if section == "url" and rules.url is not None:
                old_form, new_form = rules.url.form(old), rules.url.form(new)
                difference = find_first_difference(
                    old_form, new_form, ignore_fields=rules.ignored, path="url"
                )
                if difference is not None and difference.field_path == "url":
                    difference = difference._replace(recorded=old, incoming=new)  # as sent
            else:
                difference = find_first_difference(
                    old, new, ignore_fields=rules.ignored, path=section
                )
            if difference is not None:
                note = None
                if section == "url":
                    note = moved_url_note(
                        recorded.get("url"),
                        incoming.get("url"),
                        compare_loopback_ports=self.compare_loopback_ports,
                    )
                return ReplayMismatch(
                    call.call_index,
                    difference.field_path,
                    difference.recorded,
                    difference.incoming,
                    note=note or self._note(incoming, call.call_index),
                )
        return None

    def _note(self, incoming: dict[str, Any], call_index: int) -> str | None:
        """A third line for a mismatch: a secret the recording removed that the run sent, or
        a user redaction other than the recording's."""
        note = removed_secret_note(incoming, self.recording.calls[:call_index])
        return note or other_redaction_note(self.recording.header, self.user_redaction)

    def keep(self, mismatch: ReplayMismatch) -> ReplayMismatch:
        """Remember ``mismatch`` (raised by this session or by a boundary serving one of its
        calls) and return it, to be raised.

        Never called with the session's lock or its tapes' held: a subclass may report the
        mismatch at once, reading the calls and entries never served (exec's child does), and
        a report made under the lock it reads under would wait for itself forever."""
        self.mismatches.append(mismatch)
        return mismatch


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


class OrderMatching:
    """``order`` matching: each request is compared with the next recorded call, whatever
    its boundary (the next one not served, past the calls made inside a taped call that is
    served from its tape, which are never asked for)."""

    def __init__(self, session: ReplaySession) -> None:
        self._session = session

    def take(self, request: IncomingRequest) -> RecordedCall:
        """The next call, if ``request`` equals it; else raise (and keep) the mismatch."""
        __tracebackhide__ = True
        session = self._session
        calls = session.recording.calls
        with session.lock:
            index = self._next_call()
            if index >= len(calls):
                mismatch: ReplayMismatch | None = more_calls_than_recorded(index, len(calls))
            else:
                mismatch = session.match(calls[index], request)
                if mismatch is not None and request.as_stored:
                    # Compared again as before: the request whole, the recorded one redacted
                    # again, so that the report is the same.
                    mismatch = session.match(calls[index], request.whole())
            if mismatch is None:
                return session.serve(index, request)
        raise session.keep(mismatch)  # outside the lock: keeping may report, and read the calls

    def take_equal(self, request: IncomingRequest) -> RecordedCall | None:
        """The next call if ``request`` equals it, else None."""
        session = self._session
        calls = session.recording.calls
        with session.lock:
            index = self._next_call()
            if index >= len(calls) or session.match(calls[index], request) is not None:
                return None
            return session.serve(index, request)

    def _next_call(self) -> int:
        """The index of the next call (past the end when none is left)."""
        session = self._session
        index = session.served.next_call
        calls = session.recording.calls
        while index < len(calls) and session.tapes.not_run_again(calls[index].within):
            index += 1
        return index


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
