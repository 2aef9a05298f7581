"""Record, replay or refuse at both boundaries at once: the provider registry and HTTP.

:func:`prepare_boundaries` turns a :class:`~openprogram.activation.plan.RecordReplayPlan`
into what each boundary installs, sharing what the two must share:

* record — one writer (``writer_for(path)``): the registry's ``RecordingProvider`` wrappers
  and the HTTP boundary append to it, so both form one call sequence in one recording;
* replay — one :class:`~openprogram.recording.replay_session.ReplaySession`: the registry's
  ``ReplayProvider`` and the HTTP boundary take their calls, in order, from it, and every
  mismatch either raises is kept in its ``mismatches``;
* blocked — both refuse every call, naming the cause.

:func:`both_boundaries_active` installs them for a block, for the whole process: a
process-wide registry scope and an HTTP boundary activation, so every thread and task of
the block is covered (the pytest fixture and ``record_replay()`` run this way).
``openprogram exec`` installs them for the whole life of a process instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from openprogram.activation.plan import RecordReplayPlan

if TYPE_CHECKING:
    from openprogram.http.boundary import HttpBoundary
    from openprogram.providers.scopes import RegistryTransform
    from openprogram.recording.replay_session import ReplaySession

__all__ = ["PreparedBoundaries", "both_boundaries_active", "prepare_boundaries"]


@dataclass(frozen=True)
class PreparedBoundaries:
    """What each boundary installs for one plan."""

    plan: RecordReplayPlan
    transform: RegistryTransform
    """The provider registry's: record, replay or refuse every api."""
    http: HttpBoundary
    session: ReplaySession | None = None
    """replay: the one session both boundaries take their calls from."""


def prepare_boundaries(
    plan: RecordReplayPlan, *, session_type: type[ReplaySession] | None = None
) -> PreparedBoundaries:
    """Open the plan's recording and build both boundaries' parts.

    record: the recording is created (with its header) or checked to be appendable; replay:
    it is read whole and strictly, as a ``session_type`` (default ``ReplaySession``). Raises
    :class:`~openprogram.errors.RecordingFileError` when it cannot be.
    """
    from openprogram.http.boundary import HttpBoundary
    from openprogram.providers.activation import (
        blocked_transform,
        record_transform,
        replay_transform,
    )

    hosts, headers = plan.passthrough_hosts, plan.http_headers
    if plan.mode == "blocked":
        reason = plan.blocked_reason or ""
        http = HttpBoundary(
            "blocked", blocked_reason=reason, passthrough_hosts=hosts, extra_headers=headers
        )
        return PreparedBoundaries(plan, blocked_transform(reason), http)
    assert plan.path is not None  # the plan checks record and replay have a path
    if plan.mode == "record":
        from openprogram.recording.call_writer import writer_for

        writer = writer_for(plan.path)
        writer.open()  # the header now, so a run that makes no call still leaves a recording
        http = HttpBoundary("record", writer=writer, passthrough_hosts=hosts, extra_headers=headers)
        return PreparedBoundaries(plan, record_transform(plan.path), http)
    from openprogram.providers.recording import read_recording
    from openprogram.providers.replay import ReplayProvider
    from openprogram.recording.replay_session import ReplaySession

    recording = read_recording(plan.path)
    session = (session_type or ReplaySession)(recording, ignore_fields=plan.ignore_fields)
    provider = ReplayProvider(plan.path, session=session)
    http = HttpBoundary("replay", session=session, passthrough_hosts=hosts, extra_headers=headers)
    return PreparedBoundaries(plan, replay_transform(provider), http, session)


@contextmanager
def both_boundaries_active(transform: RegistryTransform, http: HttpBoundary) -> Iterator[None]:
    """The registry answers with ``transform`` and HTTP requests go through ``http``, in
    every thread and task of the process, for the block. Blocks nest, and must be left in
    the reverse order they were entered (``ScopeOrderError`` / ``RuntimeError`` otherwise)."""
    from openprogram.http.boundary import activate_http_boundary
    from openprogram.providers.api_registry import process_wide_scope

    with process_wide_scope(transform=transform):
        deactivate = activate_http_boundary(http)
        try:
            yield
        finally:
            deactivate()
