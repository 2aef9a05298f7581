"""The pytest fixture ``openprogram_recording`` records and replays tests of agents on the
official SDKs, unchanged: clients built at import time from the key variables, sync and
async. Recorded once against the loopback server, the tests then pass offline with no key
and no socket, and a drifted prompt fails them with the two-line report."""

from __future__ import annotations

import pytest

from tests.support.inner_project import NO_SOCKETS_CONFTEST, InnerProject, isolated_inner_project
from tests.support.sdk_clients import API_KEYS
from tests.support.sdk_server import SdkServer

pytest_plugins = ["pytester"]

AGENT_TESTS = """\
import os

import anthropic
import openai

PROMPT = {prompt!r}
URL = os.environ["SDK_SERVER_URL"]
QUESTION = [{{"role": "user", "content": PROMPT}}]
openai_client = openai.OpenAI(base_url=URL + "/v1")


def teardown_module():
    openai_client.close()


def test_openai_agent(openprogram_recording):
    chunks = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=QUESTION, stream=True
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "You said: " + PROMPT


async def test_anthropic_agent(openprogram_recording):
    async with anthropic.AsyncAnthropic(base_url=URL) as client:
        async with client.messages.stream(
            model="claude-loopback-1", max_tokens=256, messages=QUESTION
        ) as stream:
            text = "".join([piece async for piece in stream.text_stream])
    assert text == "You said: " + PROMPT
"""

LOOPBACK_ONLY_CONFTEST = """\
import socket

import pytest


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    connect = socket.socket.connect

    def loopback(self, address):
        if not str(address[0]).startswith("127."):
            raise OSError("only loopback connections in this test")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", loopback)
"""

TESTS = ("test_openai_agent", "test_anthropic_agent")


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    return isolated_inner_project(pytester, monkeypatch)


def record(project: InnerProject, monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent tests recorded (``once``) against the loopback server, with keys set."""
    project.write("test_sdk_agent.py", AGENT_TESTS.format(prompt="hello"))
    project.write("conftest.py", LOOPBACK_ONLY_CONFTEST)
    with SdkServer() as server, monkeypatch.context() as keys:
        monkeypatch.setenv("SDK_SERVER_URL", server.base_url)
        keys.setenv("OPENAI_API_KEY", API_KEYS["openai"])
        keys.setenv("ANTHROPIC_API_KEY", API_KEYS["anthropic"])
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
    for test in TESTS:
        text = project.recording("test_sdk_agent", test).read_text()
        assert '"boundary":"http"' in text
        assert all(key not in text for key in API_KEYS.values())
    project.write("conftest.py", NO_SOCKETS_CONFTEST)


def test_recorded_sdk_tests_replay_offline_without_a_key(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project, monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)

    project.run().assert_outcomes(passed=2)  # record mode none: replay only, no socket


def test_a_drifted_prompt_fails_the_sdk_tests_with_the_report(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    record(project, monkeypatch)
    project.write("test_sdk_agent.py", AGENT_TESTS.format(prompt="bye"))

    result = project.run()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*replay mismatch at call 0, field body.messages?0?.content:",
            "*recorded 'hello', incoming 'bye'",
        ]
        * 2
    )
    assert "Connection error" not in result.stdout.str()
