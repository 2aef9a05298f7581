"""A recording the server replays again and again: a pass per run of the program.

A server started with ``--replay NAME`` (or in the configured replay mode) outlives the
program it serves: a developer runs the agent, changes something, runs it again against the
same server. Each run is a **pass** over the recording: a replay session of its own on the
recording read at the start — the calls it served (each at most once), its mismatches, the
ids the server minted that its later requests repeat.

A new pass begins at a request's arrival when

* the current pass served every recorded call: the next request begins a new pass, and is
  matched there (a run that starts differently gets that pass's mismatch at call 0, not
  "more calls than the recording holds");
* or the program started again from its beginning before the current pass ended (an agent
  stopped part-way, then run again): the current pass served the recording's first call, no
  call it has not served equals the request (under ``order`` matching: the next call does
  not), and the request equals that first call. The current pass ends where it stands — its
  calls never requested are reported when the server stops — and a new pass serves the
  request.

Any other request is the current pass's: served, or that pass's mismatch. A request that equals a
call the current pass has not served yet is always served there, so a recording whose first request
is made again later in the same run (the same question asked twice) replays as one pass.

Passes follow one another: the server decides on its one event loop, before the request is
paired, so two requests never both begin one; but runs that overlap (two programs at once
against one recording) cannot be told apart — give each its own recording (a session, or
the header ``x-openprogram-recording``).

With ``again`` off (``serve --once``; a session of the control API, which one test opens and
ends; ``openprogram exec``'s proxy, whose command is one run) there is one pass: a request
past the end is a mismatch, as for any program that makes more calls than recorded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.recording.content_matching import IncomingRequest
from openprogram.recording.replay_session import ReplaySession

if TYPE_CHECKING:
    from openprogram.activation.plan import RecordReplayPlan
    from openprogram.recording.format import Recording
    from openprogram.recording.redaction import RequestRedactor
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["PassesAccount", "ReplayPasses", "RequestSections"]


@dataclass(frozen=True)
class RequestSections:
    """A request as replay compares it: its sections at the HTTP boundary, before redaction,
    and the redactor its call is redacted with."""

    sections: dict[str, Any]
    redactor: RequestRedactor


@dataclass
class PassesAccount:
    """What the passes did: the calls served, each mismatch and each incomplete pass's report
    (prefixed ``pass N:`` when there were several), the last pass's calls never requested."""

    passes: int
    calls: int
    mismatches: list[dict[str, Any]]
    unconsumed: list[int]
    unconsumed_reports: list[str]
    with_problems: int


class ReplayPasses:
    """The passes over one recording (see the module's docstring); used from the server's one
    event loop. :meth:`first` is what ``prepare_boundaries`` makes the first pass with."""

    def __init__(self, *, again: bool) -> None:
        self.again = again
        self.passes: list[ReplaySession] = []
        self._make: Callable[[], ReplaySession] | None = None

    def first(
        self, recording: Recording, plan: RecordReplayPlan, user: UserRedaction | None
    ) -> ReplaySession:
        """The first pass over ``recording``, replayed with ``plan``'s settings and the user
        redaction ``user``; every later pass is made the same way."""

        def make() -> ReplaySession:
            return ReplaySession(recording, user_redaction=user, **plan.replay_settings())

        self._make = make
        self.passes = [make()]
        return self.passes[0]

    @property
    def current(self) -> ReplaySession:
        return self.passes[-1]

    def begin_if_new(self, request: Callable[[], RequestSections]) -> str | None:
        """Begin a new pass when the request (made by ``request``, only if needed) begins
        one; why it did (for the log), or None when the request is the current pass's."""
        if not self.again or self._make is None:
            return None
        current = self.current
        unserved = current.unconsumed_calls
        if current.calls_consumed and not unserved:
            why = "every recorded call was served"
        elif self._starts_again(current, unserved, request()):
            why = (
                f"the request is the recording's first call again; pass {len(self.passes)} "
                "ends part-way"
            )
        else:
            return None
        self.passes.append(self._make())
        return why

    def _starts_again(
        self, current: ReplaySession, unserved: list[int], request: RequestSections
    ) -> bool:
        calls = current.recording.calls
        if not calls or not current.served.flags[0]:
            return False
        incoming = IncomingRequest(current.rules_for("http", None), request.sections,
                                   request.redactor)  # fmt: skip
        if current.match(calls[0], incoming) is not None:
            return False
        candidates = unserved if current.matching == "content" else unserved[:1]
        return all(current.match(calls[index], incoming) is not None for index in candidates)

    def account(self) -> PassesAccount:
        """What every pass did, in order."""
        several = len(self.passes) > 1
        mismatches: list[dict[str, Any]] = []
        reports: list[str] = []
        unconsumed: list[int] = []
        with_problems = 0
        for number, replay in enumerate(self.passes, 1):
            prefix = f"pass {number}: " if several else ""
            mismatches += [
                {
                    "report": prefix + str(mismatch),
                    "call_index": mismatch.call_index,
                    "field_path": mismatch.field_path,
                }
                for mismatch in replay.mismatches
            ]
            error = replay.unconsumed_error()
            unconsumed = [] if error is None else list(error.unconsumed)
            if error is not None:
                reports.append(prefix + str(error))
            with_problems += bool(replay.mismatches or error is not None)
        calls = sum(replay.calls_consumed for replay in self.passes)
        return PassesAccount(len(self.passes), calls, mismatches, unconsumed, reports,
                             with_problems)  # fmt: skip
