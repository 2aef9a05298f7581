"""The door to replay: :class:`ReplaySession`, and what both ways of pairing a request share.

Open this module first. A session holds one read recording
(:class:`~openprogram.recording.format.Recording`) and serves its calls to whichever boundary
asks, and its tape entries to taped functions and agent tools. **Debugging a mismatch**, follow
one request from here:

1. *A boundary asks* :meth:`ReplaySession.take` with the sections of a call, before
   redaction: the provider registry's ``ReplayProvider``
   (``openprogram.provider_boundary.replay``), the HTTP boundary's transport
   (``openprogram.http_boundary.exchange``); a taped function or an agent tool asks
   :meth:`ReplaySession.take_tape` instead (:mod:`~openprogram.recording.tape_replay`).
2. *The request is redacted and given its rules*
   (:class:`~openprogram.recording.content_matching.IncomingRequest`,
   :class:`~openprogram.recording.content_matching.ComparisonRules`): redacted by the boundary's
   redactor (:mod:`~openprogram.recording.redaction`, the user's own after it:
   :mod:`~openprogram.recording.user_redaction`), compared without the boundary's fields that
   change from run to run (:func:`~openprogram.recording.call_digest.request_ignore_fields`)
   and the caller's ``ignore_fields``, an HTTP call's URL without a loopback server's port
   unless ``compare_loopback_ports`` (:mod:`~openprogram.recording.url_comparison`). The
   conversation a request repeats from one served before is not redacted, digested or
   compared again (:mod:`~openprogram.recording.shared_lists`).
3. *A matching pairs it with a call* (``match``; both are a :class:`PairingStrategy`):
   ``content`` (the default, :class:`~openprogram.recording.content_matching.ContentMatching`)
   serves the earliest unserved call *of the request's boundary* whose request equals it,
   found by digest wherever it stands, and with none reports the *nearest*; ``order``
   (:class:`OrderMatching`) compares it with the next recorded call, whatever its boundary.
   A run making more calls than recorded is a mismatch at field ``call_index``; a call
   recorded at the other boundary, at field ``boundary``.
4. *The exact comparison* (:meth:`ReplaySession.match`): section by section, the first
   difference (:func:`~openprogram.recording.difference.find_first_difference`: an absent
   key equals null, ``True``, ``1`` and ``1.0`` differ). The recorded request is compared as
   stored when the recording was redacted by the rules in force
   (:func:`~openprogram.recording.redaction.recorded_redaction_is_current`), else redacted
   again with them; a request equal to no call is compared again whole, so that its report
   reads the same either way.
5. *A mismatch* is :class:`~openprogram.errors.ReplayMismatch`, with a note where one helps
   (a moved URL, a secret the recording removed, another user redaction:
   :mod:`~openprogram.recording.mismatch`), written by
   :func:`~openprogram.recording.report.format_report`. It consumes no call and is kept in
   :attr:`ReplaySession.mismatches`, so a harness fails a run whose code caught it; it is
   found under the session's lock and kept once the lock is released.
6. *At the end*, calls never served and tape entries never read fail
   :meth:`ReplaySession.assert_consumed`. A truncated call (no ``call_end``) is served like any
   other; the boundary raises ``RecordingTruncatedError`` where its recording stops.

**A claim** (:class:`ReplayClaim`) is a collaborator a session may be given: asked before
each call and tape entry is served, told of each mismatch kept. ``openprogram exec`` gives
one (:mod:`openprogram.activation.exec_child`: only the process that claimed the recording
is served, and each mismatch is reported to exec at once), and so does a block whose child
processes may replay the same recording (:mod:`openprogram.activation.children`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from openprogram.errors import ReplayMismatch, UnconsumedCallsError
from openprogram.recording.call_digest import request_ignore_fields
from openprogram.recording.content_matching import (
    ComparisonRules,
    ContentMatching,
    IncomingRequest,
    Match,
    ServedCalls,
)
from openprogram.recording.difference import (
    DEFAULT_MATCHING,
    Matching,
    check_matching,
    find_first_difference,
)
from openprogram.recording.format import RecordedCall, Recording, TapeEntry, refuse_a_snapshot
from openprogram.recording.mismatch import (
    more_calls_than_recorded,
    moved_url_note,
    other_boundary,
    other_redaction_note,
    removed_secret_note,
)
from openprogram.recording.redaction import RequestRedactor, recorded_redaction_is_current
from openprogram.recording.shared_lists import DumpableRequest
from openprogram.recording.tape_replay import TapeReplay, ToolPolicies
from openprogram.recording.url_comparison import check_http_ignore_fields
from openprogram.recording.user_redaction import UserRedaction

__all__ = ["OrderMatching", "PairingStrategy", "ReplayClaim", "ReplaySession"]


class ReplayClaim(Protocol):
    """A condition on serving a session, and who hears of its mismatches (see the module's
    docstring)."""

    def refusal(self, session: ReplaySession) -> ReplayMismatch | None:
        """Asked before a call or a tape entry is served: why this process may not be
        served (the session keeps and raises it), or None."""
        ...

    def kept(self, session: ReplaySession, mismatch: ReplayMismatch) -> None:
        """Told each mismatch the session keeps, never under the session's lock or its
        tapes': it may report at once, reading the calls and entries never served."""
        ...


class PairingStrategy(Protocol):
    """What ``content`` and ``order`` matching both are: which recorded call a request is
    served, found under the session's lock. The session serves it, or keeps the mismatch
    once the lock is released (:meth:`ReplaySession.take`)."""

    def digest(self, request: IncomingRequest) -> bytes | None:
        """What :meth:`find` looks ``request`` up by, made before the lock is taken (content:
        the request's digest; order: nothing)."""
        ...

    def find(
        self, request: IncomingRequest, digest: bytes | None, *, report: bool
    ) -> tuple[int, IncomingRequest, ReplayMismatch | None]:
        """Under the lock: the index of the call to serve, the request to serve it (the same,
        or the request redacted whole), and the mismatch when it is not served. ``report``:
        the mismatch will be raised, so compare as a report does
        (:meth:`~openprogram.recording.content_matching.IncomingRequest.whole`)."""
        ...


class ReplaySession:
    """Serves the calls of ``recording`` to any boundary, paired by ``match`` (``"content"``
    or ``"order"``; see the module's docstring).

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields each boundary leaves out of the comparison;
    at the HTTP boundary, parts of the URL too (``url.port``, ``url.query.key``; ValueError
    for one naming no part). ``compare_loopback_ports``: compare the port of a URL whose host
    is a loopback one (see :mod:`~openprogram.recording.url_comparison`). ``claim``: asked
    before anything is served, told of each mismatch kept (:class:`ReplayClaim`).
    Thread-safe: concurrent callers are served one call each, one at a time."""

    def __init__(
        self,
        recording: Recording,
        *,
        ignore_fields: Iterable[str] = (),
        match: str = DEFAULT_MATCHING,
        tools: Mapping[str, str] | None = None,
        user_redaction: UserRedaction | None = None,
        compare_loopback_ports: bool = False,
        claim: ReplayClaim | None = None,
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
        self.claim = claim
        """Asked before a call or a tape entry is served, told of each mismatch kept."""
        self.mismatches: list[ReplayMismatch] = []
        """Every mismatch raised, kept so a harness can fail a run that swallowed one."""
        self.served = ServedCalls(recording.calls)
        """The calls served so far (read and changed under :attr:`lock`)."""
        self.lock = threading.Lock()
        """Held while a request is paired with a call and the call is served."""
        self._as_stored = recorded_redaction_is_current(recording.header, user_redaction)
        self._rules: dict[tuple[str, frozenset[str] | None], ComparisonRules] = {}
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
        self._strategy = self._pairing()

    def _pairing(self) -> PairingStrategy:
        """The matching ``match`` names, over this session's calls (made again when the user
        redaction is set: it decides how the content indexes see a recorded request)."""
        calls = self.recording.calls
        if self._matching == "order":
            return OrderMatching(calls, self.served, self.match, self.tapes.not_run_again)
        user = self._user_redaction
        return ContentMatching(calls, self.served, self.match, as_stored=self._as_stored, user=user)

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
        self._strategy = self._pairing()

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
        """The calls never served, by index; a call made within a taped call that replay serves from
        its tape instead of running (a tool replayed with policy ``replay``) is never required."""
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
        self._ask_claim()
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

        Raises :class:`ReplayMismatch` (kept in :attr:`mismatches`) otherwise. ``ignore_fields``
        replaces :meth:`ignore_fields_for` for this call. ``redaction`` tells redactors apart
        (:attr:`SecretRedactor.rules <openprogram.recording.redaction.SecretRedactor.rules>`):
        given, the conversation a request repeats from one served before is not redacted, digested
        or compared again (see :mod:`~openprogram.recording.shared_lists`); ``incoming`` may then be
        a :class:`~openprogram.recording.shared_lists.DumpableRequest`, dumped only as far as that
        needs."""
        __tracebackhide__ = True  # pytest: show the caller's line, not replay's internals
        self._ask_claim()
        rules = self.rules_for(boundary, ignore_fields)
        if not self._as_stored:
            redaction = None  # a recorded request must be redacted again: nothing is reused
        call = self._pair(IncomingRequest(rules, incoming, redactor, redaction), report=True)
        assert call is not None
        return call

    def take_equal(
        self, boundary: str, incoming: dict[str, Any], *, redactor: RequestRedactor
    ) -> RecordedCall | None:
        """The recorded call :meth:`take` would serve ``incoming``, now consumed, or None when
        :meth:`take` would raise a mismatch (nothing is then kept in :attr:`mismatches`, and no call
        is consumed): under ``content`` the earliest unconsumed call of ``boundary`` whose request
        equals it, under ``order`` the next recorded call if it equals it. What a run that records
        the calls replay cannot serve asks (the pytest plugin's ``new_episodes``)."""
        request = IncomingRequest(self.rules_for(boundary, None), incoming, redactor)
        return self._pair(request, report=False)

    def _pair(self, request: IncomingRequest, *, report: bool) -> RecordedCall | None:
        """Serve ``request`` the call the matching finds; else raise and keep the mismatch
        (``report``) or return None."""
        __tracebackhide__ = True
        digest = self._strategy.digest(request)
        with self.lock:
            index, request, mismatch = self._strategy.find(request, digest, report=report)
            if mismatch is None:
                return self.serve(index, request)
        if not report:
            return None
        raise self.keep(mismatch)  # outside the lock: keeping may report, and read the calls

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

        Never called with the session's lock or its tapes' held: the :attr:`claim` is told at once,
        and may report the mismatch, reading the calls and entries never served (exec's child does);
        a report made under the lock it reads under would wait for itself forever."""
        self.mismatches.append(mismatch)
        if self.claim is not None:
            self.claim.kept(self, mismatch)
        return mismatch

    def _ask_claim(self) -> None:
        """Raise (and keep) the :attr:`claim`'s refusal, if it has one."""
        __tracebackhide__ = True
        refusal = None if self.claim is None else self.claim.refusal(self)
        if refusal is not None:
            raise self.keep(refusal)


class OrderMatching:
    """``order`` matching: each request is compared (by ``match``) with the next of the recorded
    ``calls``, whatever its boundary: the next one not ``served``, past the calls made inside a
    taped call that is served from its tape (``not_run_again``), which are never asked for."""

    def __init__(
        self,
        calls: Sequence[RecordedCall],
        served: ServedCalls,
        match: Match,
        not_run_again: Callable[[str | None], bool],
    ) -> None:
        self._calls, self._served, self._match = calls, served, match
        self._not_run_again = not_run_again

    def digest(self, request: IncomingRequest) -> None:
        return None

    def find(
        self, request: IncomingRequest, digest: bytes | None, *, report: bool
    ) -> tuple[int, IncomingRequest, ReplayMismatch | None]:
        calls, index = self._calls, self._served.next_call
        while index < len(calls) and self._not_run_again(calls[index].within):
            index += 1
        if index >= len(calls):
            return index, request, more_calls_than_recorded(index, len(calls))
        mismatch = self._match(calls[index], request)
        if mismatch is not None and report and request.as_stored:
            # Compared again as before: the request whole, the recorded one redacted again,
            # so that the report is the same.
            mismatch = self._match(calls[index], request.whole())
        return index, request, mismatch
