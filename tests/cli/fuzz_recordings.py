"""The read-command fuzz test's material: a small real recording, ways to damage it, and the
read commands with what each must do with a damaged file.

The recording is a two-call echo tool session recorded by the library (the model asks for
``lookup``, the tool answers, the model replies), with its timestamps fixed so the file is the
same bytes on every run. ``LOOKUP_TOOLS`` is the session's tool, for ``verify --tools
fuzz_recordings:LOOKUP_TOOLS`` (pytest puts this folder on ``sys.path``).

What a command must do is judged against what the strict reader makes of the file:
``replay``, ``show``, ``verify`` and ``status`` in replay mode read it as replay will (events
built); ``diff``, ``list`` and ``status`` in record mode read its structure (events left as
rows).
Whatever the file holds, every command exits with a documented code, within a time bound,
with at most one line on stderr (two for a replay mismatch report) and no traceback.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from typer.testing import CliRunner, Result

from openprogram.agent.loop import run_agent
from openprogram.agent.tools import tool
from openprogram.cli.app import app
from openprogram.config.paths import config_location, recordings_dir
from openprogram.providers import ECHO_MODEL, EchoProvider, RecordingProvider
from openprogram.providers.api_registry import isolated_api_providers
from openprogram.providers.recorder import close_recording_writers
from openprogram.providers.recording import read_recording

Row = dict[str, Any]

TIME_LIMIT_SECONDS = 5.0
"""How long one command may take on a file of a few KB before it counts as hanging."""
FIXED_TIMESTAMP = 1_796_000_000_000
FIXED_CREATED_AT = "2026-11-30T10:00:00Z"
PRIVACY_WARNING_START = "warning: recordings may hold personal data"
MISMATCH_START = "error: replay mismatch at "


@tool
def lookup(q: str) -> str:
    """Look a word up."""
    return f"result-{q}"


LOOKUP_TOOLS = [lookup]


# --- the recording -------------------------------------------------------------------------


def record_tool_session(path: Path) -> bytes:
    """Record the two-call echo session into ``path`` (timestamps fixed); return its bytes."""

    async def session() -> None:
        recorder = RecordingProvider(EchoProvider(), path)
        with isolated_api_providers(lambda api: recorder):
            await run_agent(
                ECHO_MODEL,
                '/tool lookup {"q": "x"}',
                system_prompt="You are a test agent.",
                tools=LOOKUP_TOOLS,
            )

    try:
        asyncio.run(session())
    finally:
        close_recording_writers()
    rows = [_fixed_times(json.loads(line)) for line in path.read_bytes().splitlines()]
    data = b"".join(encode(row) for row in rows)
    path.write_bytes(data)
    return data


def _fixed_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: FIXED_TIMESTAMP
            if key == "timestamp"
            else FIXED_CREATED_AT
            if key == "created_at"
            else _fixed_times(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_fixed_times(item) for item in value]
    return value


def encode(row: Any) -> bytes:
    """One row as the recorder writes it (compact), but able to hold a 200-digit integer."""
    return json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def rows_of(data: bytes) -> list[Row]:
    return [json.loads(line) for line in data.splitlines()]


# --- mutations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mutant:
    """A damaged copy of the recording, and what was done to it."""

    what: str
    data: bytes


def truncation_offsets(data: bytes) -> list[int]:
    """Every offset in the first and last rows and within 2 bytes of a line end, and every
    ``step``-th offset elsewhere, so the sweep stays fast on a file of a few KB."""
    step = 7
    first_end = data.index(b"\n") + 1
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    near_line_ends = {
        offset
        for index, byte in enumerate(data)
        if byte == ord("\n")
        for offset in range(index - 2, index + 3)
    }
    return sorted(
        offset
        for offset in range(len(data))
        if offset <= first_end
        or offset >= last_start
        or offset in near_line_ends
        or offset % step == 0
    )


def truncations(data: bytes) -> Iterator[Mutant]:
    for offset in truncation_offsets(data):
        yield Mutant(f"truncated to {offset} bytes ({_where(data, offset)})", data[:offset])


def _where(data: bytes, offset: int) -> str:
    line = data.count(b"\n", 0, offset) + 1
    column = offset - (data.rfind(b"\n", 0, offset) + 1)
    return f"line {line}, column {column}"


OTHER_TYPE_VALUES: dict[str, Any] = {
    "a string": "x",
    "an empty string": "",
    "an integer": 7,
    "a negative integer": -1,
    "a float": 2.5,
    "a list": [1, "x"],
    "an object": {"k": "v"},
    "null": None,
    "true": True,
    "false": False,
    "a 200-digit integer": int("9" * 200),
    "a huge float": 1.7976931348623157e308,
    "the string 'NaN'": "NaN",
    "the string '-Infinity'": "-Infinity",
}
"""What a field is replaced by (a value equal to the original is skipped)."""


def type_confusions(data: bytes) -> Iterator[Mutant]:
    """Each top-level field of each row replaced by a value of another type, renamed, removed."""
    rows = rows_of(data)
    for number, row in enumerate(rows):
        where = f"line {number + 1} ({row['type']})"
        for key, original in row.items():
            for label, value in OTHER_TYPE_VALUES.items():
                if type(value) is type(original) and value == original:
                    continue
                changed = {**row, key: value}
                yield Mutant(f"{where}: {key!r} = {label}", _with_row(rows, number, changed))
            renamed = {(name + "_" if name == key else name): item for name, item in row.items()}
            yield Mutant(f"{where}: {key!r} renamed", _with_row(rows, number, renamed))
            removed = {name: item for name, item in row.items() if name != key}
            yield Mutant(f"{where}: {key!r} removed", _with_row(rows, number, removed))


def nested_field_paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every field and list item below ``value``, at any depth."""
    items: Iterator[tuple[Any, Any]]
    if isinstance(value, dict):
        items = iter(value.items())
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield (*prefix, key)
        yield from nested_field_paths(item, (*prefix, key))


def changed_below(rows: list[Row], number: int, path: tuple[Any, ...], how: str) -> Mutant:
    """``rows[number]`` with the field or list item at ``path`` (any depth) replaced by one of
    :data:`OTHER_TYPE_VALUES` (``how`` names it), renamed, or removed."""
    row = json.loads(json.dumps(rows[number]))
    parent = row
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if how == "removed":
        del parent[last]
    elif how == "renamed" and isinstance(parent, dict):
        parent[f"{last}_"] = parent.pop(last)
    else:
        parent[last] = OTHER_TYPE_VALUES.get(how)
    where = ".".join(str(part) for part in path)
    return Mutant(f"line {number + 1}: {where} {how}", _with_row(rows, number, row))


NESTED_PLACEHOLDER = "openprogram-fuzz-nested-value"


def replaced_at(rows: list[Row], number: int, path: tuple[Any, ...], value_json: str) -> bytes:
    """The recording with ``rows[number]`` at ``path`` set to the JSON text ``value_json``
    (spliced in as text: a value nested 1,000 deep is too deep for ``json.dumps``)."""
    row = json.loads(json.dumps(rows[number]))
    target = row
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = NESTED_PLACEHOLDER
    line = encode(row).replace(json.dumps(NESTED_PLACEHOLDER).encode(), value_json.encode())
    return b"".join(line if index == number else encode(other) for index, other in enumerate(rows))


def _with_row(rows: list[Row], number: int, row: Row) -> bytes:
    return b"".join(encode(row if index == number else other) for index, other in enumerate(rows))


NESTING_DEPTHS = (200, 300, 1000)


def nested(depth: int, container: str) -> str:
    """JSON text of a value ``depth`` containers deep: ``{"a":{"a":…1}}`` or ``[[…1]]``."""
    if container == "object":
        return '{"a":' * depth + "1" + "}" * depth
    return "[" * depth + "1" + "]" * depth


def deep_nestings(data: bytes) -> Iterator[Mutant]:
    """Values nested 200, 300 and 1,000 levels deep inside a request and inside an event."""
    rows = rows_of(data)
    request = next(n for n, row in enumerate(rows) if row["type"] == "request")
    tool_call = next(
        n for n, row in enumerate(rows) if row["type"] == "event" and "tool_call" in row["event"]
    )
    delta = next(
        n for n, row in enumerate(rows) if row["type"] == "event" and "delta" in row["event"]
    )
    places = [
        (request, ("options", "metadata"), "object"),
        (request, ("context", "messages", 0, "content"), "list"),
        (tool_call, ("event", "tool_call", "arguments", "q"), "list"),
        (delta, ("event", "delta"), "object"),
    ]
    for depth in NESTING_DEPTHS:
        for number, path, container in places:
            where = ".".join(str(part) for part in path)
            yield Mutant(
                f"line {number + 1}: {where} = {container} nested {depth} deep",
                replaced_at(rows, number, path, nested(depth, container)),
            )


# --- what the strict reader says ---------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What the strict reader makes of a file."""

    replayable: bool
    """``read_recording(path)`` accepts it: its events build too (replay, show, verify,
    ``status`` in replay mode)."""
    readable: bool
    """``read_recording(path, validate_events=False)`` accepts it: its structure is sound
    (diff, list, ``status`` in record mode)."""
    calls: int


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
    return Verdict(replayable=replayable and readable, readable=readable, calls=calls)


# --- the read commands ------------------------------------------------------------------------


def run(*args: str) -> Result:
    return CliRunner().invoke(app, ["recordings", *args])


def config_text(mode: str, path: Path) -> str:
    """A configuration that records into, or replays from, ``path``."""
    return f'[record_replay]\nmode = "{mode}"\nfile = {json.dumps(str(path))}\n'


def _configure(mode: str, path: Path) -> None:
    config = config_location().path
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(config_text(mode, path))


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
        _configure(mode, path)
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
            lambda verdict: frozenset({0 if verdict.readable else 1}),
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
            lambda path, good: run("verify", str(path), "--tools", "fuzz_recordings:LOOKUP_TOOLS"),
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


def store() -> Path:
    return recordings_dir()


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
