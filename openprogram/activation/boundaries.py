"""Record, replay or refuse at both boundaries at once: the provider registry and HTTP.

:func:`prepare_boundaries` turns a :class:`~openprogram.activation.plan.RecordReplayPlan`
into what each boundary installs, sharing what the two must share:

* record — one writer (``writer_for(path)``): the registry's ``RecordingProvider`` wrappers
  and the HTTP boundary append to it, so both form one call sequence in one recording;
* replay — one :class:`~openprogram.recording.replay_session.ReplaySession`: the registry's
  ``ReplayProvider`` and the HTTP boundary take their calls from it, paired by the plan's
  ``match``, and every mismatch either raises is kept in its ``mismatches``;
* blocked — both refuse every call, naming the cause.

Taped functions and agent tools follow the same plan (``openprogram.tape_boundary.deck``): their
entries are appended with the one writer, or served from the one session.

:func:`both_boundaries_active` installs them for a block, for the whole process: a
process-wide registry scope and an HTTP boundary activation, so every thread and task of
the block is covered (the pytest fixture and ``record_replay()`` run this way).
``openprogram exec`` installs them for the whole life of a process instead.

Under replay, the key variables a vendor's SDK reads get a placeholder where they are unset
(:mod:`~openprogram.activation.placeholder_keys`, whose names this module exports too)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openprogram.activation.connection_guard import (
    REPLAY_GUARD,
    Connection,
    ConnectionWatch,
    note_not_recorded,
)
from openprogram.activation.placeholder_keys import (
    PLACEHOLDER_API_KEY,
    hide_placeholder_keys,
    set_placeholder_keys,
)
from openprogram.activation.plan import RecordReplayPlan
from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary
from openprogram.provider_boundary.codec import read_for_replay
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.provider_boundary.transforms import (
    blocked_transform,
    record_transform,
    replay_transform,
)
from openprogram.providers.registry import process_wide_scope
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.user_redaction import user_redaction_in_effect
from openprogram.recording.writer import writer_for
from openprogram.tape_boundary.deck import TAPE_DECK_BINDING, BlockedTapes, TapePlayer, TapeRecorder

if TYPE_CHECKING:
    from openprogram.providers.registry import ApiProvider, RegistryTransform
    from openprogram.recording.format import Recording
    from openprogram.recording.user_redaction import Redactor, UserRedaction
    from openprogram.tape_boundary.deck import TapeDeck

__all__ = [
    "PLACEHOLDER_API_KEY",
    "PreparedBoundaries",
    "both_boundaries_active",
    "hide_placeholder_keys",
    "prepare_boundaries",
    "read_for_replay",
    "set_placeholder_keys",
]

SessionFactory = Callable[["Recording", RecordReplayPlan, "UserRedaction | None"], "ReplaySession"]
"""Makes the replay session of a recording, with the plan's fields to ignore, matching and
tool policies, and the user redaction in effect."""


@dataclass(frozen=True)
class PreparedBoundaries:
    """What each boundary installs for one plan."""

    plan: RecordReplayPlan
    transform: RegistryTransform
    """The provider registry's: record, replay or refuse every api."""
    http: HttpBoundary
    tapes: TapeDeck
    """Where taped functions and agent tools go: the writer, the session, or a refusal."""
    session: ReplaySession | None = None
    """replay: the one session both boundaries take their calls from."""


def prepare_boundaries(
    plan: RecordReplayPlan,
    *,
    make_session: SessionFactory | None = None,
    redact: Redactor | None = None,
    redact_name: str | None = None,
) -> PreparedBoundaries:
    """Open the plan's recording and build both boundaries' parts.

    record: the recording is created (with its header) or checked to be appendable; replay: it is
    read whole and strictly, and served by ``make_session(recording, plan, user)`` (default: a
    ``ReplaySession`` with the plan's ``ignore_fields``, ``match`` and ``tools``). Both boundaries
    redact with the user redaction in effect (``user``): the plan's ``redact_patterns``, the
    function :func:`~openprogram.recording.user_redaction.register_redactor` registered, and
    ``redact`` (named ``redact_name``). Raises :class:`~openprogram.errors.RecordingFileError` when
    the recording cannot be used, and :class:`~openprogram.errors.UserRedactionError` for a bad
    pattern."""

    hosts, headers = plan.passthrough_hosts, plan.http_headers
    if plan.mode == "blocked":
        reason = plan.blocked_reason or ""
        http = HttpBoundary(
            "blocked", blocked_reason=reason, passthrough_hosts=hosts, extra_headers=headers
        )
        return PreparedBoundaries(plan, blocked_transform(reason), http, BlockedTapes(reason))
    assert plan.path is not None  # the plan checks record and replay have a path
    user = user_redaction_in_effect(
        patterns=plan.redact_patterns, redact=redact, redact_name=redact_name
    )
    if plan.mode == "record":
        writer = writer_for(plan.path)
        writer.user_redaction = user
        writer.open()  # the header now, so a run that makes no call still leaves a recording
        http = HttpBoundary("record", writer=writer, passthrough_hosts=hosts, extra_headers=headers)
        tapes = TapeRecorder(writer, plan.sources)  # now() and random() draw from its sources
        return PreparedBoundaries(plan, record_transform(plan.path), http, tapes)
    recording = read_for_replay(plan.path)
    session = (make_session or _replay_session)(recording, plan, user)
    http = HttpBoundary("replay", session=session, passthrough_hosts=hosts, extra_headers=headers)
    transform = _replay_when_looked_up(session)
    return PreparedBoundaries(plan, transform, http, TapePlayer(session), session)


def _replay_session(
    recording: Recording, plan: RecordReplayPlan, user: UserRedaction | None
) -> ReplaySession:
    return ReplaySession(recording, user_redaction=user, **plan.replay_settings())


def _replay_when_looked_up(session: ReplaySession) -> RegistryTransform:
    """Every api answered by one ``ReplayProvider`` on ``session``, made at the first lookup
    (so a process that never uses the registry never imports it)."""

    made: list[RegistryTransform] = []
    lock = threading.Lock()

    def replay_every_api(api: str, registered: ApiProvider | None) -> ApiProvider | None:
        with lock:
            if not made:
                made.append(replay_transform(ReplayProvider(session.path, session=session)))
        return made[0](api, registered)

    return replay_every_api


@contextmanager
def both_boundaries_active(
    transform: RegistryTransform,
    http: HttpBoundary,
    tapes: TapeDeck | None = None,
    *,
    allowed_hosts: Iterable[str] = (),
) -> Iterator[BoundariesReport]:
    """The registry answers with ``transform``, HTTP requests go through ``http`` and taped
    calls to ``tapes``, in every thread and task of the process, for the block; under replay
    every other connection is refused but to ``http``'s passthrough hosts and
    ``allowed_hosts`` (:func:`guard_replay`); under record, the connections no boundary
    captured are in the yielded report when the block ends. Blocks nest, and must be left in
    the reverse order they were entered (``ScopeOrderError`` / ``RuntimeError`` otherwise)."""

    bindings = None if tapes is None else {TAPE_DECK_BINDING: tapes}
    with process_wide_scope(transform=transform, bindings=bindings):
        deactivate = activate_http_boundary(http)
        unguard = guard_replay(http, allowed_hosts)
        watch = ConnectionWatch() if http.mode in ("record", "replay_or_record") else None
        if watch is not None:
            watch.start()
        report = BoundariesReport()
        try:
            yield report
        finally:
            if watch is not None:
                watch.stop()
                report.not_recorded = watch.not_among(http.destinations, http.passthrough_hosts)
                if report.not_recorded and http.writer is not None:
                    note_not_recorded(http.writer, report.not_recorded)
            unguard()
            deactivate()


@dataclass
class BoundariesReport:
    """What :func:`both_boundaries_active` saw of the block, once it ended."""

    not_recorded: list[Connection] = field(default_factory=list)
    """record: the connections (one per host and port) that no boundary captured."""


def guard_replay(
    http: HttpBoundary, allowed_hosts: Iterable[str] = (), *, by: str | None = None
) -> Callable[[], None]:
    """Under a replaying ``http`` boundary, refuse every connection from now on but to its
    passthrough hosts and ``allowed_hosts`` (see
    :mod:`~openprogram.activation.connection_guard`), ``by`` naming it (default: the replay
    of its recording); returns what lifts it (nothing to lift for another mode)."""
    if http.mode != "replay":
        return lambda: None
    if by is None and http.session is not None:
        by = f"the replay of {http.session.path}"
    return REPLAY_GUARD.enter((*http.passthrough_hosts, *allowed_hosts), by=by)
