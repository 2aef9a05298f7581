"""The configured mode in a process: model traffic recorded or replayed, the rest left alone.

:func:`start_model_layer` installs, for the life of a process, what the configured mode's
plan (record, replay or blocked; :mod:`~openprogram.activation.startup` decides it as the
process starts) turns on — cheaply, so that a process that makes no model call pays for
little more than the decision:

* the HTTP boundary in ``model_traffic`` mode: each request a captured client library sends
  (httpx, httpx2, urllib3 — ``requests``, botocore —, aiohttp, ``http.client``) is asked
  :func:`~openprogram.vendors.model_traffic.model_traffic_reason`. Model traffic is
  recorded, answered from the recording, or refused (blocked); every other request is sent
  as it is — not recorded, not refused;
* the provider registry and the tapes, through the runtime's preset activation
  (:func:`~openprogram.activation.configured.preset_activation`);
* under replay (and blocked), the placeholder API keys where a vendor has none, so that an
  SDK builds its client (:mod:`~openprogram.activation.placeholder_keys`);
* the uncaught openprogram error shown short (:mod:`~openprogram.activation.uncaught_errors`);
* a watch on the connections the process opens
  (:class:`~openprogram.activation.connection_guard.ConnectionWatch`), which refuses none.

The recording is opened or read when the first model call needs it (:class:`LayerBoundaries`):
record checks the target as ``exec --record`` does (a link in the store, a recording replay would
refuse) and creates it; replay reads it whole and strictly, and refuses a drift snapshot — exactly
what ``openprogram recordings status`` calls broken. A failure there blocks the process from that
call on — every model call refused, naming the cause and ``openprogram recordings off``.

Several processes share one recording: under record each appends (the writer is safe across
processes); under replay each serves its own requests by content from the whole recording
(a process forked from another goes on with the replay it was forked in). So a process reports
only its own problems, never recorded calls it did not ask for — another process may ask.

**At exit** (:meth:`ModelLayerProcess.report`, run after every other exit handler): the
process's first problem — a replay mismatch, a model request refused — on stderr as
``openprogram exec --replay`` reports it, unless the program ended on that very error
(Python showed it already); under replay, the connections that were not model traffic and
went live, in one line; under record, the connections to a model host that no boundary
captured. A process that met a problem and would have exited 0 exits 1."""

from __future__ import annotations

import atexit
import contextlib
import gc
import io
import os
import sys
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING, NoReturn

from openprogram.activation.configured import Activation, preset_activation
from openprogram.activation.connection_guard import Connection, ConnectionWatch
from openprogram.activation.placeholder_keys import set_placeholder_keys
from openprogram.activation.plan import RecordReplayPlan
from openprogram.activation.uncaught_errors import last_uncaught, show_carried_errors
from openprogram.config.hosts import is_allowed, normalized_hosts
from openprogram.deterministic_sources import set_local_time_to_utc
from openprogram.errors import OpenProgramError, RecordReplayBlockedError
from openprogram.http_boundary.boundary import HttpBoundary, ModelLayer, activate_http_boundary
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.tape_boundary.deck import TAPE_DECK_BINDING
from openprogram.wording import plural

if TYPE_CHECKING:
    from collections.abc import Callable

    from openprogram.activation.boundaries import PreparedBoundaries
    from openprogram.http_boundary.clients.interface import CapturedRequest
    from openprogram.recording.format import Recording
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["LayerBoundaries", "ModelLayerProcess", "start_model_layer"]


class LayerBoundaries:
    """The plan's boundaries, prepared once, when the first model call needs them (see the
    module's docstring); a preparation that fails prepares a blocked plan instead."""

    def __init__(self, plan: RecordReplayPlan, setting: str | None = None) -> None:
        self.plan = plan
        self.setting = setting
        """The ``record_replay.file`` the plan's recording was named by (NAME or PATH)."""
        self._prepared: PreparedBoundaries | None = None
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a lock held by another thread stays held
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._lock = threading.Lock()

    @property
    def ready(self) -> PreparedBoundaries | None:
        """The boundaries, if a model call has prepared them."""
        return self._prepared

    def prepared(self) -> PreparedBoundaries:
        with self._lock:
            if self._prepared is None:
                self._prepared = self._prepare()
            return self._prepared

    def _prepare(self) -> PreparedBoundaries:
        # The record/replay machinery — the provider codec and its models, ~250 ms — is loaded
        # by the first model call, never by a process that makes none.
        from openprogram.activation.boundaries import prepare_boundaries

        plan = self.plan
        try:
            if plan.mode == "record":
                from openprogram.activation.configured import check_record_target

                assert plan.path is not None  # a record plan has its recording
                check_record_target(plan.path, self.setting or str(plan.path))
            return prepare_boundaries(plan, make_session=_checked_session)
        except OpenProgramError as error:
            cause = str(error)
        except Exception as error:  # fail closed whatever went wrong
            cause = f"{type(error).__name__}: {error}"
        return prepare_boundaries(RecordReplayPlan.blocked(cause, plan.path))


def _checked_session(
    recording: Recording, plan: RecordReplayPlan, user: UserRedaction | None
) -> ReplaySession:
    """The replay session of ``recording``, refused as ``recordings status`` calls it
    INVALID: a drift snapshot. (One that holds nothing serves nothing: each model request is
    refused as a request the recording does not hold.)"""
    from openprogram.recording.format import refuse_a_snapshot
    from openprogram.recording.replay_session import ReplaySession

    refuse_a_snapshot(recording)
    return ReplaySession(recording, user_redaction=user, **plan.replay_settings())


class ModelLayerProcess:
    """The configured mode, installed for the life of this process (see the module's
    docstring); :meth:`stop` takes all of it off again (a test suite that must not run under
    its user's configured mode)."""

    def __init__(self, plan: RecordReplayPlan, setting: str | None = None) -> None:
        self.plan = plan
        self.boundaries = LayerBoundaries(plan, setting)
        self.model_hosts = normalized_hosts(plan.model_hosts)
        self.refusals: list[RecordReplayBlockedError] = []
        """The model requests the HTTP boundary refused, blocked, in this process."""
        self.pid = os.getpid()
        self.inherited = (0, 0, 0)
        """What the process this one was forked from had met: mismatches, refusals,
        connections (its own to report)."""
        self.watch = ConnectionWatch()
        self.exit_status: object = None
        """What the program gave ``sys.exit``, if it exited through it."""
        self._undo: list[Callable[[], None]] = []
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def start(self) -> None:
        mode = self.plan.mode
        layer = ModelLayer(mode, self.covers, self.http_boundary)
        http = HttpBoundary(
            "model_traffic",
            model_layer=layer,
            passthrough_hosts=self.plan.passthrough_hosts,
            extra_headers=self.plan.http_headers,
        )
        preset_activation(self.activation)
        self._undo.append(lambda: preset_activation(None))
        self._undo.append(activate_http_boundary(http))
        if mode in ("replay", "blocked"):
            self._undo.append(set_placeholder_keys())
        sources = self.plan.sources
        if sources is not None and sources.clock is not None:
            self._undo.append(set_local_time_to_utc())  # as when it was recorded
        show_carried_errors()
        self._undo.append(self._noting_the_exit_status())
        self.watch.start()
        self._undo.append(self.watch.stop)
        atexit.register(self.report)
        self._undo.append(lambda: atexit.unregister(self.report))

    def _noting_the_exit_status(self) -> Callable[[], None]:
        """Have ``sys.exit`` note the status the program exits with (an exit handler cannot
        read it); returns what puts ``sys.exit`` back."""
        real_exit = sys.exit

        def exit(status: str | int | None = None) -> NoReturn:
            self.exit_status = status
            real_exit(status)

        sys.exit = exit

        def restore() -> None:
            if sys.exit is exit:
                sys.exit = real_exit

        return restore

    def stop(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _forked(self) -> None:
        session = self.session
        self.pid = os.getpid()
        mismatches = 0 if session is None else len(session.mismatches)
        self.inherited = (mismatches, len(self.refusals), len(self.watch.connections))

    @property
    def session(self) -> ReplaySession | None:
        ready = self.boundaries.ready
        return None if ready is None else ready.session

    def covers(self, request: CapturedRequest) -> bool:
        """Whether ``request`` is model traffic (the configured mode's to record or replay)."""
        # The rule reads the vendor views: loaded with the first request a client sends.
        from openprogram.vendors.model_traffic import model_traffic_reason

        reason = model_traffic_reason(
            request.method, request.url, request.headers, request.body, model_hosts=self.model_hosts
        )
        return reason is not None

    def http_boundary(self) -> HttpBoundary:
        """The boundary of model traffic (prepared by the first model request)."""
        http = self.boundaries.prepared().http
        if http.mode == "blocked":
            self.refusals.append(RecordReplayBlockedError(http.blocked_reason or ""))
        return http

    def activation(self) -> Activation:
        """What the provider runtime installs when it starts (its first lookup)."""
        prepared = self.boundaries.prepared()
        plan = prepared.plan
        return Activation(
            plan.mode,
            prepared.transform,
            plan.path,
            plan.blocked_reason,
            bindings={TAPE_DECK_BINDING: prepared.tapes},
        )

    def problem(self) -> OpenProgramError | None:
        """This process's first problem: a replay mismatch, else a refused model request."""
        mismatches, refusals, _ = self.inherited
        session = self.session
        if session is not None and len(session.mismatches) > mismatches:
            return session.mismatches[mismatches]
        if len(self.refusals) > refusals:
            return self.refusals[refusals]
        return None

    def went_live(self) -> list[Connection]:
        """Under replay: the connections this process opened that went live — none of them
        model traffic, which replay answers without one — but to the hosts the settings let
        through (``http_passthrough_hosts``, ``allowed_hosts``)."""
        allowed = normalized_hosts((*self.plan.passthrough_hosts, *self.plan.allowed_hosts))
        own = self.watch.connections[self.inherited[2] :]
        return _distinct(c for c in own if not is_allowed(allowed, c.host, c.port, c.name))

    def missed_model_hosts(self) -> list[Connection]:
        """Under record: the connections to a model host (``record_replay.model_hosts``) that
        no boundary captured (a C extension's socket)."""
        ready = self.boundaries.ready
        destinations = set() if ready is None else ready.http.destinations
        own = self.watch.connections[self.inherited[2] :]
        hosts = self.model_hosts
        return [
            connection
            for connection in _distinct(own)
            if is_allowed(hosts, connection.host, connection.port, connection.name)
            and not any(
                (name.lower(), connection.port) in destinations
                for name in (connection.host, connection.name)
                if name
            )
        ]

    def report(self) -> None:
        """At exit: this process's problems and the connections it must tell of, on stderr;
        exit status 1 for a process that met a problem and would have exited 0."""
        if os.getpid() != self.pid:
            return  # inherited from the process this one was forked from
        self.watch.stop()
        problem = self.problem()
        uncaught = last_uncaught()
        lines: list[str] = []
        if problem is not None and not _ended_on(uncaught, problem):
            lines.append(str(problem))
        if self.plan.mode == "replay":
            live = self.went_live()
            if live:
                from openprogram.vendors.model_traffic import not_model_traffic_message

                lines.append(not_model_traffic_message(map(_where, live)) or "")
        elif self.plan.mode == "record":
            missed = self.missed_model_hosts()
            if missed:
                lines.append(missed_message(missed))
        for line in lines:
            sys.stderr.write(f"openprogram: {line}\n")
        if problem is not None and uncaught is None and self.exit_status in (None, 0):
            _flush_open_files()
            os._exit(1)  # the last exit handler: the program would have exited 0


def _flush_open_files() -> None:
    """Flush every file still open for writing (the standard streams among them), as the
    interpreter's own end would: ``os._exit`` skips it."""
    for candidate in gc.get_objects():
        if isinstance(candidate, io.IOBase):
            with contextlib.suppress(Exception):
                if not candidate.closed and candidate.writable():
                    candidate.flush()


def _ended_on(uncaught: BaseException | None, problem: BaseException) -> bool:
    """Whether the program ended on ``problem`` — carried, as the cause of its error, or
    the same refusal (each refused request raises one of its own) — so Python showed it."""
    seen: set[int] = set()
    current = uncaught
    while current is not None and id(current) not in seen:
        error = current.error if isinstance(current, RecordReplayEscape) else current
        if error is problem or (type(error) is type(problem) and str(error) == str(problem)):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _distinct(connections: Iterable[Connection]) -> list[Connection]:
    """One connection per host (as named) and port."""
    found: dict[tuple[str, int | None], Connection] = {}
    for connection in connections:
        found.setdefault((connection.name or connection.host, connection.port), connection)
    return list(found.values())


def _where(connection: Connection) -> str:
    return f"{connection.name or connection.host}:{connection.port}"


def missed_message(connections: list[Connection]) -> str:
    """What record says, at exit, of the connections to model hosts it did not capture."""
    listed = ", ".join(map(str, connections))
    return (
        f"{plural(len(connections), 'connection')} to a model host not recorded: {listed} — "
        "no boundary captures that client library, so a replay cannot answer it (run the "
        "program under `openprogram exec` to see its connections refused under replay)"
    )


def start_model_layer(plan: RecordReplayPlan, setting: str | None = None) -> ModelLayerProcess:
    """Install the configured mode's ``plan`` for the life of the process (see the module's
    docstring); ``setting`` is the ``record_replay.file`` that named its recording."""
    process = ModelLayerProcess(plan, setting)
    process.start()
    return process
