"""One replay of one recording, shared by every boundary that replays from it.

A :class:`ReplaySession` holds a read :class:`~openprogram.recording.format.Recording` and
serves its calls to whichever boundary asks: the provider registry's ``ReplayProvider`` and
the HTTP boundary's transport take their calls from one session. :meth:`ReplaySession.take`
pairs the incoming request with a recorded call and hands that call over, or raises
:class:`~openprogram.recording.mismatch.ReplayMismatch`. Requests are compared by their
sections, the incoming one redacted by the boundary's redactor first and the recorded one
as stored when the recording was redacted by the rules in force
(:func:`~openprogram.recording.redaction.recorded_redaction_is_current`), else
redacted again with them, without the boundary's non-deterministic fields and the caller's
``ignore_fields``, an absent key equal to null. The conversation a request repeats from one
served before is not redacted, digested or compared again
(:mod:`~openprogram.recording.served_conversations`).

How a request is paired with a call is the session's ``match``
(:mod:`~openprogram.recording.replay_session`):

* ``content`` (default) — the earliest unconsumed call *of the request's boundary* whose
  request equals it, wherever it stands in the recording, found through a digest index of
  the recorded requests; with no equal request, the report names the *nearest* unconsumed
  call of its boundary (:mod:`~openprogram.recording.content_matching` tells how).
* ``order`` — the next recorded call, whatever its boundary: a call recorded at the other
  boundary is a mismatch at field ``boundary`` naming both (``recorded an HTTP call (POST
  https://…), incoming a provider call (echo:echo)``); otherwise the first difference is
  reported (``body.messages[2].content``, ``context.messages[0].content``); a run making
  more calls than the recording holds is a mismatch at field ``call_index``.

A mismatch consumes no call. Every mismatch raised is kept in
:attr:`ReplaySession.mismatches`, so a harness can fail a run whose code caught one. A
truncated call (no ``call_end``) is served like any other; the boundary then raises
``RecordingTruncatedError`` where its recording stops.

The session also serves the recording's tape entries (:attr:`ReplaySession.tapes`,
:meth:`ReplaySession.take_tape`), to taped functions and agent tools; tape entries never read
fail :meth:`~ReplaySession.assert_consumed` as unconsumed calls do.

Which of a recording's calls one replay has served, and which are still open.

A :class:`~openprogram.recording.replay_session.ReplaySession` serves each recorded call at
most once. :class:`ServedCalls` keeps that account: a flag per call, how many are served, the
first call not served yet (every call before it is served), and per boundary where its first
unserved call stands, so that finding the open calls of a boundary never walks the calls
served long ago again. It is not thread-safe: the session calls it under its lock.

How replay pairs an incoming request with a recorded call: by content, or by order.

* ``content`` (the default): each request is served by the earliest unconsumed recorded
  call of its boundary whose request equals it under the comparison rules, whatever the
  order the calls arrive in — concurrent agents, parallel tool calls and batched
  evaluations replay although their calls interleave differently from run to run;
* ``order``: each request must equal the next recorded call, whatever its boundary (strict
  call-index replay).

This module imports nothing, so the plan and the configuration can check a matching name
without loading the replay machinery.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from openprogram.errors import ReplayMismatch, UnconsumedCallsError
from openprogram.recording.content_matching import ContentMatching
from openprogram.recording.difference import (
    DEFAULT_MATCHING,
    Matching,
    check_matching,
    find_first_difference,
    ignore_rules,
)
from openprogram.recording.format import RecordedCall, Recording, request_sections
from openprogram.recording.mismatch import (
    describe_call,
    more_calls_than_recorded,
    other_redaction_note,
    removed_secret_note,
)
from openprogram.recording.nondeterministic import request_ignore_fields
from openprogram.recording.redaction import recorded_redaction_is_current
from openprogram.recording.request_delta import RequestRedactor
from openprogram.recording.served_conversations import DumpableRequest, ServedConversations, dumped
from openprogram.recording.tape_replay import TapeReplay, ToolPolicies
from openprogram.recording.tape_rows import TapeEntry
from openprogram.recording.user_redaction import UserRedaction

__all__ = ["ReplaySession", "ServedCalls"]


class ServedCalls:
    """The served calls of one replay of ``calls`` (a recording's, in index order)."""

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


class ReplaySession:
    """Serves the calls of ``recording`` to any boundary, paired by ``match`` (``"content"``
    or ``"order"``; see the module's docstring).

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields each boundary leaves out of the comparison.
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
    ) -> None:
        self.recording = recording
        self._user_redaction = user_redaction
        self.ignore_fields = frozenset(ignore_fields)
        """The caller's own fields to ignore, for every boundary."""
        self.matching: Matching = check_matching(match)
        """How a request is paired with a recorded call: ``content`` or ``order``."""
        self.mismatches: list[ReplayMismatch] = []
        """Every mismatch raised, kept so a harness can fail a run that swallowed one."""
        self._served = ServedCalls(recording.calls)
        self._content = ContentMatching(self, self._served)
        self._as_stored = recorded_redaction_is_current(recording.header, user_redaction)
        """Recorded requests are compared as stored: redacted by the rules in force."""
        self._conversations: dict[frozenset[str], ServedConversations] = {}
        self._lock = threading.Lock()
        self.tapes = TapeReplay(
            recording.tapes,
            path=str(recording.path),
            keep=self.keep,
            match=self.matching,
            tool_policies=ToolPolicies(tools),
        )
        """The recording's tape entries, served to taped functions and agent tools by
        :meth:`take_tape`; ``tools`` (tool name or ``"*"`` to policy) says which tools are
        replayed, checked or run live."""

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
        return self._served.count

    @property
    def served_calls(self) -> list[int]:
        """The calls served so far, by index."""
        return self._served.indexes()

    @property
    def unconsumed_calls(self) -> list[int]:
        """The calls never served, by index; a call made within a taped call that replay
        serves from its tape instead of running (a tool replayed with policy ``replay``) is
        never required."""
        served, calls, tapes = self._served.flags, self.recording.calls, self.tapes
        return [
            index
            for index in range(self._served.next_call, len(served))
            if not served[index] and not tapes.not_run_again(calls[index].within)
        ]

    def ignore_fields_for(self, boundary: str) -> frozenset[str]:
        """What a request of ``boundary`` is compared without: the boundary's
        non-deterministic fields and the caller's ``ignore_fields``."""
        return request_ignore_fields(boundary) | self.ignore_fields

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested, or
        tape entries never read (see :meth:`unconsumed_error`)."""
        error = self.unconsumed_error()
        if error is not None:
            raise error

    def unconsumed_error(self) -> UnconsumedCallsError | None:
        """What :meth:`assert_consumed` raises, or None: the calls never requested and the
        tape entries never read (the tapes of tools replayed ``live`` left out)."""
        unconsumed, tapes = self.unconsumed_calls, self.tapes.unconsumed()
        if not unconsumed and not tapes:
            return None
        return UnconsumedCallsError(
            str(self.path), unconsumed, len(self.recording.calls), tapes=tapes
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
        (see :mod:`~openprogram.recording.served_conversations`); ``incoming`` may then be a
        :class:`~openprogram.recording.served_conversations.DumpableRequest`, dumped only
        as far as that needs.
        """
        __tracebackhide__ = True  # pytest: show the caller's line, not replay's internals
        ignored = frozenset(
            self.ignore_fields_for(boundary) if ignore_fields is None else ignore_fields
        )
        rules = ignore_rules(ignored)
        served = None
        if redaction is not None and self._as_stored and rules.paths is None:
            served = self._conversations.setdefault(ignored, ServedConversations())
        starts: dict[str, list[Any]] | None = None
        if served is None:
            redacted, texts = redactor(dumped(incoming)), None
        else:
            redacted, texts, starts = served.redacted(boundary, incoming, redactor, redaction)
        if self.matching == "order":
            with self._lock:
                index = self._next_in_order()
                calls = self.recording.calls
                if index >= len(calls):
                    raise self.keep(more_calls_than_recorded(index, len(calls)))
                call = calls[index]
                mismatch = self.match(
                    call, boundary, redacted, redactor, ignored, as_stored=served is not None
                )
                if mismatch is not None and served is not None:
                    # Compared again as before: the request whole, the recorded one redacted
                    # again, so the report is the same.
                    texts = None
                    again = redactor(dumped(incoming))
                    mismatch = self.match(call, boundary, again, redactor, ignored)
                if mismatch is not None:
                    raise self.keep(mismatch)
                self._served.serve(index)
                if served is not None and texts is not None:
                    served.remember(boundary, redaction, texts, call)
                return call
        digester = self._content.digester(rules)
        digest = digester.digest(redacted, boundary, starts)
        with self._lock:
            found = self._content.equal_by_digest(
                boundary, digest, redacted, redactor, ignored, as_stored=served is not None
            )
            if found is None:
                if served is not None:
                    texts = None
                    redacted = redactor(dumped(incoming))  # as before: the report is the same
                found = self._content.equal_or_nearest(boundary, redacted, redactor, ignored)
            self._served.serve(found)
            call = self.recording.calls[found]
            if served is not None and texts is not None:
                served.remember(boundary, redaction, texts, call)
            return call

    def _next_in_order(self) -> int:
        """Under ``order`` matching, the index of the next call a request is compared with
        (past the end when none is left): the first one not yet served, passing over the
        calls made inside a taped call that is served from its tape, not run again (never
        asked for). Called under the lock."""
        index = self._served.next_call
        calls = self.recording.calls
        while index < len(calls) and self.tapes.not_run_again(calls[index].within):
            index += 1
        return index

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
        ignored = self.ignore_fields_for(boundary)
        redacted = redactor(incoming)
        calls = self.recording.calls
        if self.matching == "order":
            with self._lock:
                index = self._next_in_order()
                if index >= len(calls):
                    return None
                if self.match(calls[index], boundary, redacted, redactor, ignored) is not None:
                    return None
                self._served.serve(index)
                return calls[index]
        content = self._content
        digest = content.digester(ignore_rules(ignored)).digest(redacted, boundary, None)
        with self._lock:
            found = content.equal_by_digest(
                boundary, digest, redacted, redactor, ignored, as_stored=False
            )
            if found is None:
                found, mismatch = content.nearest_open_call(boundary, redacted, redactor, ignored)
                if mismatch is not None:
                    return None
            self._served.serve(found)
            return calls[found]

    def match(
        self,
        call: RecordedCall,
        boundary: str,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignore_fields: frozenset[str],
        *,
        as_stored: bool = False,
    ) -> ReplayMismatch | None:
        """Why the redacted ``incoming`` request is not ``call``, or None when it is: the
        exact comparison of one request with one recorded call. The recorded request is
        redacted again with the current rules first, unless ``as_stored``."""
        if call.boundary != boundary:
            return ReplayMismatch(
                call.call_index,
                "boundary",
                call.boundary,
                boundary,
                detail=(
                    f"recorded {describe_call(call.boundary, call.request)}, incoming "
                    f"{describe_call(boundary, incoming)}: the run reaches the model through "
                    "another boundary than the recorded run did"
                ),
            )
        recorded = call.request if as_stored else redactor(call.request)
        for section in request_sections(boundary):
            difference = find_first_difference(
                recorded.get(section),
                incoming.get(section),
                ignore_fields=ignore_fields,
                path=section,
            )
            if difference is not None:
                return ReplayMismatch(
                    call.call_index,
                    difference.field_path,
                    difference.recorded,
                    difference.incoming,
                    note=self._note(incoming, call.call_index),
                )
        return None

    def _note(self, incoming: dict[str, Any], call_index: int) -> str | None:
        """A third line for a mismatch: a secret the recording removed that the run sent, or
        a user redaction other than the recording's."""
        note = removed_secret_note(incoming, self.recording.calls[:call_index])
        return note or other_redaction_note(self.recording.header, self.user_redaction)

    def keep(self, mismatch: ReplayMismatch) -> ReplayMismatch:
        """Remember ``mismatch`` (raised by this session or by a boundary serving one of its
        calls) and return it, to be raised."""
        self.mismatches.append(mismatch)
        return mismatch
