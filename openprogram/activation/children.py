"""The child processes of a ``record_replay()`` block and of the pytest fixture's test.

While a block is active, every child process it starts is held to the block's mode, the
way ``openprogram exec`` holds the processes of its command:

* **A Python child inherits the block.** The block opens an exchange folder of its own and
  puts exec's plan in ``os.environ`` for its length (:func:`child_environment`: the plan,
  the folder, its ``sitecustomize`` first on ``PYTHONPATH``), so a Python child — started
  with ``subprocess``, ``os.system``, ``os.posix_spawn``, ``os.spawn*``, ``os.exec*`` or
  ``multiprocessing`` (spawn, forkserver) — activates the same mode and recording as it
  starts, through the start-up path every exec process takes
  (:func:`openprogram.activation.startup.start`). Under record it appends its calls to the
  block's recording (the writer appends safely across processes); under replay one process
  replays the recording: whichever asks for a call first (the claim file of exec,
  ``replay-claim``) — the block's own process takes part in the claim, so the block and a
  child never both serve call 0. A child given an environment of its own (``env=``) gets
  the plan's variables added to it.
* **A child that cannot replay in-process** — not Python (``curl``, ``sh -c``, ``git``), or a
  Python that skips the activation (``python -S``; ``-I`` / ``-E`` where the start-up hook
  is not installed; an interpreter of another environment) — under replay runs in a
  loopback-only network namespace of its own (:class:`openprogram.isolation.Relay`), the
  allowed hosts that name a port bridged into it. Where no namespace can be made
  (:func:`openprogram.isolation.unavailable_reason`), it runs as it is and is named as
  *unenforced* (a :class:`UnenforcedChildWarning`, the ``openprogram`` logger, and
  :attr:`BlockChildren.unenforced`); with the rule ``refuse`` it is refused before it
  starts (:class:`ChildRefusedError`, one line naming the command). The commands of
  ``allowed_commands`` (the file name of ``argv[0]``) always run as they are. Under record
  a child that is not Python runs as it is: its connections are not seen in-process.

When the block ends, :meth:`BlockChildren.problems` reads what its children left in the
folder — a Python child that could not activate, a child's replay mismatch, refused
connection or unrequested calls (when it claimed the recording), a connection a namespace
stopped, a refused child — and the block raises :class:`ChildReplayError` for them.

Spawns are intercepted at the lowest Python layer they pass through, only while a block is active:
``_posixsubprocess.fork_exec`` (``subprocess`` and ``multiprocessing``), ``os.posix_spawn`` /
``posix_spawnp``, ``os.system``, ``os.spawnv*`` and ``os.execv`` / ``os.execve`` (where the other
``os.exec*`` and ``os.spawn*`` functions end). Blocks nest and may run in several threads: the
environment and the rule a child gets are the most recently entered active block's."""

from __future__ import annotations

import atexit
import json
import logging
import os
import re
import shlex
import shutil
import site
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

from openprogram.activation.exec_environment import (
    Exchange,
    PythonCommand,
    child_environment,
    claim_replay,
    claimant,
    interpreter_flags,
    open_exchange,
    python_of,
    read_reports,
)
from openprogram.errors import ChildRefusedError, ReplayInAnotherProcessError, ReplayMismatch

try:
    import _posixsubprocess as _spawning
except ImportError:  # not POSIX: subprocess starts processes another way
    _spawning = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from openprogram.activation.plan import RecordReplayPlan
    from openprogram.isolation import Endpoint, Relay
    from openprogram.recording.replay_session import ReplaySession

__all__ = [
    "CHILDREN_RULES",
    "BlockChildren",
    "ChildrenRule",
    "UnenforcedChildWarning",
    "block_children",
    "check_children_rule",
]

logger = logging.getLogger("openprogram")

ChildrenRule = Literal["isolate", "refuse"]
CHILDREN_RULES: tuple[ChildrenRule, ...] = ("isolate", "refuse")


def check_children_rule(value: object) -> ChildrenRule:
    """``value`` as a children rule; ``ValueError`` naming the rules otherwise."""
    if value not in CHILDREN_RULES:
        raise ValueError(f"children must be 'isolate' or 'refuse', not {value!r}")
    return value


class UnenforcedChildWarning(UserWarning):
    """Under replay, a child process that cannot replay in-process ran with nothing holding
    its connections: no network namespace can be made here."""


CHILDREN_VARIABLE = "_OPENPROGRAM_BLOCK_CHILDREN"
"""Set by a block for its children: the rule and allowed commands (JSON), so a Python child
holds its own children as the block holds its."""

CHILDREN_REPORT = "children-"
"""In the exchange folder: ``children-<pid>.json``, what a Python child's own children did."""

_DECIDING = threading.local()
"""Set while a child is being decided on, in the thread deciding."""

_SUBSTITUTION = re.compile(r"`|\$\(|[\n\r]")
"""Shell syntax that runs a command of its own anywhere in a line (quoted or not)."""


class BlockChildren:
    """The children of one active block: its plan, exchange folder, rule and relay."""

    def __init__(
        self,
        plan: RecordReplayPlan,
        *,
        rule: ChildrenRule | None = None,
        allowed_commands: Iterable[str] | None = None,
        exchange: Exchange | None = None,
    ) -> None:
        self.plan = plan
        self._rule = rule
        self._allowed_commands = None if allowed_commands is None else frozenset(allowed_commands)
        self.pid = os.getpid()
        self._owns_exchange = exchange is None
        self.exchange: Exchange = open_exchange() if exchange is None else exchange
        self.variables: dict[str, str] = {}
        """The variables the block sets in ``os.environ`` while it is active."""
        self._saved: dict[str, str | None] = {}
        self._relay: Relay | None = None
        self._lock = threading.Lock()
        self.refused: list[str] = []
        """Why each child refused before it started was refused."""
        self.unenforced: list[str] = []
        """replay: the children that ran with nothing holding their connections, and why."""
        self._claimed_here = False
        self._replaced_claim = False

    # -- the rule, read from the configuration only when a child needs it ----------------

    def _configured(self) -> tuple[ChildrenRule, frozenset[str]]:
        from openprogram.config.settings import load_config  # only when a child needs it

        loaded = load_config()
        if loaded.settings is None:
            return "isolate", frozenset()
        settings = loaded.settings.record_replay
        return settings.children, frozenset(settings.allowed_commands)

    @property
    def rule(self) -> ChildrenRule:
        if self._rule is None:
            self._rule = self._configured()[0]
        return self._rule

    @property
    def allowed_commands(self) -> frozenset[str]:
        if self._allowed_commands is None:
            self._allowed_commands = self._configured()[1]
        return self._allowed_commands

    # -- deciding how a child starts -----------------------------------------------------

    def start_as(
        self,
        argv: Sequence[str],
        program: str | None,
        environ: Mapping[str, str],
        *,
        replacing: bool = False,
    ) -> list[str] | None:
        """The argv ``argv`` must start as (None: as it is), ``program`` being the file it
        runs when known; raises :class:`ChildRefusedError` when it must not start.
        ``replacing``: this process replaces itself with it (``os.exec*``), so an isolated
        one gets a namespace with no relay (nothing bridged; what it stops is said on its
        standard error), the block ending with this process."""
        if not argv or self.plan.mode != "replay" or deciding_on_a_child():
            return None  # a process started while deciding (the namespace check) runs as is
        _DECIDING.now = True
        try:
            return self._start_as(argv, program, environ, replacing)
        finally:
            _DECIDING.now = False

    def _start_as(
        self, argv: Sequence[str], program: str | None, environ: Mapping[str, str], replacing: bool
    ) -> list[str] | None:
        if self._allowed(argv):
            return None
        found = program or _which(argv[0], environ)
        if found is None:
            return None  # it will not start: "No such file or directory"
        python = python_of(found, list(argv[1:]), environ)
        cannot = _why_not_in_process(found, python)
        if cannot is None:
            return None
        command = shlex.join(argv)
        if self.rule == "refuse":
            refusal = ChildRefusedError(command, f"{cannot}, so it cannot replay in-process")
            self.refused.append(str(refusal))
            raise refusal
        unavailable = namespace_unavailable()
        if unavailable is None:
            if replacing:
                from openprogram.isolation.launch import bridge_argv

                return bridge_argv(argv)
            return self.relay().wrap(list(argv))
        line = f"{command} ran with nothing holding its connections: {cannot}, and {unavailable}"
        self.unenforced.append(line)
        logger.warning("openprogram: unenforced: %s", line)
        warnings.warn(
            f"openprogram: replay unenforced: {line}; set record_replay.children = "
            '"refuse" to refuse such children',
            UnenforcedChildWarning,
            stacklevel=4,
        )
        return None

    def _allowed(self, argv: Sequence[str]) -> bool:
        allowed = self.allowed_commands
        if not allowed:
            return False
        name = os.path.basename(argv[0])
        if name in allowed:
            return True
        if name in ("sh", "bash", "dash") and len(argv) == 3 and argv[1] == "-c":
            return _shell_command_allowed(argv[2], allowed)
        return False

    def relay(self) -> Relay:
        from openprogram.isolation import Relay

        with self._lock:
            if self._relay is None:
                relay = Relay(_bridged(self.plan))
                relay.__enter__()
                self._relay = relay
            return self._relay

    def environment_for(self, environ: Mapping[str, str]) -> dict[str, str]:
        """``environ`` (a child's own) with the block's variables where it lacks them."""
        child = child_environment(environ, self.plan, self.exchange)
        allowed = None if self._allowed_commands is None else sorted(self._allowed_commands)
        child[CHILDREN_VARIABLE] = json.dumps({"children": self._rule, "allowed_commands": allowed})
        return child

    # -- the block's own claim on the recording ------------------------------------------

    def claim_for_block(self, session: ReplaySession) -> Callable[[], None]:
        """Make ``session`` (the block's) serve calls only once this process holds the
        claim on the recording a replaying child would take: this object becomes its
        :attr:`~openprogram.recording.replay_session.ReplaySession.claim`. Returns what
        undoes it."""
        previous, session.claim = session.claim, self
        self._replaced_claim = previous is not None

        def undo() -> None:
            session.claim = previous

        return undo

    def refusal(self, session: ReplaySession) -> ReplayMismatch | None:
        """None once this process holds the claim (taken now if nobody has), and in a
        process forked from it, which shares the block's session; else the refusal."""
        if self._claimed_here or os.getpid() != self.pid:
            return None
        owner = claim_replay(self.exchange.folder, self.pid)
        if owner != self.pid:
            return ReplayInAnotherProcessError(session.calls_consumed, owner, self.pid)
        self._claimed_here = True
        if session.claim is self and not self._replaced_claim:
            session.claim = None  # held for good: the calls after this one ask nothing
        return None

    def kept(self, session: ReplaySession, mismatch: ReplayMismatch) -> None:
        """Nothing to do at once: the block reports its mismatches when it ends."""

    @property
    def claimed_by_child(self) -> bool:
        """Whether a child process claimed the recording (it replays it, and reports the
        calls it left unrequested): the block's own session then served nothing."""
        owner = claimant(self.exchange.folder)
        return owner is not None and owner != self.pid

    # -- what the children left ----------------------------------------------------------

    def own_problems(self) -> list[str]:
        """What this process's own children did that fails the block: refused, or stopped
        in their namespaces."""
        problems = list(self.refused)
        if self._relay is not None:
            problems.extend(
                f"a child process's connection to {line} was stopped: list the host with "
                "its port in allowed_hosts if the block may reach it"
                for line in self._relay.stopped()
            )
        return problems

    def problems(self) -> list[str]:
        """One line for each thing a child (or a child of a Python child) did that fails
        the block (see the module's docstring)."""
        problems = self.own_problems()
        folder = self.exchange.folder
        for handshake in read_reports(folder, "process-").values():
            if handshake.get("status") != "active":
                problems.append(
                    f"the child Python process {handshake.get('pid')} "
                    f"({handshake.get('python')}) ran without record/replay: "
                    f"{handshake.get('reason')}"
                )
        if self.plan.mode == "replay":
            reports = read_reports(folder, "report-")
            for kind in ("mismatch", "refused", "unconsumed"):
                for pid, report in reports.items():
                    if report.get("kind") == kind and isinstance(report.get("problem"), str):
                        problems.append(f"in the child process {pid}: {report['problem']}")
        for pid, held in read_reports(folder, CHILDREN_REPORT).items():
            listed = held.get("problems")
            if isinstance(listed, list):
                problems.extend(f"in the child process {pid}: {line}" for line in listed)
        return list(dict.fromkeys(problems))

    def all_unenforced(self) -> list[str]:
        """:attr:`unenforced`, and the children of Python children that ran unenforced."""
        found = list(self.unenforced)
        for held in read_reports(self.exchange.folder, CHILDREN_REPORT).values():
            listed = held.get("unenforced")
            if isinstance(listed, list):
                found.extend(str(line) for line in listed)
        return list(dict.fromkeys(found))

    def report_to_block(self) -> None:
        """In a Python child of a block, at exit: what its own children did, for the
        block (``children-<pid>.json``)."""
        if os.getpid() != self.pid:
            return  # a forked copy: its parent reports for itself
        problems, unenforced = self.own_problems(), list(self.unenforced)
        if self._relay is not None:
            self._relay.__exit__(None, None, None)
            self._relay = None
        if not problems and not unenforced:
            return
        report = {"problems": problems, "unenforced": unenforced}
        path = self.exchange.folder / f"{CHILDREN_REPORT}{self.pid}.json"
        temporary = path.with_name(f".{path.name}.tmp")
        try:
            temporary.write_text(json.dumps(report), encoding="utf-8")
            os.replace(temporary, path)
        except OSError:
            pass  # the block has ended, and its folder with it: nobody is left to tell

    def not_recorded(self) -> list[str]:
        """record: the connections the Python children opened that no boundary captured."""
        found: list[str] = []
        for report in read_reports(self.exchange.folder, "unrecorded-").values():
            listed = report.get("connections")
            if isinstance(listed, list):
                found.extend(str(item) for item in listed)
        return list(dict.fromkeys(found))

    def close(self) -> None:
        if self._relay is not None:
            self._relay.__exit__(None, None, None)
        if self._owns_exchange:
            self.exchange.remove()


# -- the stack of active blocks, and the process's environment ---------------------------

_ACTIVE: list[BlockChildren] = []
_STACK_LOCK = threading.RLock()


@contextmanager
def block_children(
    plan: RecordReplayPlan,
    *,
    rule: ChildrenRule | None = None,
    allowed_commands: Iterable[str] | None = None,
) -> Iterator[BlockChildren]:
    """Hold the child processes started while the block runs to ``plan`` (see the module's
    docstring). ``rule`` and ``allowed_commands`` None: the configuration's
    (``record_replay.children``, ``record_replay.allowed_commands``), read when a child
    that cannot replay in-process first needs them."""
    children = BlockChildren(plan, rule=rule, allowed_commands=allowed_commands)
    try:
        with _STACK_LOCK:
            children.variables = {
                key: value
                for key, value in children.environment_for(os.environ).items()
                if os.environ.get(key) != value
            }
            children._saved = {key: os.environ.get(key) for key in children.variables}
            os.environ.update(children.variables)
            _ACTIVE.append(children)
            if len(_ACTIVE) == 1:
                _INTERCEPTION.install()
        _stop_forkserver()  # one started before the block would fork children without it
        try:
            yield children
        finally:
            with _STACK_LOCK:
                _leave(children)
            _stop_forkserver()  # one started in the block would keep its plan after it
    finally:
        children.close()


def hold_children_of_child(
    plan: RecordReplayPlan, folder: Path, environ: Mapping[str, str]
) -> None:
    """In a Python child a block started (its variable in ``environ``), under replay: hold
    this process's own children as the block holds its, for the life of the process; at
    exit, what they did is written to the block's folder (exec's own processes, which
    carry no such variable, are left alone: exec holds the whole command)."""
    text = environ.get(CHILDREN_VARIABLE)
    if text is None or plan.mode != "replay":
        return
    try:
        given = json.loads(text)
        rule = None if given.get("children") is None else check_children_rule(given["children"])
        listed = given.get("allowed_commands")
        allowed = None if listed is None else [str(name) for name in listed]
    except (ValueError, AttributeError, TypeError):
        rule, allowed = "refuse", []  # a variable that cannot be read: the strict reading
    children = BlockChildren(plan, rule=rule, allowed_commands=allowed, exchange=Exchange(folder))
    children.variables = children.environment_for({})
    with _STACK_LOCK:
        _ACTIVE.append(children)
        _INTERCEPTION.install()
    atexit.register(children.report_to_block)


def _leave(children: BlockChildren) -> None:
    position = _ACTIVE.index(children)
    if position == len(_ACTIVE) - 1:
        for key, value in children._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    else:  # left before a block entered after it (another thread): that one restores ours
        above = _ACTIVE[position + 1]
        above._saved.update(children._saved)  # what was there before both
    del _ACTIVE[position]
    if not _ACTIVE:
        _INTERCEPTION.uninstall()


def deciding_on_a_child() -> bool:
    """Whether this thread is deciding how a child starts (a process it starts meanwhile,
    the namespace check, runs as it is)."""
    return bool(getattr(_DECIDING, "now", False))


def namespace_unavailable() -> str | None:
    """:func:`openprogram.isolation.unavailable_reason`, imported when a child first needs
    it (an exec process that starts none never loads it)."""
    from openprogram.isolation import unavailable_reason

    return unavailable_reason()


def _stop_forkserver() -> None:
    """Stop ``multiprocessing``'s fork server if it runs (the next process of a forkserver
    context starts a fresh one, from the environment of that moment). Its workers run on.
    Nothing is imported: a program that never used it has none."""
    module = sys.modules.get("multiprocessing.forkserver")
    server = getattr(module, "_forkserver", None)
    stop = getattr(server, "_stop", None)
    if getattr(server, "_forkserver_pid", None) is not None and callable(stop):
        stop()


def _current() -> BlockChildren | None:
    return _ACTIVE[-1] if _ACTIVE else None


# -- the interception ---------------------------------------------------------------------


class _Interception:
    """The patched spawn functions, installed while any block is active."""

    def __init__(self) -> None:
        self.installed = False
        self._originals: list[tuple[Any, str, Any]] = []

    def install(self) -> None:
        if self.installed:
            return
        self.installed = True
        patches: list[tuple[Any, str, Callable[[Any], Any]]] = [
            (_spawning, "fork_exec", _fork_exec),
            (subprocess, "_fork_exec", _fork_exec),
            (os, "system", _system),
            (os, "execv", _execv),
            (os, "execve", _execve),
            (os, "spawnv", _spawn(False, False)),
            (os, "spawnve", _spawn(False, True)),
            (os, "spawnvp", _spawn(True, False)),
            (os, "spawnvpe", _spawn(True, True)),
            (os, "posix_spawn", _posix_spawn(False)),
            (os, "posix_spawnp", _posix_spawn(True)),
        ]
        for owner, name, make in patches:
            original = getattr(owner, name, None)
            if original is None:
                continue
            self._originals.append((owner, name, original))
            setattr(owner, name, make(original))

    def uninstall(self) -> None:
        for owner, name, original in reversed(self._originals):
            setattr(owner, name, original)
        self._originals.clear()
        self.installed = False


_INTERCEPTION = _Interception()


def _decided(
    argv: Sequence[Any], program: Any, environ: Mapping[str, str] | None
) -> tuple[list[str] | None, BlockChildren | None]:
    children = _current()
    if children is None:
        return None, None
    words = [os.fsdecode(word) for word in argv]
    found = None if program is None else os.fsdecode(program)
    return children.start_as(words, found, os.environ if environ is None else environ), children


def _fork_exec(real: Callable[..., int]) -> Callable[..., int]:
    def fork_exec(args: Any, executable_list: Any, *rest: Any) -> int:
        children = _current()
        if children is None or args is None:
            return real(args, executable_list, *rest)
        rest_list = list(rest)
        env_list = rest_list[3]  # after close_fds, pass_fds, cwd
        environ = None if env_list is None else _decode_environ(env_list)
        if environ is not None and children.variables and not _has_plan(environ, children):
            environ = children.environment_for(environ)
            rest_list[3] = [os.fsencode(f"{key}={value}") for key, value in environ.items()]
        program = next((path for path in executable_list if os.access(path, os.X_OK)), None)
        wrapped, _ = _decided(list(args), program, environ)
        if wrapped is not None:
            args = [os.fsencode(word) for word in wrapped]
            executable_list = (os.fsencode(wrapped[0]),)
        return real(args, executable_list, *rest_list)

    return fork_exec


def _system(real: Callable[[str], int]) -> Callable[[Any], int]:
    def system(command: Any) -> int:
        text = os.fsdecode(command)
        wrapped, _ = _decided(["/bin/sh", "-c", text], "/bin/sh", None)
        return real(text if wrapped is None else shlex.join(wrapped))

    return system


def _execv(real: Callable[..., NoReturn]) -> Callable[..., NoReturn]:
    def execv(path: Any, argv: Any) -> NoReturn:
        path, argv, _ = _exec_as(path, argv, None)
        real(path, argv)

    return execv


def _execve(real: Callable[..., NoReturn]) -> Callable[..., NoReturn]:
    def execve(path: Any, argv: Any, env: Any) -> NoReturn:
        if not isinstance(path, int):  # a file descriptor names no command to check
            path, argv, env = _exec_as(path, argv, env)
        real(path, argv, env)

    return execve


def _exec_as(path: Any, argv: Any, env: Any) -> tuple[Any, Any, Any]:
    """What a process replacing itself becomes: a Python that activates is given the block's
    variables; under replay, any other program is isolated (with no relay: the block ends
    with this process) or refused."""
    children = _current()
    if children is None:
        return path, argv, env
    environ: Mapping[str, str] = os.environ if env is None else _decode_mapping(env)
    if env is not None and children.variables and not _has_plan(environ, children):
        env = children.environment_for(environ)
        environ = env
    words = [os.fsdecode(path), *(os.fsdecode(word) for word in list(argv)[1:])]
    wrapped = children.start_as(words, os.fsdecode(path), environ, replacing=True)
    if wrapped is None:
        return path, argv, env
    return wrapped[0], wrapped, env


def _spawn(search: bool, with_env: bool) -> Callable[[Callable[..., int]], Callable[..., int]]:
    def make(real: Callable[..., int]) -> Callable[..., int]:
        def spawn(mode: int, file: Any, args: Any, *env: Any) -> int:
            children = _current()
            if children is None:
                return real(mode, file, args, *env)
            environ = _decode_mapping(env[0]) if with_env else os.environ
            program = _which(os.fsdecode(file), environ) if search else os.fsdecode(file)
            words = [os.fsdecode(file), *(os.fsdecode(word) for word in list(args)[1:])]
            wrapped = children.start_as(words, program, environ)
            if wrapped is not None:
                file, args = wrapped[0], wrapped
            return real(mode, file, args, *env)

        return spawn

    return make


def _posix_spawn(search: bool) -> Callable[[Callable[..., int]], Callable[..., int]]:
    def make(real: Callable[..., int]) -> Callable[..., int]:
        def posix_spawn(path: Any, argv: Any, env: Any, **options: Any) -> int:
            children = _current()
            if children is None:
                return real(path, argv, env, **options)
            environ = _decode_mapping(env)
            if children.variables and not _has_plan(environ, children):
                env = children.environment_for(environ)
                environ = env
            name = os.fsdecode(path)
            program = _which(name, environ) if search else name
            words = [name, *(os.fsdecode(word) for word in list(argv)[1:])]
            wrapped = children.start_as(words, program, environ)
            if wrapped is not None:
                path, argv = wrapped[0], wrapped
            return real(path, argv, env, **options)

        return posix_spawn

    return make


# -- small helpers --------------------------------------------------------------------------


def _has_plan(environ: Mapping[str, str], children: BlockChildren) -> bool:
    return all(environ.get(key) == value for key, value in children.variables.items())


def _decode_environ(entries: Iterable[bytes]) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in entries:
        key, _, value = os.fsdecode(entry).partition("=")
        found[key] = value
    return found


def _decode_mapping(env: Mapping[Any, Any]) -> dict[str, str]:
    return {os.fsdecode(key): os.fsdecode(value) for key, value in env.items()}


def _which(name: str, environ: Mapping[str, str]) -> str | None:
    if os.sep in name:
        return name if os.access(name, os.X_OK) else None
    return shutil.which(name, path=environ.get("PATH", os.defpath))


_HOOK_FILE = "openprogram_startup.pth"


def _hook_installed() -> bool:
    """Whether this environment's ``site-packages`` holds the start-up hook (which starts a
    Python given ``-I`` or ``-E`` too)."""
    if not _HOOK:
        folders = [*site.getsitepackages(), site.getusersitepackages()]
        _HOOK.append(any(os.path.exists(os.path.join(folder, _HOOK_FILE)) for folder in folders))
    return _HOOK[0]


_HOOK: list[bool] = []


def _why_not_in_process(program: str, python: PythonCommand | None) -> str | None:
    """Why a child running ``program`` cannot replay in-process (None: it activates)."""
    if python is None:
        return "it is not Python"
    here = os.path.dirname(os.path.abspath(sys.executable))
    if os.path.dirname(os.path.abspath(python.interpreter)) != here:
        return f"its Python ({python.interpreter}) is not this environment's"
    flags = set(interpreter_flags(python.options))
    if "S" in flags:
        return "-S skips the site module, where record/replay starts"
    if flags & {"I", "E"} and not _hook_installed():
        return "-I or -E skips PYTHONPATH, and the start-up hook is not installed here"
    return None


def _shell_command_allowed(command: str, allowed: frozenset[str]) -> bool:
    """Whether a shell command is one simple command of an allowed program: no operator
    (``;``, ``&&``, ``|``, a redirection, a subshell) and no command substitution."""
    if _SUBSTITUTION.search(command):
        return False
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return False
    if any(word and all(letter in lexer.punctuation_chars for letter in word) for word in words):
        return False
    while words and "=" in words[0] and not words[0].startswith("="):
        words.pop(0)  # VARIABLE=value before the command
    return bool(words) and os.path.basename(words[0]) in allowed


def _bridged(plan: RecordReplayPlan) -> list[Endpoint]:
    """The allowed (and passthrough) hosts that name a port, as the relay bridges them."""
    from openprogram.isolation import Endpoint

    endpoints: list[Endpoint] = []
    for entry in sorted({*plan.allowed_hosts, *plan.passthrough_hosts}):
        host, _, port = entry.rpartition(":")
        if host and ":" not in host and port.isdigit() and 0 < int(port) < 65536:
            endpoints.append(Endpoint(host, int(port)))
    return endpoints
