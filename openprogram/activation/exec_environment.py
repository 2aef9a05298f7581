"""The environment ``openprogram exec`` runs a command in, and the folder it shares with it.

exec makes a private folder (``0700``) for each run — the *exchange* — holding:

* ``site/sitecustomize.py`` (:data:`SITECUSTOMIZE`), put FIRST on the command's
  ``PYTHONPATH``, so every Python process of the command (children and grandchildren too,
  which inherit the variable) runs it at start-up, before its first line. It takes its own
  folder off ``sys.path`` (so it shadows nothing), activates record/replay from the two
  variables below (:func:`openprogram.activation.startup.start`, where exec's plan comes
  first — openprogram's start-up hook, in ``site-packages``, has done it already where
  openprogram is installed), then runs the user's own ``sitecustomize``, the next one on
  the path, if there is one;
* one handshake file per process that activated (``process-<pid>.json``), and under replay
  each one's report at exit (``report-<pid>.json``) and the claim of the process that
  replays (``replay-claim``): exec reads them when the command has exited.

The two variables (named in ``_openprogram_startup``, the start-up hook, which hands them on):
:data:`PLAN_VARIABLE` holds the plan as JSON (resolved once by exec, so no process reads the
configuration again), :data:`EXCHANGE_VARIABLE` the folder. Their names do not start with
``OPENPROGRAM_``, so the configuration does not take them for (misspelt) settings.

``PYTHONPATH`` is the folder, then the command's own ``PYTHONPATH`` if it has a non-empty
one: never a trailing separator, which Python would read as the working folder.

Before it runs a command, exec checks that its Python will run that ``sitecustomize``. A
Python process skips it — and would then run live — when it is started with ``-I``
(isolated: ``PYTHONPATH`` ignored), ``-E`` (``PYTHON*`` variables ignored) or ``-S`` (no
``site`` module), or when its interpreter cannot import openprogram. :func:`check_command`
finds the interpreter of the command where it can — the command itself when it is a Python
(``python``, ``python3.11``, ``pypy3``), else the ``#!`` line of a script (a console script
such as ``pytest``, ``#!/usr/bin/env python3``, ``#!/usr/bin/env -S python3 -u``) — reads
its flags, and for an interpreter other than exec's own, asks it to import openprogram.
A command whose Python cannot be found this way (a shell script, a binary) is not checked
here; exec's handshake tells afterwards whether any Python process of it activated."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _openprogram_startup import EXCHANGE_VARIABLE, PLAN_VARIABLE
from openprogram.activation.placeholder_keys import set_placeholder_keys
from openprogram.activation.plan import RecordReplayPlan
from openprogram.deterministic_sources import UTC_ZONE
from openprogram.errors import ExecSetupError

__all__ = [
    "CLAIM_FILE",
    "EXCHANGE_VARIABLE",
    "PLAN_VARIABLE",
    "SITECUSTOMIZE",
    "Exchange",
    "PythonCommand",
    "check_command",
    "child_environment",
    "claim_replay",
    "claimant",
    "interpreter_flags",
    "open_exchange",
    "python_of",
    "read_reports",
    "runs_python",
    "skipping_activation",
]


CLAIM_FILE = "replay-claim"
"""In the exchange folder: the pid of the process that replays the recording."""


def claim_replay(folder: Path, pid: int) -> int:
    """Claim the replay of the recording for process ``pid`` in the exchange ``folder``; the pid of
    the process that holds the claim (``pid`` itself when this call or an earlier one took it). The
    claim appears whole: it is written under a name of its own, then linked into place (a link never
    replaces a file), so a process or thread that lost the race never reads it empty."""
    claim = folder / CLAIM_FILE
    draft = folder / f"{CLAIM_FILE}.{pid}.{threading.get_ident()}"
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(str(pid))
    try:
        os.link(draft, claim)
    except FileExistsError:
        owner = claimant(folder)
        return pid if owner is None else owner
    finally:
        draft.unlink(missing_ok=True)
    return pid


def read_reports(folder: Path, prefix: str) -> dict[int, dict[str, Any]]:
    """The JSON files ``<prefix><pid>.json`` the processes left in the exchange ``folder``,
    by pid (damaged ones skipped)."""
    found: dict[int, dict[str, Any]] = {}
    for path in sorted(folder.glob(f"{prefix}*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid = int(path.stem.removeprefix(prefix))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found[pid] = data
    return found


def claimant(folder: Path) -> int | None:
    """The pid of the process that claimed the replay in the exchange ``folder`` (None:
    none did, or the claim cannot be read)."""
    try:
        return int((folder / CLAIM_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


SITECUSTOMIZE = '''\
"""Written by `openprogram exec`: record/replay in this process from its first line.

It takes its own folder off sys.path, activates record/replay as exec decided
(openprogram.activation.startup: exec's plan comes first), then runs your own
sitecustomize, if you have one.
"""

import os as _os
import sys as _sys


def _openprogram_exec():
    here = _os.path.dirname(_os.path.abspath(__file__))
    _sys.path[:] = [p for p in _sys.path if not (p and _os.path.abspath(p) == here)]
    try:
        from openprogram.activation.startup import start
    except ImportError as error:
        folder = _os.environ.get("_OPENPROGRAM_EXEC_DIR")
        if folder:
            import json

            report = {
                "pid": _os.getpid(),
                "status": "refused",
                "python": _sys.executable,
                "reason": "it cannot import openprogram (%s)" % error,
            }
            try:
                with open(_os.path.join(folder, "process-%d.json" % _os.getpid()), "w") as f:
                    json.dump(report, f)
            except OSError:
                pass
        return
    start()  # does nothing when openprogram's start-up hook has started this process


_openprogram_exec()
_this = _sys.modules.pop("sitecustomize", None)
try:
    import sitecustomize  # the user's own, the next one on the path
except ImportError as _error:
    if _error.name != "sitecustomize":
        raise
    if _this is not None:
        _sys.modules["sitecustomize"] = _this
'''
"""The ``sitecustomize.py`` exec puts first on the command's ``PYTHONPATH``."""


@dataclass(frozen=True)
class Exchange:
    """The private folder of one exec run."""

    folder: Path

    @property
    def site(self) -> Path:
        """The folder put first on ``PYTHONPATH``: it holds ``sitecustomize.py`` only."""
        return self.folder / "site"

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


EXCHANGE_PREFIX = "openprogram-exec-"
OWNER_FILE = "owner"
"""The file of an exchange folder naming the exec process it belongs to (its pid)."""


def open_exchange() -> Exchange:
    """A new private exchange folder holding the ``sitecustomize``, after the folders of
    exec runs that were killed before they could remove theirs are swept away."""
    sweep_stale_exchanges()
    folder = Path(tempfile.mkdtemp(prefix=EXCHANGE_PREFIX))  # 0700
    exchange = Exchange(folder)
    (folder / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
    exchange.site.mkdir(mode=0o700)
    (exchange.site / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    return exchange


def sweep_stale_exchanges() -> None:
    """Remove this user's exchange folders whose exec process is gone (killed: ``kill -9`` leaves no
    chance to clean up). A folder whose owner is alive, or cannot be told, is left alone."""
    for folder in Path(tempfile.gettempdir()).glob(f"{EXCHANGE_PREFIX}*"):
        try:
            if folder.is_symlink() or folder.stat().st_uid != os.getuid():
                continue
            owner = int((folder / OWNER_FILE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if owner != os.getpid() and not _alive(owner):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # another user's process: alive
    return True


def child_environment(
    environ: Mapping[str, str], plan: RecordReplayPlan, exchange: Exchange
) -> dict[str, str]:
    """``environ`` for the command: the exchange's ``sitecustomize`` first on ``PYTHONPATH``, the
    plan and the folder in their variables, under replay (or blocked: every call is refused before
    it is sent) the placeholder keys where ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` are unset, and
    when the plan has a deterministic clock, ``TZ=UTC``: the local zone of the code the clock drives
    (a time shown in the local zone then reads the same on every machine)."""

    child = dict(environ)
    existing = child.get("PYTHONPATH", "")
    site = str(exchange.site)
    child["PYTHONPATH"] = f"{site}{os.pathsep}{existing}" if existing else site
    child[PLAN_VARIABLE] = plan.to_json()
    child[EXCHANGE_VARIABLE] = str(exchange.folder)
    if plan.mode in ("replay", "blocked"):
        set_placeholder_keys(child)
    if plan.sources is not None and plan.sources.clock is not None:
        child["TZ"] = UTC_ZONE
    return child


_PYTHON_NAME = re.compile(r"(?:python|pypy)[0-9.]*")


_SKIPPING_FLAGS = {
    "I": "-I (isolated mode) ignores PYTHONPATH",
    "E": "-E ignores PYTHONPATH",
    "S": "-S skips the site module",
}


_IMPORT_CHECK = "import openprogram.activation.exec_child"


@dataclass(frozen=True)
class PythonCommand:
    """The Python interpreter a command runs, the options it gives it, and where they are
    written (the command line, or a script's ``#!`` line)."""

    interpreter: str
    options: tuple[str, ...]
    where: str


NOT_PYTHON = frozenset(
    {"node", "nodejs", "deno", "bun", "ruby", "perl", "php", "java", "curl", "wget"}
)
"""Programs that are not Python and do not start Python: under replay their connections
would go live, and exec can activate record/replay in Python processes only."""


def check_command(
    command: Sequence[str], environ: Mapping[str, str], *, replay: bool = False
) -> None:
    """Raise :class:`ExecSetupError` when ``command`` cannot be found, or its Python would
    skip exec's ``sitecustomize``; under ``replay``, when it is a program known not to be
    Python (``node``, ``curl``, …, or a script whose ``#!`` line names one). A command exec
    cannot classify (a shell script, ``make``, ``npx``) runs: if no Python process of it
    activated, exec says so afterwards."""
    program = _find(command[0], environ)
    python = python_of(program, command[1:], environ)
    if python is None:
        if replay:
            _check_replayable(program)
        return
    skipped = _skipping(python)
    if skipped is not None:
        raise ExecSetupError(skipped)
    _check_imports_openprogram(python, environ)


def runs_python(command: Sequence[str], environ: Mapping[str, str]) -> bool:
    """Whether ``command`` runs a Python that exec activates record/replay in: a Python
    interpreter, or a script whose ``#!`` line names one (a console script such as
    ``pytest``). Raises :class:`ExecSetupError` when it cannot be found."""
    program = _find(command[0], environ)
    return python_of(program, command[1:], environ) is not None


def skipping_activation(command: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """Why ``command`` would run a Python that skips exec's ``sitecustomize`` (``-I``, ``-E``,
    ``-S``), or None (not Python, not found, or a Python that activates)."""
    if not command:
        return None
    if os.sep in command[0]:
        program: str | None = command[0]
    else:
        program = shutil.which(command[0], path=environ.get("PATH", os.defpath))
    if program is None:
        return None
    python = python_of(program, command[1:], environ)
    return None if python is None else _skipping(python)


def _skipping(python: PythonCommand) -> str | None:
    flags = [flag for flag in interpreter_flags(python.options) if flag in _SKIPPING_FLAGS]
    if not flags:
        return None
    flag = flags[0]
    return (
        f"{_SKIPPING_FLAGS[flag]} ({python.where}), so Python would skip openprogram's "
        "sitecustomize and the program would run without record/replay: run it "
        f"without -{flag}"
    )


def _check_replayable(program: str) -> None:
    shebang = _shebang(program) or ""
    words = [word for word in shebang.split() if not word.startswith("-")]
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    named = os.path.basename(words[0]) if words and shebang else os.path.basename(program)
    if named in NOT_PYTHON:
        raise ExecSetupError(
            f"{os.path.basename(program)} is not a Python program ({named}), so exec cannot "
            "replay it in-process: its connections would reach the live servers. Run it "
            "without --no-proxy, through the recording proxy (nothing was run)"
        )


def _find(program: str, environ: Mapping[str, str]) -> str:
    if os.sep in program:
        found = program if os.access(program, os.X_OK) and os.path.isfile(program) else None
    else:
        found = shutil.which(program, path=environ.get("PATH", os.defpath))
    if found is None:
        raise ExecSetupError(f"{program}: command not found (nothing was run)")
    return found


def python_of(
    program: str, arguments: Sequence[str], environ: Mapping[str, str]
) -> PythonCommand | None:
    """The Python that ``program`` (a path) with ``arguments`` runs, if it can be told."""
    if _is_python(program):
        return PythonCommand(program, tuple(arguments), "on the command line")
    shebang = _shebang(program)
    if shebang is None:
        return None
    words = shebang.split()
    if not words:
        return None
    where = f"in the #! line of {program}"
    interpreter, options = words[0], words[1:]
    if os.path.basename(interpreter) == "env":
        # ``#!/usr/bin/env python3``; ``-S`` splits the rest into words, as here.
        rest = [word for word in options if word not in ("-S", "--split-string")]
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest.pop(0)
        if not rest:
            return None
        found = shutil.which(rest[0], path=environ.get("PATH", os.defpath))
        if found is None:
            return None
        interpreter, options = found, rest[1:]
    if not _is_python(interpreter):
        return None
    return PythonCommand(interpreter, tuple(options), where)


def _is_python(program: str) -> bool:
    return _PYTHON_NAME.fullmatch(os.path.basename(program)) is not None


def _shebang(program: str) -> str | None:
    try:
        with open(program, "rb") as file:
            head = file.read(512)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    return head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()


def interpreter_flags(options: Sequence[str]) -> list[str]:
    """The single-letter options given to the interpreter, in order, each once; they end at the
    script, ``-c``, ``-m`` or ``-`` (``-W`` and ``-X`` take a value, joined or as the next word)."""
    found: list[str] = []
    waiting_for_value = False
    for option in options:
        if waiting_for_value:
            waiting_for_value = False
            continue
        if option == "-" or not option.startswith("-"):
            break
        if option.startswith("--"):
            waiting_for_value = option == "--check-hash-based-pycs"
            continue
        cluster = option[1:]
        for position, letter in enumerate(cluster):
            if letter not in found:
                found.append(letter)
            if letter in "cm":
                return found
            if letter in "WX":
                waiting_for_value = position == len(cluster) - 1
                break
    return found


def _check_imports_openprogram(python: PythonCommand, environ: Mapping[str, str]) -> None:
    if os.path.abspath(python.interpreter) == os.path.abspath(sys.executable):
        return
    try:
        result = subprocess.run(
            [python.interpreter, "-c", _IMPORT_CHECK],
            env=dict(environ),
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise ExecSetupError(
            f"cannot run {python.interpreter} (the Python of the command) to check it: {error}"
        ) from None
    if result.returncode != 0:
        raise ExecSetupError(
            f"{python.interpreter} (the Python of the command, {python.where}) cannot import "
            "openprogram, so the program would run without record/replay: install openprogram "
            f"in its environment, or run the command with {sys.executable}"
        )
