"""One replay of one recording, shared by every boundary that replays from it.

A :class:`ReplaySession` holds a read :class:`~openprogram.recording.format.Recording` and
serves its calls in ``call_index`` order to whichever boundary asks: the provider registry's
``ReplayProvider`` and the HTTP boundary's transport take turns on one session, so a run that
mixes both is served exactly as it was recorded. :meth:`ReplaySession.take` compares the
incoming request with the next recorded call and hands that call over, or raises
:class:`~openprogram.recording.mismatch.ReplayMismatch`:

* a call recorded at the other boundary at that index is a mismatch at field ``boundary``
  naming both (``recorded an HTTP call (POST https://…), incoming a provider call
  (echo:echo)``);
* otherwise the request sections of the boundary are compared in order, both sides redacted
  by the boundary's redactor first, and the first difference is reported
  (``body.messages[2].content``, ``context.messages[0].content``);
* a run making more calls than the recording holds is a mismatch at field ``call_index``.

A mismatch does not consume the call. Every mismatch raised is kept in
:attr:`ReplaySession.mismatches`, so a harness can fail a run whose code caught one.

Calls are matched by order. Matching is one method, :meth:`ReplaySession.match`, so that a
matching by content can replace it without touching the boundaries.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from openprogram.plural import plural
from openprogram.recording.difference import REPORT_LIMIT, find_first_difference
from openprogram.recording.format import RecordedCall, Recording, request_sections
from openprogram.recording.mismatch import (
    ReplayMismatch,
    UnconsumedCallsError,
    removed_secret_note,
)
from openprogram.recording.nondeterministic import request_ignore_fields

__all__ = ["ReplaySession", "RequestRedactor", "describe_call"]

RequestRedactor = Callable[[dict[str, Any]], dict[str, Any]]
"""Redacts a request's sections, as the boundary redacted them when recording (for the
provider boundary ``SecretRedactor.redact_request``, for HTTP ``redact_http_request``)."""


class ReplaySession:
    """Serves the calls of ``recording`` in order, from call 0, to any boundary.

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields each boundary leaves out of the comparison.
    Thread-safe: concurrent callers are served one call each, in the order they ask.
    """

    def __init__(self, recording: Recording, *, ignore_fields: Iterable[str] = ()) -> None:
        self.recording = recording
        self.ignore_fields = frozenset(ignore_fields)
        """The caller's own fields to ignore, for every boundary."""
        self.mismatches: list[ReplayMismatch] = []
        """Every mismatch raised, kept so a harness can fail a run that swallowed one."""
        self._next_call = 0
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.recording.path

    @property
    def calls_consumed(self) -> int:
        return self._next_call

    @property
    def unconsumed_calls(self) -> list[int]:
        return list(range(self._next_call, len(self.recording.calls)))

    def ignore_fields_for(self, boundary: str) -> frozenset[str]:
        """What a request of ``boundary`` is compared without: the boundary's
        non-deterministic fields and the caller's ``ignore_fields``."""
        return request_ignore_fields(boundary) | self.ignore_fields

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested."""
        unconsumed = self.unconsumed_calls
        if unconsumed:
            raise UnconsumedCallsError(str(self.path), unconsumed, len(self.recording.calls))

    def take(
        self,
        boundary: str,
        incoming: dict[str, Any],
        *,
        redactor: RequestRedactor,
        ignore_fields: Iterable[str] | None = None,
    ) -> RecordedCall:
        """The next recorded call, if ``incoming`` (the request sections of a call at
        ``boundary``, before redaction) matches it; it then counts as consumed.

        Raises :class:`ReplayMismatch` (kept in :attr:`mismatches`) otherwise.
        ``ignore_fields`` replaces :meth:`ignore_fields_for` for this call.
        """
        __tracebackhide__ = True  # pytest: show the caller's line, not replay's internals
        ignored = self.ignore_fields_for(boundary) if ignore_fields is None else ignore_fields
        redacted = redactor(incoming)
        with self._lock:
            index = self._next_call
            calls = self.recording.calls
            if index >= len(calls):
                raise self.keep(_past_the_end(index, len(calls)))
            call = calls[index]
            mismatch = self.match(call, boundary, redacted, redactor, frozenset(ignored))
            if mismatch is not None:
                raise self.keep(mismatch)
            self._next_call = index + 1
            return call

    def match(
        self,
        call: RecordedCall,
        boundary: str,
        incoming: dict[str, Any],
        redactor: RequestRedactor,
        ignore_fields: frozenset[str],
    ) -> ReplayMismatch | None:
        """Why the redacted ``incoming`` request is not ``call``, or None when it is: the
        one matching step (by order: the call is the next one recorded)."""
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
        recorded = redactor(call.request)  # re-redacted: the current rules
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
                    note=removed_secret_note(incoming, self.recording.calls[: call.call_index]),
                )
        return None

    def keep(self, mismatch: ReplayMismatch) -> ReplayMismatch:
        """Remember ``mismatch`` (raised by this session or by a boundary serving one of its
        calls) and return it, to be raised."""
        self.mismatches.append(mismatch)
        return mismatch


def describe_call(boundary: str, request: dict[str, Any]) -> str:
    """A call in a few words for a report: ``an HTTP call (POST https://…)`` or ``a provider
    call (openai-completions:gpt-4o)``."""
    if boundary == "http":
        target = f"{request.get('method')} {request.get('url')}"
        return f"an HTTP call ({_short(target)})"
    model = request.get("model")
    model = model if isinstance(model, dict) else {}
    label = f"{model.get('api')}:{model.get('id')}"
    return f"a provider call ({_short(label)})"


def _short(text: str) -> str:
    """``text`` on one line, cut after the report's limit."""
    line = " ".join(text.split())
    return line if len(line) <= REPORT_LIMIT else line[:REPORT_LIMIT] + "…"


def _past_the_end(index: int, recorded: int) -> ReplayMismatch:
    return ReplayMismatch(
        index,
        "call_index",
        recorded,
        index,
        detail=(
            f"recorded {plural(recorded, 'call')} (0..{recorded - 1}), incoming call "
            f"{index}: the run makes more calls than the recording holds"
            if recorded
            else f"the recording holds no calls, incoming call {index}"
        ),
    )
