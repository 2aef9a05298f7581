"""``openprogram exec`` of a Python command: run it with record/replay active in each of its Python
processes from their first line, and tell what happened. (Which way a command runs, and the run of
any other through a recording proxy, is :mod:`openprogram.serving.proxied_exec`'s.)

:func:`run_with_plan` runs a command with the plan exec resolved once
(:mod:`openprogram.activation.configured`): it checks the command's Python
(:mod:`openprogram.activation.exec_environment`), runs the command in the environment that
module makes — its standard streams are the caller's — and, when it has exited, reads what
its processes left in the exchange folder (:mod:`openprogram.activation.exec_child`):

* no process activated (no handshake): the command ran without record/replay — it ran no
  Python, or one that skipped the ``sitecustomize`` — :class:`ExecSetupError`;
* a process could not activate (its interpreter cannot import openprogram):
  :class:`ExecSetupError` naming it;
* under replay: the first mismatch any process met (also one the program swallowed), a
  second process refused, or recorded calls never requested;
* blocked: why every call was refused. That is the one thing known before the command
  starts, so the caller may tell it first (``on_start``): under a blocked plan the key
  variables get the placeholder, as under replay, so an SDK client builds and its first
  call is refused with the cause, instead of failing first for a key it never needed.

exec owns the exit status (an ``atexit`` handler of the program cannot change it):
:attr:`ExecOutcome.exit_status` is the command's own when it failed, 1 when it exited 0
but replay found a problem or record/replay was blocked, else 0.

**Signals.** Ctrl-C at a terminal reaches the whole foreground process group, the command
with it, so exec itself then only waits; a SIGINT sent to exec alone (a supervisor,
``timeout -s INT``, ``kill -INT``) — when exec is not in the foreground group of a terminal —
is passed on to the command, as a SIGTERM always is. On Linux the command is also told to
end (SIGTERM) if exec dies first (``PR_SET_PDEATHSIG``), so a killed exec never leaves it
running and writing; elsewhere a killed exec cannot stop it."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING

from openprogram.activation.exec_environment import (
    Exchange,
    check_command,
    child_environment,
    claimant,
    open_exchange,
    read_reports,
)
from openprogram.activation.plan import RecordReplayPlan
from openprogram.errors import ExecSetupError, OpenProgramError, RecordReplayBlockedError
from openprogram.isolation.connect_watch import ConnectWatch, not_seen_by_python, note_in_recording
from openprogram.recording.reader import read_recording
from openprogram.recording.replay_session import ReplaySession

if TYPE_CHECKING:
    from openprogram.errors import UnconsumedCallsError

__all__ = ["ExecOutcome", "run_process", "run_with_plan"]

NO_HANDSHAKE = (
    "no Python process of the command activated record/replay, so it ran without it: the "
    "command runs no Python, or runs it with -S (or with -I or -E where openprogram is not "
    "installed in that Python), or with an interpreter that cannot import openprogram"
)


@dataclass(frozen=True)
class ExecOutcome:
    """How a command run by ``openprogram exec`` went."""

    command: tuple[str, ...]
    status: int
    """The command's own exit status (128 + the signal's number when a signal ended it)."""
    plan: RecordReplayPlan | None
    """None: record/replay was off, and the command ran as it is."""
    processes: int = 0
    """The Python processes of the command that activated record/replay."""
    calls: int = 0
    """record: the calls the command added to the recording; replay: the calls served."""
    problems: tuple[str, ...] = ()
    """Replay's mismatch or unconsumed report, refusals, or why it was blocked."""
    not_recorded: tuple[str, ...] = ()
    """record: the connections (``host:port (library)``) no boundary captured."""
    discarded: int = 0
    """record: the calls a failed command recorded that were not kept."""
    put_back: bool = False
    """record: the command failed, so the recording was put back as it was before it (a
    recording exec created for it removed), whatever it recorded."""
    unwatched: str | None = None
    """record: why the connections opened outside Python were not watched here (None: they
    were, :mod:`openprogram.isolation.connect_watch`)."""

    @property
    def exit_status(self) -> int:
        if self.status != 0:
            return self.status
        return 1 if self.problems else 0

    @property
    def ok(self) -> bool:
        return self.exit_status == 0


def run_with_plan(
    command: Sequence[str],
    plan: RecordReplayPlan | None,
    environ: Mapping[str, str] | None = None,
    *,
    on_start: Callable[[RecordReplayPlan], None] | None = None,
    wrap: Callable[[Sequence[str]], Sequence[str]] | None = None,
) -> ExecOutcome:
    """Run ``command`` with ``plan`` active in each of its Python processes (None: as it
    is), in ``environ`` (default: this process's). ``on_start`` is called with the plan once
    the checks have passed, just before the command starts (the CLI tells there that the
    command runs blocked, before anything the command prints). ``wrap`` gives the argv that
    runs the command (an isolation's :meth:`~openprogram.isolation.Relay.wrap`); the checks
    and the outcome are the command's own."""
    base = dict(os.environ if environ is None else environ)
    argv = tuple(command)
    if not argv:
        raise ExecSetupError("no command given: openprogram exec -- python agent.py")
    run = argv if wrap is None else tuple(wrap(argv))
    if plan is None:
        return ExecOutcome(argv, run_process(run, base), None)
    check_command(argv, base, replay=plan.mode == "replay")
    before = _recorded_calls(plan) if plan.mode == "record" else 0
    exchange = open_exchange()
    try:
        environ_of_child = child_environment(base, plan, exchange)
        if on_start is not None:
            on_start(plan)
        # record: the kernel shows exec every connection of the command's processes (not
        # in a namespace: only the bridged hosts get out, and its bridge names what it stops)
        watch = ConnectWatch() if plan.mode == "record" and wrap is None else None
        with watch or contextlib.nullcontext():
            before_exec = watch.before_exec if watch is not None else None
            status = run_process(run, environ_of_child, before_exec=before_exec)
        return _outcome(argv, status, plan, exchange, before, watch)
    finally:
        exchange.remove()


def run_process(
    command: tuple[str, ...],
    environ: dict[str, str],
    *,
    pass_fds: Sequence[int] = (),
    before_exec: Callable[[], None] | None = None,
) -> int:
    """Run the command to its end while exec waits to report; Ctrl-C reaches it from the
    terminal, a SIGINT sent to exec alone and a SIGTERM are passed on (see the module's
    docstring). ``pass_fds`` stay open in it; ``before_exec`` runs in its process after
    fork, before the program starts (after the request to die with exec)."""
    die_with_exec = _die_with_exec()
    steps = [step for step in (die_with_exec, before_exec) if step is not None]

    def prepare() -> None:
        for step in steps:
            step()

    try:
        process = subprocess.Popen(
            command, env=environ, pass_fds=tuple(pass_fds), preexec_fn=prepare if steps else None
        )
    except OSError as error:
        raise ExecSetupError(f"{command[0]}: cannot run it ({error.strerror or error})") from None

    def pass_on(signum: int, frame: FrameType | None) -> None:
        process.send_signal(signum)

    def interrupted(signum: int, frame: FrameType | None) -> None:
        if not _in_the_terminals_foreground():  # else the terminal told the command too
            process.send_signal(signum)

    if threading.current_thread() is not threading.main_thread():
        status = process.wait()  # signal handlers can only be set in the main thread
    else:
        previous_int = signal.signal(signal.SIGINT, interrupted)
        previous_term = signal.signal(signal.SIGTERM, pass_on)
        try:
            status = process.wait()
        finally:
            signal.signal(signal.SIGINT, previous_int)
            signal.signal(signal.SIGTERM, previous_term)
    return 128 - status if status < 0 else status


def _in_the_terminals_foreground() -> bool:
    """Whether exec is in the foreground process group of its controlling terminal (so a
    Ctrl-C typed there reached the command as well)."""
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                return os.tcgetpgrp(fd) == os.getpgrp()
    try:
        terminal = os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY)
    except OSError:
        return False  # no terminal: whoever sent the signal sent it to exec alone
    try:
        return os.tcgetpgrp(terminal) == os.getpgrp()
    except OSError:
        return False
    finally:
        os.close(terminal)


_PR_SET_PDEATHSIG = 1


def _die_with_exec() -> Callable[[], None] | None:
    """On Linux, what the command's process runs before it starts: ask the kernel to send
    it SIGTERM when exec dies. None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def ask() -> None:
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:  # exec died before the request was made
            os.kill(os.getpid(), signal.SIGTERM)

    return ask


def _outcome(
    command: tuple[str, ...],
    status: int,
    plan: RecordReplayPlan,
    exchange: Exchange,
    before: int,
    watch: ConnectWatch | None = None,
) -> ExecOutcome:
    handshakes = read_reports(exchange.folder, "process-")
    if not handshakes:
        raise ExecSetupError(NO_HANDSHAKE)
    for handshake in handshakes.values():
        if handshake.get("status") != "active":
            raise ExecSetupError(
                f"the Python process {handshake.get('pid')} of the command "
                f"({handshake.get('python')}) ran without record/replay: "
                f"{handshake.get('reason')}; run it with an interpreter that has openprogram"
            )
    problems: list[str] = []
    not_recorded: list[str] = []
    calls = 0
    if plan.mode == "blocked":
        problems.append(str(RecordReplayBlockedError(plan.blocked_reason or "")))
    elif plan.mode == "record":
        calls = _recorded_calls(plan) - before
        for report in read_reports(exchange.folder, "unrecorded-").values():
            listed = report.get("connections")
            if isinstance(listed, list):
                not_recorded.extend(str(item) for item in listed if str(item) not in not_recorded)
        if watch is not None:  # what the kernel saw that no Python hook did
            allowed = (*plan.passthrough_hosts, *plan.allowed_hosts)
            outside = not_seen_by_python(
                watch.connections, exchange.folder, allowed=allowed, listed=not_recorded
            )
            note_in_recording(plan.path, outside)
            not_recorded.extend(str(item) for item in outside if str(item) not in not_recorded)
    else:
        calls = _replay_problems(plan, exchange, problems)
    return ExecOutcome(
        command,
        status,
        plan,
        len(handshakes),
        calls,
        tuple(problems),
        tuple(not_recorded),
        unwatched=watch.unwatched if watch is not None else None,
    )


def _replay_problems(plan: RecordReplayPlan, exchange: Exchange, problems: list[str]) -> int:
    """Collect the processes' replay problems; the calls the claiming process consumed."""
    reports = read_reports(exchange.folder, "report-")
    # A mismatch, a refused connection (or a refused process) first: calls left unrequested
    # are often their result.
    for kind in ("mismatch", "refused", "unconsumed"):
        for report in reports.values():
            if report.get("kind") == kind and isinstance(report.get("problem"), str):
                problems.append(report["problem"])
    owner = claimant(exchange.folder)
    if owner is None:
        # No process replayed anything: every call and every tape entry replay would have
        # required was left unread, told as replay tells it.
        unread = None if problems else _nothing_replayed(plan)
        if unread is not None:
            problems.append(str(unread))
        return 0
    claimed = reports.get(owner)
    if claimed is None:
        problems.append(
            f"process {owner}, which replayed the recording, ended without its report (was "
            "it killed?), so whether every recorded call was requested is unknown"
        )
        return 0
    consumed = claimed.get("consumed")
    return consumed if isinstance(consumed, int) else 0


def _nothing_replayed(plan: RecordReplayPlan) -> UnconsumedCallsError | None:
    """What a replay of the plan's recording that served nothing leaves unconsumed: all its
    calls, and the tape entries its tool policies require (None when that is nothing, or the
    recording cannot be read)."""

    if plan.path is None:
        return None
    try:
        recording = read_recording(plan.path)
    except OpenProgramError:
        return None
    session = ReplaySession(recording, match=plan.match, tools=dict(plan.tools))
    return session.unconsumed_error()


def _recorded_calls(plan: RecordReplayPlan) -> int:
    """The calls the plan's recording holds now (0 when it cannot be read)."""

    if plan.path is None:
        return 0
    try:
        return len(read_recording(plan.path).calls)
    except OpenProgramError:
        return 0
