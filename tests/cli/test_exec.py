"""``openprogram exec``, each path as a real process: record, replay, drift, unconsumed
calls, blocked, and the refusals before anything runs (``python -I``, an interpreter
without openprogram) or after (no process activated)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.provider_boundary.codec import read_recording
from tests.support.child_processes import CLI_MAIN, openprogram_process, user_environment
from tests.support.cli_runner import error_line, openprogram
from tests.support.config_files import configure
from tests.support.http_agent import AGENT_PROGRAM, answering, write_agent
from tests.support.offline import SOCKETS_REFUSED
from tests.support.recording_rows import header, stored, write_rows
from tests.support.sse_server import ScriptedServer

REPORT = "replay mismatch at call 1, field body.question:\nrecorded 'hi', incoming 'bye'"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    environ = user_environment(tmp_path / "openprogram-home")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH"):
        environ.pop(name, None)
    return environ


def run_exec(
    *args: str, env: dict[str, str], cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return openprogram_process("exec", *args, env=env, cwd=cwd)


def record_session(server: ScriptedServer, tmp_path: Path, env: dict[str, str]) -> Path:
    """``exec --record first`` of an agent asking echo, then the server "hi" and "more"."""
    server.serve(answering("hello"), answering("more answers"))
    agent = write_agent(tmp_path)
    result = run_exec(
        "--record", "first", "--", sys.executable, str(agent),
        *("--echo", "start", server.base_url, "hi", "more"),
        env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == "echo:start\nhello\nmore answers\n"
    return agent


def offline_agent(tmp_path: Path, source: str = AGENT_PROGRAM) -> Path:
    """The agent, every socket refused from its first line after the sitecustomize."""
    return write_agent(tmp_path, SOCKETS_REFUSED + source, name="offline_agent.py")


def test_record_then_replay_both_boundaries_offline(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    record_session(server, tmp_path, env)
    recording = read_recording(stored("first"))
    assert [call.boundary for call in recording.calls] == ["provider", "http", "http"]
    agent = offline_agent(tmp_path)
    args = ("--echo", "start", server.base_url, "hi", "more")
    result = run_exec("--replay", "first", "--", sys.executable, str(agent), *args, env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "echo:start\nhello\nmore answers\n"
    assert f"openprogram: 3 calls replayed from {stored('first')} and matched" in result.stderr
    assert len(server.received) == 2  # while recording only


def test_a_drift_exits_1_with_the_report_also_when_the_program_swallowed_it(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    record_session(server, tmp_path, env)
    args = ("--echo", "start", server.base_url, "bye", "more")
    agent = offline_agent(tmp_path)
    crashed = run_exec("--replay", "first", "--", sys.executable, str(agent), *args, env=env)
    assert crashed.returncode == 1
    assert f"openprogram.errors.ReplayMismatch: {REPORT}" in crashed.stderr
    assert f"openprogram: {REPORT}" in crashed.stderr
    # The uncaught mismatch is shown with the program's own frames only: not httpx's, nor
    # openprogram's, through which it passed.
    shown = crashed.stderr.split("openprogram.errors.ReplayMismatch")[0]
    assert shown.startswith("Traceback (most recent call last; library frames left out):\n")
    files = [line.split('"')[1] for line in shown.splitlines() if line.startswith('  File "')]
    assert files
    assert set(files) == {str(agent)}
    swallowing = offline_agent(
        tmp_path,
        AGENT_PROGRAM.replace("    print(ask(base_url, question))", SWALLOWED),
    )
    result = run_exec("--replay", "first", "--", sys.executable, str(swallowing), *args, env=env)
    assert "the agent carried on" in result.stdout
    assert result.returncode == 1, "the program exited 0, exec did not"
    assert f"openprogram: {REPORT}" in result.stderr


SWALLOWED = """\
    try:
        print(ask(base_url, question))
    except BaseException:
        print("the agent carried on")"""


def test_recorded_calls_never_requested_exit_1(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    record_session(server, tmp_path, env)
    agent = offline_agent(tmp_path)
    args = ("--echo", "start", server.base_url, "hi")
    result = run_exec("--replay", "first", "--", sys.executable, str(agent), *args, env=env)
    assert result.returncode == 1
    assert "replay incomplete: 1 of 3 recorded calls never requested (call 2)" in result.stderr


def test_a_broken_configured_recording_blocks_both_boundaries(
    server: ScriptedServer, tmp_path: Path, env: dict[str, str]
) -> None:
    configure("replay", "missing")
    agent = write_agent(tmp_path, AGENT_PROGRAM.replace(
        "    print(ask(base_url, question))", BLOCKED_REPORT
    ))  # fmt: skip
    result = run_exec("--", sys.executable, str(agent), "--echo", "x", server.base_url, "hi",
                      env=env)  # fmt: skip
    assert result.returncode != 0
    assert "RecordReplayBlockedError: record/replay is blocked" in result.stderr  # echo
    assert server.received == []  # no request left the machine
    result = run_exec("--", sys.executable, str(agent), server.base_url, "hi", env=env)
    assert "refused: record/replay is blocked:" in result.stdout
    assert result.returncode == 1
    assert "run `openprogram recordings status` to see why" in result.stderr
    assert "`openprogram recordings off`" in result.stderr
    assert server.received == []


BLOCKED_REPORT = """\
    try:
        print(ask(base_url, question))
    except BaseException as error:
        print("refused:", error)"""


def test_python_dash_i_is_refused_before_anything_runs(tmp_path: Path, env: dict[str, str]) -> None:
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()"
    result = run_exec("--record", "first", "--", sys.executable, "-I", "-c", code, env=env)
    assert result.returncode == 2
    assert "-I (isolated mode) ignores PYTHONPATH" in result.stderr
    assert "run it without -I" in result.stderr
    assert not marker.exists()


def test_an_interpreter_without_openprogram_is_refused_before_anything_runs(
    tmp_path: Path, env: dict[str, str]
) -> None:
    marker = tmp_path / "ran"
    fake = tmp_path / "python3"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} -E -S "$@"\n')
    fake.chmod(0o755)
    code = f"open({str(marker)!r}, 'w').close()"
    result = run_exec("--record", "first", "--", str(fake), "-c", code, env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert f"{fake} (the Python of the command, on the command line) cannot import" in (
        result.stderr.replace("\n", " ")
    )
    assert not marker.exists()


def test_a_command_whose_python_never_activated_exits_2_naming_why(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # --no-proxy: a shell script runs in-process, as Python (by default it would run
    # through the recording proxy, as any program that is not Python)
    # (-S: no site, so neither openprogram's start-up hook nor exec's sitecustomize runs; -I
    # and -E skip only the sitecustomize, and the hook where openprogram is installed starts
    # the process all the same)
    result = run_exec("--record", "first", "--no-proxy", "--", "sh", "-c",
                      f"{sys.executable} -S -c pass", env=env)  # fmt: skip
    assert result.returncode == 2
    assert "no Python process of the command activated record/replay" in result.stderr
    assert "-S" in result.stderr


def test_with_record_replay_off_the_command_runs_as_it_is(
    tmp_path: Path, env: dict[str, str]
) -> None:
    result = run_exec("--", sys.executable, "-c", "import sys; print('plain'); sys.exit(3)",
                      env=env)  # fmt: skip
    assert (result.returncode, result.stdout) == (3, "plain\n")
    assert "record/replay is off, so the command ran as it is" in result.stderr


def test_the_command_s_own_failure_is_exec_s_exit_status(
    tmp_path: Path, env: dict[str, str]
) -> None:
    result = run_exec("--record", "first", "--", sys.executable, "-c", "raise SystemExit(5)",
                      env=env)  # fmt: skip
    assert result.returncode == 5
    assert result.stderr.splitlines()[-1] == (
        "openprogram: the command exited with status 5 before recording any call, so nothing "
        f"was kept in {stored('first')}"
    )  # it said "recorded 0 calls into" a recording it had just removed
    assert not stored("first").exists()


def test_usage_errors_exit_2_before_anything_runs(tmp_path: Path, env: dict[str, str]) -> None:
    assert run_exec("--replay", "missing", "--", sys.executable, "-c", "pass",
                    env=env).returncode == 2  # fmt: skip
    result = run_exec("--record", "a", "--replay", "b", "--", "true", env=env)
    assert result.returncode == 2
    assert "exclude each other" in result.stderr
    result = run_exec("--record", "first", "--", "no-such-program", env=env)
    assert (result.returncode, result.stderr.count("\n")) == (2, 1)
    assert "Traceback" not in result.stderr
    assert not os.path.exists(stored("first")) or read_recording(stored("first")).calls == []


def test_a_process_whose_openprogram_lacks_the_activation_makes_exec_exit_2(
    tmp_path: Path, env: dict[str, str]
) -> None:
    # The command starts its own Python with an openprogram that has no activation in it
    # (another version, say): that process says so in its handshake, and ran live.
    other = tmp_path / "other-site" / "openprogram"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    inner = f'PYTHONPATH="$PYTHONPATH:{other.parent}" exec {sys.executable} -c pass'
    result = run_exec("--record", "first", "--no-proxy", "--", "sh", "-c", inner, env=env)
    assert result.returncode == 2
    assert "ran without record/replay: it cannot import openprogram" in result.stderr


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--recrod", "x", "--", "python", "-c", "pass"], "'--recrod'. Did you mean '--record'?"),
        (["--replya=x", "python"], "'--replya'. Did you mean '--replay'?"),
        (["--frobnicate", "python"], "No such option '--frobnicate'"),
    ],
)
def test_a_misspelt_option_is_refused_not_run_as_the_command(
    argv: list[str], expected: str
) -> None:
    result = openprogram("exec", *argv)
    assert result.exit_code == 2
    assert expected in error_line(result)
    assert not recordings_dir().exists() or not list(recordings_dir().iterdir())


@pytest.mark.parametrize("command", [["exec"], ["recordings", "list"], ["run"], []])
def test_dash_h_is_help_everywhere(command: list[str]) -> None:
    result = openprogram(*command, "-h")
    assert result.exit_code == 0, result.output
    assert "Usage: openprogram" in result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "--replay", "{path}", "--", sys.executable, "-c", "pass"],
        ["recordings", "verify", "{path}", "--", sys.executable, "-c", "pass"],
    ],
)
def test_a_recording_of_no_call_is_refused_before_anything_runs(
    argv: list[str], tmp_path: Path
) -> None:
    path = stored("empty")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_rows(path, [header("empty")])
    marker = tmp_path / "ran"
    command = [part.format(path=path) for part in argv]
    command[-1] = f"open({str(marker)!r}, 'w')"

    result = openprogram(*command)

    assert result.exit_code == 2, result.output
    assert error_line(result) == (
        f"error: {path} holds no calls: there is nothing to replay (was its recording "
        "interrupted?); record the session first: openprogram exec --record NAME -- COMMAND"
    )
    assert not marker.exists()
    listed = openprogram("recordings", "list")
    assert listed.exit_code == 0
    (row,) = [line.split() for line in listed.stdout.splitlines() if "empty.jsonl" not in line][1:]
    assert row[0] == "empty"
    assert "empty" in row[1:]  # its state


FAILING_AFTER_ONE_CALL = """\
import sys
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
import asyncio
asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")])))
sys.exit(3)
"""


def test_a_command_that_fails_under_record_keeps_nothing_unless_asked(
    tmp_path: Path, env: dict[str, str]
) -> None:
    agent = write_agent(tmp_path, FAILING_AFTER_ONE_CALL)

    result = run_exec("--record", "cut", "--", sys.executable, str(agent), env=env)

    assert result.returncode == 3, result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"openprogram: the command exited with status 3, so the 1 call it recorded was not "
        f"kept in {stored('cut')} (a session cut short would not replay); run it again, or "
        "add --keep-partial to keep them"
    )
    assert not stored("cut").exists()
    kept = run_exec("--record", "cut", "--keep-partial", "--", sys.executable, str(agent), env=env)
    assert kept.returncode == 3
    assert len(read_recording(stored("cut")).calls) == 1


SLEEPER = """\
import os, sys, time
with open(sys.argv[1], "w") as ready:
    ready.write(str(os.getpid()))
try:
    time.sleep(600)
except KeyboardInterrupt:
    open(sys.argv[2], "w").close()
    sys.exit(130)
"""


@contextlib.contextmanager
def started(
    env: dict[str, str], tmp_path: Path, *, sigint: Any = signal.SIG_DFL
) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """exec running a program that sleeps, with no terminal (as under a supervisor), started
    with SIGINT as ``sigint`` says whatever the test run inherited (a shell's background job
    ignores it); the program's pid once it is running. Exec and the program are killed if
    they are still running at the end."""
    agent = write_agent(tmp_path, SLEEPER, name="sleeper.py")
    ready, interrupted = tmp_path / "ready", tmp_path / "interrupted"
    process = subprocess.Popen(
        [sys.executable, "-c", CLI_MAIN, "exec", "--record", "sleep", "--", sys.executable,
         str(agent), str(ready), str(interrupted)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, sigint),
    )  # fmt: skip
    try:
        for _ in range(1200):  # a bound on a hang, not on speed
            if ready.exists() and ready.read_text():
                break
            if process.poll() is not None:
                raise AssertionError(f"the program never started: {process.communicate()}")
            time.sleep(0.05)
        yield process, int(ready.read_text())
    finally:
        with contextlib.suppress(ProcessLookupError):  # none left: all ended
            os.killpg(process.pid, signal.SIGKILL)  # exec and the program: one session
        process.communicate()


def test_a_sigint_sent_to_exec_alone_reaches_the_command(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with started(env, tmp_path) as (process, _):
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=120)

    assert process.returncode == 130, stderr
    assert (tmp_path / "interrupted").exists()
    assert "exited with status 130 before recording any call, so nothing was kept" in stderr
    assert not stored("sleep").exists()


def test_a_command_started_with_sigint_ignored_keeps_ignoring_it(
    tmp_path: Path, env: dict[str, str]
) -> None:
    with started(env, tmp_path, sigint=signal.SIG_IGN) as (process, _):
        process.send_signal(signal.SIGINT)  # passed on, and ignored, as without exec
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)

    assert process.returncode == 128 + signal.SIGTERM, stderr
    assert not (tmp_path / "interrupted").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_killed_exec_takes_the_command_with_it(tmp_path: Path, env: dict[str, str]) -> None:
    with started(env, tmp_path) as (process, child):
        process.kill()
        process.communicate(timeout=120)

        for _ in range(1200):  # a bound on a hang, not on speed
            if not running(child):
                break
            time.sleep(0.05)
        assert not running(child)


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie nobody reaped is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


def test_a_link_in_the_store_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "elsewhere.jsonl"
    recordings_dir().mkdir(parents=True)
    stored("linked").symlink_to(outside)  # dangling: the file it names does not exist

    flagged = openprogram("exec", "--record", "linked", "--", sys.executable, "-c", "pass")

    assert flagged.exit_code == 2
    assert error_line(flagged).startswith(
        f"error: {stored('linked')}: it is a symbolic link (to {outside}), and openprogram "
        "writes into its store only"
    )
    configure("record", "linked")
    configured = openprogram("exec", "--", sys.executable, "-c", "pass")
    assert configured.exit_code == 1
    assert "it is a symbolic link" in configured.stderr
    assert not outside.parent.exists()


def test_a_damaged_recording_blocks_recording_as_it_blocks_replay(tmp_path: Path) -> None:
    path = stored("damaged")
    path.parent.mkdir(parents=True)
    write_rows(path, [header("damaged")])
    path.write_bytes(path.read_bytes() + b"not json\n")

    flagged = openprogram("exec", "--record", "damaged", "--", sys.executable, "-c", "pass")

    assert flagged.exit_code == 2
    assert error_line(flagged).startswith(f"error: {path}, line 2: not valid JSON")
    assert error_line(flagged).endswith(
        "calls appended to it could never be read: record into a new name"
    )
    configure("record", "damaged")
    configured = openprogram("exec", "--", sys.executable, "-c", "pass")
    assert configured.exit_code == 1
    assert "record/replay is blocked" in configured.stderr
    assert path.read_bytes().count(b"\n") == 2
