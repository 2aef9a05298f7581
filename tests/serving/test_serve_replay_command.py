"""``openprogram serve --replay`` as a user starts it: the lines it prints are all a program
needs (the base URLs and, as ``exec --replay`` sets them, the placeholder keys the SDKs
refuse to start without), the same program run twice gets the recording twice, and what it
says at the stop; ``--once`` refuses the second run."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from openprogram.activation.boundaries import PLACEHOLDER_API_KEY, set_placeholder_keys
from tests.support.child_processes import python_process, user_environment
from tests.support.proxy_server import running_proxy
from tests.support.sdk_server import SdkServer
from tests.support.serve_process import ServeProcess

PROGRAM = """\
import openai

client = openai.OpenAI(max_retries=0)
for prompt in ("first", "second"):
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": prompt}]
    )
    print(reply.choices[0].message.content)
"""
READY = "Ctrl-C stops it"


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, str]:
    """The program's two calls recorded through a server; what it printed live."""
    path = tmp_path / "agent.jsonl"
    with (
        SdkServer() as upstream,
        running_proxy(record=str(path), upstreams={"openai": upstream.base_url}) as proxy,
    ):
        env = {"OPENAI_BASE_URL": proxy.openai_url, "OPENAI_API_KEY": "sk-live-key"}
        live = python_process(PROGRAM, env=env)
    assert live.returncode == 0, live.stderr
    return path, live.stdout


def printed_environment(serve: ServeProcess) -> dict[str, str]:
    """The ``NAME=value`` lines the server printed once it listens, as an environment."""
    for _ in range(600):  # a bound on a hang, not on speed
        if READY in serve.stdout_so_far:
            break
        time.sleep(0.05)
    lines = [line.strip() for line in serve.stdout_so_far.splitlines() if line.startswith("  ")]
    return dict(line.split("=", 1) for line in lines)


def test_the_printed_lines_are_all_a_program_needs_and_each_run_gets_the_recording(
    tmp_path: Path, recorded: tuple[Path, str]
) -> None:
    path, live = recorded
    with ServeProcess("--replay", str(path), env=user_environment(tmp_path / "home")) as serve:
        printed = printed_environment(serve)
        without_keys = {k: v for k, v in printed.items() if not k.endswith("_API_KEY")}
        missing = python_process(PROGRAM, env=without_keys)
        runs = [python_process(PROGRAM, env=printed) for _ in range(2)]
        stopped = serve.stop(signal.SIGINT)

    placeholders: dict[str, str] = {}
    set_placeholder_keys(placeholders)  # what exec --replay sets where they are unset
    assert {name: printed[name] for name in placeholders} == placeholders
    assert printed["OPENAI_API_KEY"] == PLACEHOLDER_API_KEY
    assert {"ANTHROPIC_API_KEY", "GEMINI_API_KEY"} <= set(printed)
    assert missing.returncode != 0  # the SDK refuses to start without a key
    assert "api_key" in missing.stderr
    assert [(run.returncode, run.stdout) for run in runs] == [(0, live), (0, live)]
    assert stopped.status == 0, stopped.stderr
    assert stopped.stdout.splitlines()[-1] == (
        f"4 calls replayed from {path} in 2 passes, all matched"
    )
    assert "agent: pass 2 begins: every recorded call was served" in stopped.stderr


def test_once_refuses_the_second_run_and_the_stop_says_why(
    tmp_path: Path, recorded: tuple[Path, str]
) -> None:
    path, live = recorded
    env = user_environment(tmp_path / "home")
    with ServeProcess("--replay", str(path), "--once", env=env) as serve:
        printed = printed_environment(serve)
        first = python_process(PROGRAM, env=printed)
        second = python_process(PROGRAM, env=printed)
        stopped = serve.stop(signal.SIGINT)
    assert (first.returncode, first.stdout) == (0, live)
    assert second.returncode != 0
    assert "412" in second.stderr
    assert stopped.status == 1
    assert "the run makes more calls than the recording holds" in stopped.stderr


@pytest.mark.parametrize("own", ["record", "none"])
def test_a_server_whose_sessions_may_record_prints_no_placeholder_key(
    tmp_path: Path, own: str
) -> None:
    with SdkServer() as upstream:
        recording = ["--record", str(tmp_path / "new.jsonl")] if own == "record" else []
        argv = [*recording, "--upstream", f"openai={upstream.base_url}"]
        with ServeProcess(*argv, env=user_environment(tmp_path / "home")) as serve:
            printed = printed_environment(serve)
    assert "OPENAI_BASE_URL" in printed
    assert not [name for name in printed if name.endswith("_API_KEY")]  # the client's own goes up
