"""``openprogram exec`` records and replays an unchanged agent on the official SDKs, in a
real process: replayed with no key and no socket it prints exactly what it printed live;
a drifted prompt exits 1 with the two-line report."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, reported, user_environment
from tests.support.sdk_agent import write_agent
from tests.support.sdk_clients import API_KEYS
from tests.support.sdk_server import SdkServer


class Recorded:
    """The agent recorded under ``exec --record sdk``, with what it printed."""

    def __init__(self, folder: Path) -> None:
        self.home = folder / "home"
        self.agent = write_agent(folder)
        with SdkServer() as server:
            self.url = server.base_url
            self.live = self.exec("--record", "sdk", "Paris", keys=True)
        self.path = self.home / "recordings" / "sdk.jsonl"

    def exec(
        self, flag: str, name: str, question: str, *, keys: bool = False
    ) -> subprocess.CompletedProcess[str]:
        env = user_environment(self.home)
        env["SDK_SERVER_URL"] = self.url
        for vendor, variable in (("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")):
            env.pop(variable, None)
            if keys:
                env[variable] = API_KEYS[vendor]
        if not keys:
            env["REFUSE_SOCKETS"] = "1"
        command = ("exec", flag, name, "--", sys.executable, str(self.agent), question)
        return openprogram_process(*command, env=env, cwd=self.agent.parent)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Recorded:
    return Recorded(tmp_path_factory.mktemp("exec"))


def test_exec_records_the_sdk_calls_without_the_keys(recorded: Recorded) -> None:
    live = recorded.live
    assert live.returncode == 0, live.stderr
    assert f"openprogram: recorded 3 calls into {recorded.path}" in live.stderr
    text = recorded.path.read_text()
    assert all(key not in text for key in API_KEYS.values())


def test_exec_replays_them_offline_without_a_key(recorded: Recorded) -> None:
    replayed = recorded.exec("--replay", "sdk", "Paris")

    assert replayed.returncode == 0, replayed.stderr
    assert reported(replayed) == reported(recorded.live)
    assert replayed.stderr.endswith(
        f"openprogram: 3 calls replayed from {recorded.path} and matched\n"
    )


def test_exec_reports_a_drifted_prompt_and_exits_1(recorded: Recorded) -> None:
    drifted = recorded.exec("--replay", "sdk", "Rome")

    assert drifted.returncode == 1
    assert drifted.stderr.endswith(
        "openprogram: replay mismatch at call 0, field body.messages[0].content:\n"
        "recorded 'Paris', incoming 'Rome'\n"
    )
