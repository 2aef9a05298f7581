"""``openprogram recordings verify NAME -- COMMAND``: the command is run under replay as
``exec --replay`` runs it, and passes only when it exits 0 with every call matched and
consumed; a recording of HTTP calls without a command asks for one."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.recording.reader import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.cli_runner import error_line, run
from tests.support.http_agent import AGENT_PROGRAM, answering, write_agent
from tests.support.offline import SOCKETS_REFUSED
from tests.support.recording_rows import stored
from tests.support.sse_server import ScriptedServer


@pytest.fixture
def recorded(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """The agent (offline from its first line) and the server URL it recorded "first" with."""
    env = user_environment(tmp_path / "openprogram-home")
    env.pop("PYTHONPATH", None)
    with ScriptedServer() as server:
        server.serve(answering("hello"), answering("more"))
        online = write_agent(tmp_path)
        args = (sys.executable, str(online), server.base_url, "hi", "more")
        result = openprogram_process("exec", "--record", "first", "--", *args, env=env)
        assert result.returncode == 0, result.stderr
        yield write_agent(tmp_path, SOCKETS_REFUSED + AGENT_PROGRAM, "offline.py"), server.base_url


def test_a_command_that_replays_every_call_passes_with_the_transcript_hash(
    recorded: tuple[Path, str],
) -> None:
    agent, url = recorded
    result = run("verify", "first", "--", sys.executable, str(agent), url, "hi", "more")
    assert result.exit_code == 0, result.output
    digest = transcript_hash(read_recording(stored("first")))
    assert result.stdout == (
        f"✔ {stored('first')}: 2 calls replayed and matched\ntranscript hash: {digest}\n"
    )


@pytest.mark.parametrize(
    ("questions", "divergence"),
    [
        (["hi", "bye"], "replay mismatch at call 1, field body.question:\n"),
        (["hi"], "replay incomplete: 1 of 2 recorded calls never requested (call 1)"),
    ],
)
def test_a_drift_or_calls_never_made_fail_with_the_report(
    recorded: tuple[Path, str], questions: list[str], divergence: str
) -> None:
    agent, url = recorded
    result = run("verify", "first", "--json", "--", sys.executable, str(agent), url, *questions)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["divergence"].startswith(divergence)


def test_a_command_that_fails_fails_verify_even_when_its_calls_matched(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    agent, url = recorded
    failing = write_agent(tmp_path, agent.read_text() + "raise SystemExit(4)\n", "failing.py")
    result = run("verify", "first", "--", sys.executable, str(failing), url, "hi", "more")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "the command exited with status 4"


def test_without_a_command_an_http_recording_asks_for_one(recorded: tuple[Path, str]) -> None:
    result = run("verify", "first")
    assert result.exit_code == 2
    assert "call 0 is an HTTP call" in error_line(result)
    assert "add `-- COMMAND` to run the program that made it under replay" in result.stderr


def test_a_command_that_cannot_run_under_replay_exits_2(recorded: tuple[Path, str]) -> None:
    agent, url = recorded
    result = run("verify", "first", "--", sys.executable, "-I", str(agent), url, "hi", "more")
    assert result.exit_code == 2
    assert "-I (isolated mode)" in error_line(result)
    result = run("verify", "first", "--tools", "m:t", "--", sys.executable, str(agent))
    assert result.exit_code == 2
    assert "--tools applies to sessions rebuilt without a command" in error_line(result)


def test_with_json_the_json_is_the_only_thing_on_stdout(
    recorded: tuple[Path, str], tmp_path: Path
) -> None:
    agent, url = recorded
    env = user_environment(tmp_path / "openprogram-home")
    env.pop("PYTHONPATH", None)
    for questions, ok in ((("hi", "more"), True), (("hi", "bye"), False)):
        result = openprogram_process(
            "recordings", "verify", "first", "--json", "--", sys.executable, str(agent), url,
            *questions, env=env,
        )  # fmt: skip
        assert result.returncode == (0 if ok else 1), result.stderr
        report = json.loads(result.stdout)  # what `| python -m json.tool` reads
        assert report["ok"] is ok
        assert "hello" in result.stderr  # the command's own output, kept, on stderr
