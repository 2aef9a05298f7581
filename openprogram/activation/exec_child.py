"""What ``openprogram exec``'s ``sitecustomize`` does in each Python process of the command.

:func:`activate_from_environment` reads the plan exec handed down (see
:mod:`openprogram.activation.exec_environment`) and, before the program's first line:

* prepares both boundaries from it (:mod:`openprogram.activation.boundaries`): the HTTP
  boundary is activated for the whole life of the process, and the provider runtime will
  install the same mode at its start instead of reading the configuration
  (:func:`~openprogram.activation.configured.preset_activation`);
* writes its handshake, ``process-<pid>.json``, so exec knows the activation took.

If the recording cannot be opened any more, or the plan cannot be read, the process is
blocked instead: every call refused, at both boundaries. An uncaught ``RecordReplayEscape``
(how the HTTP boundary stops a run past an SDK's retry loop) is shown as the error it
carries (:mod:`~openprogram.activation.uncaught_errors`).

Recording from several processes appends to the one recording (the writer is safe across processes).
Replaying is one process's: the first process of the command to ask for a call claims the recording
(``replay-claim`` in the exchange folder); a call asked for by any other process — a second
interpreter, or a child forked after the claim — is refused with
:class:`~openprogram.errors.ReplayInAnotherProcessError`, never served out of turn. A process that
makes no call (a wrapper such as ``poetry run``) claims nothing. A replaying process writes
``report-<pid>.json`` when it meets a mismatch (at once, so a process that ends without its exit
handlers has reported it) and at exit: how many calls it consumed, and its first mismatch, else the
first connection the replay refused (:mod:`~openprogram.activation.connection_guard`: under replay
every connection no recording serves is refused, for the life of the process), else, for the
claiming process, the recorded calls it never requested.

Importing this module is cheap; what a mode needs is imported when it is activated."""

from __future__ import annotations

import atexit
import json
import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from openprogram.activation.boundaries import guard_replay, prepare_boundaries
from openprogram.activation.children import deciding_on_a_child, hold_children_of_child
from openprogram.activation.configured import Activation, preset_activation
from openprogram.activation.connection_guard import REPLAY_GUARD, ConnectionWatch, note_not_recorded
from openprogram.activation.exec_environment import (
    EXCHANGE_VARIABLE,
    PLAN_VARIABLE,
    claim_replay,
    skipping_activation,
)
from openprogram.activation.plan import RecordReplayPlan
from openprogram.activation.uncaught_errors import show_carried_errors
from openprogram.errors import (
    ExecSetupError,
    OpenProgramError,
    ReplayInAnotherProcessError,
    ReplayMismatch,
)
from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary
from openprogram.recording.format import Recording
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.user_redaction import UserRedaction
from openprogram.tape_boundary.deck import TAPE_DECK_BINDING

__all__ = ["ExecClaim", "activate_from_environment"]


def activate_from_environment(environ: Mapping[str, str] | None = None) -> None:
    """Activate what exec decided, if this process runs under exec (else do nothing)."""
    source = os.environ if environ is None else environ
    folder, text = source.get(EXCHANGE_VARIABLE), source.get(PLAN_VARIABLE)
    if not folder or text is None:
        return
    status = "active"
    reason: str | None = None
    try:
        plan = RecordReplayPlan.from_json(text)
    except ValueError as error:
        status, reason = "refused", f"it cannot read the plan exec handed down: {error}"
        plan = RecordReplayPlan.blocked(f"this process {reason}")
    exchange = Path(folder)
    session = _activate(plan, exchange)
    _write(exchange / f"process-{os.getpid()}.json", _handshake(plan, status, reason))
    if session is not None and isinstance(claim := session.claim, ExecClaim):
        atexit.register(_report, session, claim)
        REPLAY_GUARD.on_refusal.append(lambda: _report(session, claim))
    show_carried_errors()


def _activate(plan: RecordReplayPlan, exchange: Path) -> ReplaySession | None:
    """Install the plan for the life of the process; the replay session, under replay."""

    def claiming(
        recording: Recording, plan: RecordReplayPlan, user: UserRedaction | None
    ) -> ReplaySession:
        claim = ExecClaim(exchange)
        return ReplaySession(recording, user_redaction=user, claim=claim, **plan.replay_settings())

    try:
        prepared = prepare_boundaries(plan, make_session=claiming)
    except OpenProgramError as error:
        plan = RecordReplayPlan.blocked(str(error), plan.path)
        prepared = prepare_boundaries(plan)

    activation = Activation(
        plan.mode,
        prepared.transform,
        plan.path,
        plan.blocked_reason,
        bindings={TAPE_DECK_BINDING: prepared.tapes},
    )
    preset_activation(lambda: activation)
    activate_http_boundary(prepared.http)
    exec_replay = f"`openprogram exec --replay` of {plan.path}"
    guard_replay(prepared.http, plan.allowed_hosts, by=exec_replay)  # for the process's life
    if plan.mode == "replay":
        _refuse_unactivated_children()
        hold_children_of_child(plan, exchange, os.environ)  # a block's child: its own too
    if plan.mode == "record":
        watch = ConnectionWatch(seen_into=exchange)  # exec compares with what its kernel watch saw
        watch.start()
        allowed = (*prepared.http.passthrough_hosts, *plan.allowed_hosts)
        atexit.register(_report_not_recorded, watch, prepared.http, allowed, exchange)
    return prepared.session


class ExecClaim:
    """exec's claim on the recording (see the module's docstring), given to the replay
    session of each process: calls and tape entries are served only in the process that
    claimed the recording first, and each mismatch kept is reported to exec at once."""

    def __init__(self, exchange: Path) -> None:
        self.exchange = exchange
        self.claimed_by: int | None = None
        """The process (this one, or the one it was forked from) holding the claim."""
        self.kept_count = 0
        """How many mismatches the session kept (in this process and before a fork)."""
        self.inherited_mismatches = 0
        """Mismatches raised before this process was forked from the one that raised them."""
        self.inherited_refusals = 0
        """Connections refused before this process was forked (the parent reports them)."""
        self.pid = os.getpid()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.pid = os.getpid()
        self.inherited_mismatches = self.kept_count
        self.inherited_refusals = len(REPLAY_GUARD.refusals)

    @property
    def claimed_here(self) -> bool:
        return self.claimed_by == os.getpid()

    def refusal(self, session: ReplaySession) -> ReplayMismatch | None:
        """None once this process holds the claim (taking it if nobody has); else the
        refusal naming the process that does."""
        pid = os.getpid()
        if self.claimed_by == pid:
            return None
        owner = claim_replay(self.exchange, pid)
        if owner != pid:
            return ReplayInAnotherProcessError(session.calls_consumed, owner, pid)
        self.claimed_by = pid
        return None

    def kept(self, session: ReplaySession, mismatch: ReplayMismatch) -> None:
        """Report to exec at once: a process that ends without running its exit handlers
        (``os._exit``, a signal) has told exec all the same."""
        self.kept_count += 1
        _report(session, self)


def _handshake(plan: RecordReplayPlan, status: str, reason: str | None) -> dict[str, Any]:
    report: dict[str, Any] = {
        "pid": os.getpid(),
        "status": status,
        "mode": plan.mode,
        "python": sys.executable,
    }
    if reason is not None:
        report["reason"] = reason
    return report


def _report(session: ReplaySession, claim: ExecClaim) -> None:
    """What this process consumed, and what went wrong in it, for exec (at exit, and at
    each mismatch and refusal)."""
    if claim.pid != os.getpid():
        return  # registered in a process this one was forked from, which reports for itself
    problem: str | None = None
    kind: str | None = None
    mismatches = session.mismatches[claim.inherited_mismatches :]
    unconsumed = session.unconsumed_error() if claim.claimed_here else None
    refusals = [str(refusal) for refusal in REPLAY_GUARD.refusals[claim.inherited_refusals :]]
    refusals += _REFUSED_CHILDREN
    if mismatches:
        problem, kind = str(mismatches[0]), "mismatch"
    elif refusals:
        problem, kind = refusals[0], "refused"
    elif unconsumed is not None:
        problem, kind = str(unconsumed), "unconsumed"
    report = {
        "pid": os.getpid(),
        "claimed": claim.claimed_here,
        "consumed": session.calls_consumed if claim.claimed_here else 0,
        "problem": problem,
        "kind": kind,
    }
    _write(claim.exchange / f"report-{os.getpid()}.json", report)


_REFUSED_CHILDREN: list[str] = []
"""Why each child process this replaying process tried to start was refused."""


def _refuse_unactivated_children() -> None:
    """Under replay, refuse to start a Python child that would skip the activation (``python
    -I``, ``-E``, ``-S``): it would run live. Through ``subprocess``, and a process replacing
    itself with ``os.exec*`` (``execv`` and ``execve``, which the others end in); a refusal is
    reported to exec, which then fails, even if the program swallowed the error."""
    real_init = subprocess.Popen.__init__

    def refuse_skipping(command: list[str], environ: Mapping[str, str]) -> None:
        if deciding_on_a_child():
            return  # the namespace check a block's child makes before it starts its own
        skipped = skipping_activation(command, environ)
        if skipped is not None:
            reason = f"replay refused to start {' '.join(command)}: {skipped}"
            _REFUSED_CHILDREN.append(reason)
            raise RecordReplayEscape(ExecSetupError(reason))

    def __init__(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        if not options.get("shell") and not (rest and rest[7:8] == (True,)):
            command = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
            refuse_skipping(
                [os.fsdecode(word) for word in command], options.get("env") or os.environ
            )
        real_init(self, args, *rest, **options)

    real_execv, real_execve = os.execv, os.execve

    def execv(path: Any, argv: Any) -> NoReturn:
        refuse_skipping([os.fsdecode(path), *map(os.fsdecode, list(argv)[1:])], os.environ)
        real_execv(path, argv)

    def execve(path: Any, argv: Any, env: Any) -> NoReturn:
        if not isinstance(path, int):  # a file descriptor names no command to check
            refuse_skipping([os.fsdecode(path), *map(os.fsdecode, list(argv)[1:])], env)
        real_execve(path, argv, env)

    subprocess.Popen.__init__ = __init__  # type: ignore[method-assign]
    os.execv, os.execve = execv, execve


def _report_not_recorded(
    watch: ConnectionWatch, http: HttpBoundary, allowed: Iterable[str], exchange: Path
) -> None:
    """At exit, under record: the connections this process opened that no boundary
    captured, in the recording and for exec to report (``unrecorded-<pid>.json``)."""
    watch.stop()
    missed = watch.not_among(http.destinations, allowed)
    if missed:
        if http.writer is not None:
            note_not_recorded(http.writer, missed)
        connections = [str(connection) for connection in missed]
        _write(exchange / f"unrecorded-{os.getpid()}.json", {"connections": connections})


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON, whole or not at all (exec may be reading the folder)."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass  # exec has gone, or its folder with it: nobody is left to tell
