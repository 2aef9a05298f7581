"""Damaged recordings through every read command: documented exit codes, one-line errors,
no traceback, no hang.

Two small recordings — a real two-call echo tool session (provider calls), and SDK traffic at
the HTTP boundary (``tests.support.http_fuzz_session``: an OpenAI stream with a streamed tool
call, an Anthropic message, a refused connection) — are cut at byte offsets, have bytes
flipped, fields of every row replaced by values of other JSON types, renamed or removed, and
values nested hundreds of levels deep; a FIFO and ``/dev/zero`` are named as the recording.
Each result goes through ``recordings status`` (the configuration pointing at the file, in
mode replay and in mode record), ``list`` (the file in the store beside a good recording),
``show``, ``verify``, ``diff`` (against a good copy) and ``replay``. The exit code each must
give follows from what the strict reader makes of the file (see
``tests.support.read_commands.judge``): ``show`` builds and validates every event as replay
does, so it refuses what replay refuses.
"""

from __future__ import annotations

import itertools
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer.main
import typer.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.cli.app import app
from openprogram.config.paths import recordings_dir
from tests.support.config_files import record_replay_config
from tests.support.http_fuzz_session import fixed_sdk_session, http_deep_nestings
from tests.support.read_commands import (
    COMMANDS,
    VERIFY_TOOLS,
    Verdict,
    failure_class,
    failures,
    judge,
    judge_result,
    report,
)
from tests.support.recording_mutations import (
    OTHER_TYPE_VALUES,
    Mutant,
    changed_below,
    deep_nestings,
    fixed_tool_session,
    nested_field_paths,
    rows_of,
    truncations,
    type_confusions,
)

_names = itertools.count()


@pytest.fixture(autouse=True)
def _click_command_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """``CliRunner.invoke`` rebuilds the click command from the typer app on every call, a
    third of the time of a run here; thousands of runs share one instead."""
    command = typer.main.get_command(app)
    monkeypatch.setattr(typer.testing, "_get_command", lambda typer_app: command)


@dataclass(frozen=True)
class Session:
    """A recording to damage: its bytes, its calls, and where deep values go in it."""

    data: bytes
    calls: int
    deep_nestings: Callable[[bytes], Iterator[Mutant]]
    verify_exit: int
    """What ``verify`` gives the undamaged recording: 0 for a session of openprogram's agent
    loop; 2 for one that starts with an HTTP call (it needs ``-- COMMAND`` to re-run)."""


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Session]:
    folder = tmp_path_factory.mktemp("session")
    return {
        "tool-session": Session(
            fixed_tool_session(folder / "session.jsonl"), 2, deep_nestings, verify_exit=0
        ),
        "sdk-session": Session(
            fixed_sdk_session(folder / "sdk.jsonl"), 3, http_deep_nestings, verify_exit=2
        ),
    }


@pytest.fixture(params=["tool-session", "sdk-session"])
def session(request: pytest.FixtureRequest, sessions: dict[str, Session]) -> Session:
    chosen: Session = sessions[request.param]
    return chosen


@pytest.fixture
def recording(session: Session) -> bytes:
    return session.data


def in_the_store(data: bytes) -> Path:
    """``data`` in the store, as ``good``."""
    path = recordings_dir() / "good.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def good(recording: bytes) -> Path:
    """The undamaged recording in the store, as ``good``."""
    return in_the_store(recording)


def write_mutant(data: bytes) -> Path:
    """A new file in the store for each mutant: ``list`` caches summaries by path, size and
    mtime, and two mutants of one size written within a clock tick look the same to it."""
    path = recordings_dir() / f"mutant-{next(_names)}.jsonl"
    path.write_bytes(data)
    return path


def assert_every_mutant_handled(command: str, mutants: Iterable[Mutant], good: Path) -> None:
    """Run ``command`` on every mutant; fail with one example of each kind of failure."""
    found: dict[str, tuple[str, str]] = {}
    for mutant in mutants:
        path = write_mutant(mutant.data)
        for failure in failures(COMMANDS[command], path, good, judge(path)):
            found.setdefault(failure_class(failure), (mutant.what, failure))
        path.unlink()
    assert not found, report(command, found)


def test_the_recording_is_replayable_and_every_command_accepts_it(
    session: Session, good: Path
) -> None:
    path = write_mutant(session.data)
    verdict = judge(path)
    assert verdict == Verdict(replayable=True, readable=True, calls=session.calls)
    for name, command in COMMANDS.items():
        result = command.invoke(path, good)
        expected = session.verify_exit if name == "verify" else 0
        assert result.exit_code == expected, (name, result.stdout, result.stderr)
        assert judge_result(command, result, verdict, path) == [], name


@pytest.mark.parametrize("command", COMMANDS)
def test_a_recording_cut_at_any_byte(command: str, recording: bytes, good: Path) -> None:
    assert_every_mutant_handled(command, truncations(recording), good)


@pytest.mark.parametrize("command", COMMANDS)
def test_a_field_of_another_type_renamed_or_removed(
    command: str, recording: bytes, good: Path
) -> None:
    assert_every_mutant_handled(command, type_confusions(recording), good)


@pytest.mark.parametrize("command", COMMANDS)
def test_values_nested_hundreds_of_levels_deep(command: str, session: Session, good: Path) -> None:
    assert_every_mutant_handled(command, session.deep_nestings(session.data), good)


@pytest.mark.parametrize("command", COMMANDS)
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_a_field_at_any_depth_of_another_type_renamed_or_removed(
    command: str, recording: bytes, good: Path, data: st.DataObject
) -> None:
    rows = rows_of(recording)
    number = data.draw(st.integers(min_value=0, max_value=len(rows) - 1), label="line - 1")
    path = data.draw(st.sampled_from(list(nested_field_paths(rows[number]))), label="path")
    how = data.draw(st.sampled_from([*OTHER_TYPE_VALUES, "renamed", "removed"]), label="how")
    mutant = changed_below(rows, number, path, how)
    path_of_mutant = write_mutant(mutant.data)
    found = failures(COMMANDS[command], path_of_mutant, good, judge(path_of_mutant))
    path_of_mutant.unlink()
    assert not found, f"{mutant.what}: {found}"


EDIT = st.tuples(
    st.integers(min_value=0, max_value=1 << 20),  # an offset, taken modulo the file's size
    st.sampled_from(["flip a bit", "replace the byte"]),
    st.integers(min_value=0, max_value=255),
)


def edited(data: bytes, edits: list[tuple[int, str, int]]) -> Mutant:
    changed = bytearray(data)
    done = []
    for position, how, value in edits:
        offset = position % len(changed)
        if how == "flip a bit":
            changed[offset] ^= 1 << (value % 8)
            done.append(f"bit {value % 8} of byte {offset} flipped")
        else:
            changed[offset] = value
            done.append(f"byte {offset} = {value:#04x}")
    return Mutant(", ".join(done), bytes(changed))


@pytest.mark.parametrize("command", COMMANDS)
@settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(edits=st.lists(EDIT, min_size=1, max_size=3))
def test_flipped_bits_and_replaced_bytes(
    command: str, recording: bytes, good: Path, edits: list[tuple[int, str, int]]
) -> None:
    mutant = edited(recording, edits)
    path = write_mutant(mutant.data)
    found = failures(COMMANDS[command], path, good, judge(path))
    path.unlink()
    assert not found, f"{mutant.what}: {found}"


# --- a FIFO and /dev/zero named as the recording ---------------------------------------------

SPECIAL_FILE_SECONDS = 120.0
"""How long the commands, started together in separate processes, have in all before one
still running counts as hanging. A command that opens a FIFO or reads ``/dev/zero`` without
care never ends, so the bound only has to be finite: it is far above a command's start-up on
a machine loaded to several times its cores (about 1.5 s each there), and waited out only when
a command hangs."""
MEMORY_LIMIT = 1 << 30
"""Address space for each process: reading /dev/zero to its end fails fast instead of filling
the machine's memory."""


@dataclass
class ProcessResult:
    stdout: str
    stderr: str
    exit_code: int
    exception: BaseException | None = None


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_a_file_that_is_not_a_regular_file(
    kind: str, sessions: dict[str, Session], tmp_path: Path
) -> None:
    """Run in child processes: a hung read of a FIFO, or a read of /dev/zero that never
    ends, must fail this test, not block or exhaust the test run."""
    good = in_the_store(sessions["tool-session"].data)
    if kind == "fifo":
        special = recordings_dir() / "fifo.jsonl"  # in the store too, so `list` meets it
        os.mkfifo(special, 0o600)
    else:
        special = Path("/dev/zero")
    commands = {
        "show": ["show", str(special)],
        "verify": ["verify", str(special), "--tools", VERIFY_TOOLS],
        "diff": ["diff", str(good), str(special)],
        "replay": ["replay", str(special)],
        "status-replay": ["status"],
        "status-record": ["status"],
    }
    if kind == "fifo":
        commands["list"] = ["list"]
    processes: dict[str, subprocess.Popen[str]] = {}
    for name, arguments in commands.items():
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        if name.startswith("status-"):
            config = tmp_path / f"{name}.toml"
            config.write_text(record_replay_config(name.removeprefix("status-"), special))
            env["OPENPROGRAM_CONFIG"] = str(config)
        processes[name] = subprocess.Popen(
            [sys.executable, "-m", "openprogram", "recordings", *arguments],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=_limit_memory,
        )
    deadline = time.monotonic() + SPECIAL_FILE_SECONDS
    found: dict[str, str] = {}
    unreadable = Verdict(replayable=False, readable=False, calls=0)
    for name, process in processes.items():
        try:
            stdout, stderr = process.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            found[name] = f"hang: still running after {SPECIAL_FILE_SECONDS:g} s"
            continue
        result = ProcessResult(stdout, stderr, process.returncode)
        problems = judge_result(COMMANDS[name], result, unreadable, special)
        if problems:
            found[name] = "; ".join(problems)
    assert not found, f"{special} ({kind}):\n" + "\n".join(
        f"- recordings {name}: {problem}" for name, problem in found.items()
    )
