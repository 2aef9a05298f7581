"""The front door with the official SDKs, as a new user takes it: ``openprogram recordings
record NAME``, then a plain ``python agent.py`` (openai's streamed tool call and answer,
anthropic's async stream); ``recordings show`` lists its calls; ``recordings replay NAME``,
and the same command — the server stopped, no key, every socket refused — prints exactly
what it printed live; a changed prompt gives the two-line report and exits 1; ``recordings
off``, and it goes live again. Each step is a real process in a fresh store; ``.ci/run``
runs these with the SDKs' previous generation too (on httpx instead of httpx2)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, user_environment
from tests.support.sdk_agent import write_agent
from tests.support.sdk_clients import API_KEYS
from tests.support.sdk_server import SdkServer

KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class Store:
    """A fresh store and the agent, recorded once under ``recordings record sdk``."""

    def __init__(self, folder: Path) -> None:
        self.home = folder / "home"
        self.agent = write_agent(folder)
        self.url = ""
        self.path = self.home / "recordings" / "sdk.jsonl"
        switched = self.openprogram("recordings", "record", "sdk")
        assert switched.returncode == 0, switched.stderr
        with SdkServer() as server:
            self.url = server.base_url
            self.live = self.agent_run("Paris", keys=True)
            self.hits = len(server.received)

    def environment(self, *, keys: bool = False, offline: bool = False) -> dict[str, str]:
        env = user_environment(self.home)
        env["SDK_SERVER_URL"] = self.url
        for vendor, variable in KEY_VARIABLES.items():
            env.pop(variable, None)
            if keys:
                env[variable] = API_KEYS[vendor]
        if offline:
            env["REFUSE_SOCKETS"] = "1"
        return env

    def openprogram(self, *args: str) -> subprocess.CompletedProcess[str]:
        return openprogram_process(*args, env=self.environment())

    def agent_run(
        self, question: str, *, keys: bool = False, offline: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """``python agent.py QUESTION``, plainly: no exec, no fixture, no wrapper."""
        return subprocess.run(
            [sys.executable, str(self.agent), question],
            cwd=self.agent.parent,
            env=self.environment(keys=keys, offline=offline),
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(tmp_path_factory.mktemp("configured"))


def test_a_plain_run_under_record_records_every_sdk_call(store: Store) -> None:
    live = store.live
    assert live.returncode == 0, live.stderr
    assert live.stderr == ""  # a process that recorded prints nothing extra
    assert live.stdout.startswith("PROBE ")
    assert store.hits == 3  # openai's two requests, anthropic's one
    text = store.path.read_text()
    assert text.count('"type":"request"') == 3
    assert all(key not in text for key in API_KEYS.values())

    shown = store.openprogram("recordings", "show", "sdk")
    assert shown.returncode == 0, shown.stderr
    assert "3 calls" in shown.stdout
    assert shown.stdout.count(f"POST {store.url}/v1/chat/completions → 200") == 2
    assert f"POST {store.url}/v1/messages → 200" in shown.stdout


def test_replay_with_the_server_stopped_and_no_key_prints_the_same_bytes(store: Store) -> None:
    assert store.openprogram("recordings", "replay", "sdk").returncode == 0

    replayed = store.agent_run("Paris", offline=True)

    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == store.live.stdout
    assert replayed.stderr == ""


def test_a_changed_prompt_gives_the_two_line_report_and_exits_1(store: Store) -> None:
    assert store.openprogram("recordings", "replay", "sdk").returncode == 0

    drifted = store.agent_run("Rome", offline=True)

    assert drifted.returncode == 1
    assert drifted.stdout == ""
    assert drifted.stderr.splitlines()[-2:] == [
        "openprogram.errors.ReplayMismatch: replay mismatch at call 0, field "
        "body.messages[0].content:",
        "recorded 'Paris', incoming 'Rome'",
    ]


def test_off_goes_live_again(store: Store) -> None:
    assert store.openprogram("recordings", "off").returncode == 0
    with SdkServer() as server:
        store.url = server.base_url
        live = store.agent_run("Rome", keys=True)
        assert live.returncode == 0, live.stderr
        assert len(server.received) == 3
    assert store.path.read_text().count('"type":"request"') == 3  # nothing more recorded
