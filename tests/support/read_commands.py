"""What each read command must do with a damaged recording, and how a run is judged.

A command's exit code is judged against what the strict reader makes of the file:
``replay``, ``show``, ``verify`` and ``status`` in replay mode read it as replay will, every
event built (``show`` refuses a file replay would refuse, rather than show it wrongly);
``diff``, ``list`` and ``status`` in record mode read its structure, events left as rows.
Whatever the file holds, every command exits with a documented code, within a time bound,
with at most one line on stderr (two for a replay mismatch report) and no traceback.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from typer.testing import Result

from openprogram.provider_boundary.codec import read_recording
from tests.support.cli_runner import run
from tests.support.config_files import configure

TIME_LIMIT_SECONDS = 5.0
"""How long one command may take on a file of a few KB before it counts as hanging."""
PRIVACY_WARNING_START = "warning: recordings may hold personal data"
MISMATCH_START = "error: replay mismatch at "
VERIFY_TOOLS = "tests.support.tool_sessions:LOOKUP_TOOLS"
"""The session's tool, for ``verify --tools``."""


# --- what the strict reader says ---------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the strict reader makes of a file."""

    replayable: bool
    """``read_recording(path)`` accepts it: its events build too (replay, show, verify,
    ``status`` in replay mode)."""
    readable: bool
    """``read_recording(path, validate_events=False)`` accepts it: its structure is sound
    (diff, list)."""
    calls: int
    empty: bool = False
    """The file holds no byte: recording starts it anew (``status`` in record mode)."""


def judge(path: Path) -> Verdict:
    readable = replayable = True
    calls = 0
    try:
        calls = len(read_recording(path, validate_events=False).calls)
    except Exception:  # any refusal, or a crash: the file cannot be read
        readable = False
    try:
        read_recording(path)
    except Exception:
        replayable = False
    empty = path.is_file() and path.stat().st_size == 0
    return Verdict(replayable=replayable and readable, readable=readable, calls=calls, empty=empty)


# --- the read commands ------------------------------------------------------------------------


@dataclass(frozen=True)
class ReadCommand:
    """One read command: how to run it on a file, and the exit codes it may give."""

    name: str
    invoke: Callable[[Path, Path], Result]
    """Run it on ``(file, good)``: the file to test and an undamaged copy of the recording."""
    exits: Callable[[Verdict], frozenset[int]]
    """The documented exit codes for a file the reader judged so."""
    stderr_prefix: tuple[str, ...] = ()
    """Lines every run prints first on stderr (``show``'s privacy warning)."""
    check_output: Callable[[CommandOutput, Path, Verdict], list[str]] | None = None


def _status(mode: str) -> Callable[[Path, Path], Result]:
    def invoke(path: Path, good: Path) -> Result:
        configure(mode, path)
        return run("status")

    return invoke


def _list_rows(result: CommandOutput) -> dict[str, str]:
    rows: dict[str, str] = {}
    for line in result.stdout.splitlines():
        tokens = line.split()
        if tokens and tokens[0] == "*":
            tokens = tokens[1:]
        if tokens:
            rows.setdefault(tokens[0], line)
    return rows


def _check_list(result: CommandOutput, path: Path, verdict: Verdict) -> list[str]:
    if result.exit_code != 0:
        return []
    rows = _list_rows(result)
    good = rows.get("good", "")
    found = []
    if " valid " not in f"{good} " or "INVALID" in good:
        found.append("the good recording is not listed valid")
    if path.is_file() and path.name.endswith(".jsonl"):
        row = rows.get(path.stem)
        if row is None:
            found.append("the damaged recording is not listed")
        elif ("INVALID:" in row) == verdict.readable:
            state = "valid" if verdict.readable else "INVALID"
            found.append(f"the damaged recording is not listed {state}")
    return found


def _show_exits(verdict: Verdict) -> frozenset[int]:
    # docs/cli.md: `show` and `replay` read everything, so a file `list` calls valid (its
    # structure is sound) can still be refused there, with the line.
    return frozenset({0 if verdict.replayable else 2})


def _verify_exits(verdict: Verdict) -> frozenset[int]:
    if not verdict.replayable or verdict.calls == 0:
        return frozenset({2})
    return frozenset({0, 1, 2})


def _diff_exits(verdict: Verdict) -> frozenset[int]:
    return frozenset({0, 1} if verdict.readable else {2})


COMMANDS: dict[str, ReadCommand] = {
    command.name: command
    for command in (
        ReadCommand(
            "status-replay",
            _status("replay"),
            lambda verdict: frozenset({0 if verdict.replayable else 1}),
        ),
        ReadCommand(
            "status-record",
            _status("record"),
            # INVALID exactly where recording would refuse: a file replay could not read (a
            # call appended to it could never be replayed); an empty one is started anew
            lambda verdict: frozenset({0 if verdict.replayable or verdict.empty else 1}),
        ),
        ReadCommand(
            "list",
            lambda path, good: run("list"),
            lambda verdict: frozenset({0}),
            check_output=_check_list,
        ),
        ReadCommand(
            "show",
            lambda path, good: run("show", str(path)),
            _show_exits,
            stderr_prefix=(PRIVACY_WARNING_START,),
        ),
        ReadCommand(
            "verify",
            lambda path, good: run("verify", str(path), "--tools", VERIFY_TOOLS),
            _verify_exits,
        ),
        ReadCommand("diff", lambda path, good: run("diff", str(good), str(path)), _diff_exits),
        ReadCommand(
            "replay",
            lambda path, good: run("replay", str(path)),
            lambda verdict: frozenset({0 if verdict.replayable else 2}),
        ),
    )
}


class CommandHang(BaseException):
    """A command ran past its time limit (a BaseException, so no ``except Exception`` in the
    code under test swallows it, and CliRunner lets it through)."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupt the block with :class:`CommandHang` after ``seconds`` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach the main thread only; pytest runs tests there
        return

    def expire(signum: int, frame: object) -> None:
        raise CommandHang(f"still running after {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def failures(command: ReadCommand, path: Path, good: Path, verdict: Verdict) -> list[str]:
    """Run ``command`` on ``path``; each way it broke its contract, as ``kind: detail``."""
    try:
        with time_limit(TIME_LIMIT_SECONDS):
            result = command.invoke(path, good)
    except CommandHang as hang:
        return [f"hang: {hang}"]
    return judge_result(command, result, verdict, path)


class CommandOutput(Protocol):
    """What a run left behind: a CliRunner ``Result``, or a child process's output."""

    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def exit_code(self) -> int: ...
    @property
    def exception(self) -> BaseException | None: ...


def judge_result(
    command: ReadCommand, result: CommandOutput, verdict: Verdict, path: Path
) -> list[str]:
    found: list[str] = []
    exception = result.exception
    if exception is not None and not isinstance(exception, SystemExit):
        found.append(f"exception escaped: {type(exception).__name__}: {_clip(str(exception))}")
    if "Traceback" in result.stdout or "Traceback" in result.stderr:
        found.append("traceback in the output")
    expected = command.exits(verdict)
    if result.exit_code not in expected:
        codes = " or ".join(str(code) for code in sorted(expected))
        found.append(f"exit {result.exit_code}, expected {codes}: {_first_error(result)}")
    found += stderr_problems(result.stderr, result.exit_code, command.stderr_prefix)
    if command.check_output is not None:
        found += command.check_output(result, path, verdict)
    return found


def stderr_problems(stderr: str, exit_code: int, prefix: tuple[str, ...] = ()) -> list[str]:
    lines = stderr.splitlines()
    for start in prefix:
        if not lines or not lines[0].startswith(start):
            return [f"stderr does not start with {start!r}: {_clip(stderr)}"]
        lines = lines[1:]
    lines = [line for line in lines if not line.startswith("note: ")]  # what a mode covers
    allowed = 2 if lines and lines[0].startswith(MISMATCH_START) else 1
    found = []
    if len(lines) > allowed:
        found.append(f"{len(lines)} lines on stderr: {_clip(' | '.join(lines))}")
    errors = [line for line in lines if line.startswith("error: ")]
    if exit_code == 2 and not errors:
        found.append(f"exit 2 without an error line: {_clip(stderr)}")
    if exit_code == 0 and errors:
        found.append(f"exit 0 with an error line: {_clip(errors[0])}")
    return found


def _first_error(result: CommandOutput) -> str:
    lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    lines += result.stdout.strip().splitlines()[-1:]
    return _clip(lines[0]) if lines else "no output"


def _clip(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "…"


def failure_class(failure: str) -> str:
    """The kind of a failure, for grouping: ``exit 1, expected 2`` or ``exception escaped:
    RecursionError``, without the file-specific detail."""
    kind, _, detail = failure.partition(": ")
    if kind == "exception escaped":
        return f"{kind}: {detail.split(':')[0]}"
    if kind.endswith("lines on stderr"):
        return "several lines on stderr"
    return kind


def report(command: str, found: dict[str, tuple[str, str]]) -> str:
    """One paragraph per failure class: its first mutation and what happened."""
    lines = [f"`recordings {command}` broke its contract in {len(found)} way(s):"]
    for kind, (what, failure) in sorted(found.items()):
        lines.append(f"- {kind}\n    mutation: {what}\n    got:      {failure}")
    return "\n".join(lines)
