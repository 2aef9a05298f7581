"""``openprogram exec`` when record/replay is blocked (a broken configuration, a configured
recording deleted), as a user meets it: a program on the real ``openai`` SDK, with no key
set, run in a new process. What the user reads first is openprogram's reason, and the
program's own error is the blocked refusal, not the SDK's complaint about a missing key."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.recording.writer import close_recording_writers
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.config_files import configure, write_config
from tests.support.recording_rows import stored
from tests.support.sdk_server import SdkServer

# The program under test is on the real SDK, a dev dependency: the command-line tests also
# run where only the runtime dependencies are installed (CI's lowest-versions step).
pytest.importorskip("openai")

SDK_PROGRAM = """\
import sys

import openai

client = openai.OpenAI(base_url=sys.argv[1], max_retries=0)
reply = client.chat.completions.create(
    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
)
print(reply.choices[0].message.content)
"""


@pytest.fixture
def server() -> Iterator[SdkServer]:
    with SdkServer() as running:
        yield running


def run_blocked(tmp_path: Path, server: SdkServer) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "agent.py"
    program.write_text(SDK_PROGRAM)
    env = user_environment(tmp_path / "openprogram-home")
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "PYTHONPATH"):
        env.pop(name, None)
    return openprogram_process(
        "exec", "--", sys.executable, str(program), server.openai_url, env=env
    )


def assert_told_first(result: subprocess.CompletedProcess[str], cause: str) -> None:
    lines = result.stderr.splitlines()
    assert result.returncode == 1, result.stderr
    assert lines[0].startswith("openprogram: record/replay is blocked: "), result.stderr
    assert cause in lines[0]
    assert lines[0].endswith("; the command runs with every call refused")
    # the program's own error is the refusal, with the cause, not the SDK's missing key
    assert "Missing credentials" not in result.stderr
    raised = [line for line in lines if line.startswith("openprogram.errors.")]
    assert raised
    assert raised[0].startswith(
        "openprogram.errors.RecordReplayBlockedError: record/replay is blocked: "
    )
    assert cause in raised[0]
    # and exec's report after the command names it again
    assert lines[-1].startswith("openprogram: record/replay is blocked: ")
    assert result.stdout == ""


def test_a_broken_configuration_is_told_before_the_sdk_runs(
    tmp_path: Path, server: SdkServer
) -> None:
    config = write_config('[record_replay]\nmode = "sometimes"\n')
    result = run_blocked(tmp_path, server)
    assert_told_first(result, f"{config}, line 2: record_replay.mode")
    assert server.received == []  # nothing left for the server, placeholder key or not


def test_a_deleted_recording_is_told_before_the_sdk_runs(tmp_path: Path, server: SdkServer) -> None:
    path = stored("session")
    path.parent.mkdir(parents=True)
    path.write_text("")
    configure("replay", "session")
    path.unlink()
    close_recording_writers()
    result = run_blocked(tmp_path, server)
    assert_told_first(result, f"{path}: no such recording")
    assert server.received == []


def test_a_command_through_the_proxy_is_told_first_too(tmp_path: Path) -> None:
    configure("replay", "gone")
    env = user_environment(tmp_path / "openprogram-home")
    env.pop("OPENAI_API_KEY", None)
    shown = 'echo "key: $OPENAI_API_KEY" >&2'
    result = openprogram_process("exec", "--", "sh", "-c", shown, env=env)
    lines = result.stderr.splitlines()
    assert result.returncode == 1
    assert lines[0].startswith("openprogram: record/replay is blocked: ")
    assert lines[0].endswith("; the command runs with every call refused")
    assert lines[1] == "key: openprogram-replay-placeholder-key"  # its SDK builds, is refused
    assert lines[-1].startswith("openprogram: record/replay is blocked: ")
