"""litellm's async calls on its default async transport — httpx over aiohttp, two libraries
the HTTP boundary captures — are one call per request: ``litellm.acompletion``, whole and
streamed, recorded against the loopback server and replayed offline to the same answers under
``record_replay()``, ``openprogram exec`` (a new process) and the pytest fixture (an inner
test suite).

litellm reaches nothing beyond this machine: not when imported (``LITELLM_LOCAL_MODEL_COST_MAP``
keeps it from fetching its model cost map, the one fetch it makes then), nor while it calls.
litellm catches a failed fetch and carries on, so a refusal alone would go unseen: every test
here refuses and lists each name lookup and connection beyond this machine, before anything
is sent, and fails on any.
"""

from __future__ import annotations

import importlib
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import openprogram
from tests.http_boundary import litellm_agent
from tests.http_boundary.boundaries import rows
from tests.support.child_processes import openprogram_process, python_process, reported
from tests.support.child_processes import user_environment as child_environment
from tests.support.inner_project import NO_SOCKETS_CONFTEST, InnerProject, isolated_inner_project
from tests.support.offline import SOCKETS_REFUSED, offline
from tests.support.sdk_server import SdkServer

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.filterwarnings(
    # pydantic's warning on a TypedDict of litellm's, built when it reads a stream
    "ignore:Item .* is using the `ReadOnly` qualifier:UserWarning"
)

KEY = "sk-litellm-test-0123456789abcdef"
LITELLM_LOCAL = {"LITELLM_LOCAL_MODEL_COST_MAP": "True"}
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")


RUN_PROGRAM = """
import runpy, sys
path = sys.argv.pop(1)
runpy.run_path(path, run_name="__main__")
"""
"""Runs the program file given as the first argument, as ``python FILE`` would."""

BEYOND_REFUSED = """\
import atexit, json, socket
_beyond = []
_lookup, _connect = socket.getaddrinfo, socket.socket.connect
def _near(host):
    return host in ("localhost", "127.0.0.1", "::1") or str(host).startswith("127.")
def _looked_up(host, *args, **kwargs):
    if host is not None and not _near(host):
        _beyond.append(["lookup", str(host)])
        raise OSError(f"refused to look up {host!r}")
    return _lookup(host, *args, **kwargs)
def _connected(self, address):
    if isinstance(address, tuple) and not _near(address[0]):
        _beyond.append(["connect", str(address[0])])
        raise OSError(f"refused to connect to {address!r}")
    return _connect(self, address)
socket.getaddrinfo = _looked_up
socket.socket.connect = _connected
atexit.register(lambda: print("BEYOND " + json.dumps(_beyond), flush=True))
"""
"""Python source, run first in a child: every name lookup and connection beyond this
machine is refused before anything is sent, and listed as JSON after ``BEYOND`` at exit."""


def beyond_this_machine(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode()
    return not (isinstance(host, str) and (host in LOOPBACK_NAMES or host.startswith("127.")))


@pytest.fixture
def remote_attempts(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every name lookup and connection beyond this machine in the test, refused before
    anything is sent and listed; the test fails on any."""
    attempts: list[Any] = []
    lookup, connect = socket.getaddrinfo, socket.socket.connect

    def looked_up(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and beyond_this_machine(host):
            attempts.append(host)
            raise OSError(f"the litellm tests refuse to look up {host!r}")
        return lookup(host, *args, **kwargs)

    def connected(self: socket.socket, address: Any) -> None:
        if isinstance(address, tuple) and beyond_this_machine(address):
            attempts.append(address)
            raise OSError(f"the litellm tests refuse to connect to {address!r}")
        connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", looked_up)
    monkeypatch.setattr(socket.socket, "connect", connected)
    yield attempts
    assert attempts == [], "litellm tried to reach beyond this machine"


@pytest.fixture
def litellm(monkeypatch: pytest.MonkeyPatch, remote_attempts: list[Any]) -> ModuleType:
    """litellm, imported with its model cost map read from the copy it ships, its key set,
    and its default async transport (httpx over aiohttp) in force."""
    for name, value in LITELLM_LOCAL.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    module = importlib.import_module("litellm")
    handler = importlib.import_module("litellm.llms.custom_httpx.http_handler")
    assert handler.AsyncHTTPHandler.should_use_aiohttp_transport()
    return module


def request_rows(path: Path) -> list[dict[str, Any]]:
    return [row for row in rows(path) if row["type"] == "request"]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
async def test_acompletion_is_one_call_recorded_and_replayed_offline(
    litellm: ModuleType, aiohttp_sends: list[str], stream: bool, tmp_path: Path
) -> None:
    path = tmp_path / "litellm.jsonl"
    with SdkServer() as server:
        with openprogram.record_replay(path, mode="record"):
            live = await litellm_agent.ask(server.base_url, stream=stream)
        url = server.base_url
        assert len(server.received) == 1

    assert live["text"] == litellm_agent.ANSWER
    assert aiohttp_sends == ["POST"]  # the default transport sent it through aiohttp
    [request] = request_rows(path)
    assert request["url"] == f"{url}/v1/chat/completions"
    assert request["body"]["messages"] == [{"role": "user", "content": litellm_agent.QUESTION}]
    assert KEY not in path.read_text()

    with offline(), openprogram.record_replay(path, mode="replay") as replay:
        replayed = await litellm_agent.ask(url, stream=stream)
    assert replayed == live
    assert aiohttp_sends == ["POST"]  # answered above aiohttp, never sent
    assert replay.session is not None
    assert replay.session.unconsumed_calls == []


def test_exec_records_one_call_per_acompletion_and_replays_offline(tmp_path: Path) -> None:
    program = tmp_path / "litellm_program.py"
    shutil.copy(litellm_agent.__file__, program)
    env = {**child_environment(tmp_path / "home"), **LITELLM_LOCAL}
    command = (sys.executable, "-c", BEYOND_REFUSED + RUN_PROGRAM, str(program))
    with SdkServer() as server:
        env["SDK_SERVER_URL"] = server.base_url
        recorded = openprogram_process(
            "exec", "--record", "litellm", "--", *command, env={**env, "OPENAI_API_KEY": KEY}
        )
        assert len(server.received) == 2
    path = tmp_path / "home" / "recordings" / "litellm.jsonl"

    assert recorded.returncode == 0, recorded.stderr
    assert f"openprogram: recorded 2 calls into {path}" in recorded.stderr
    assert [answer["text"] for answer in reported(recorded)] == [litellm_agent.ANSWER] * 2
    assert reported(recorded, "BEYOND") == []
    assert KEY not in path.read_text()

    # the server is stopped, the key unset, every connection refused
    command = (sys.executable, "-c", SOCKETS_REFUSED + RUN_PROGRAM, str(program))
    env.pop("OPENAI_API_KEY", None)
    replayed = openprogram_process("exec", "--replay", "litellm", "--", *command, env=env)

    assert replayed.returncode == 0, replayed.stderr
    assert reported(replayed) == reported(recorded)
    assert f"openprogram: 2 calls replayed from {path} and matched\n" in replayed.stderr
    assert "never requested" not in replayed.stderr


FIXTURE_TESTS = """\
import os

from litellm_agent import ANSWER, ask

URL = os.environ["SDK_SERVER_URL"]


async def test_whole(openprogram_recording):
    assert (await ask(URL, stream=False))["text"] == ANSWER


async def test_streamed(openprogram_recording):
    assert (await ask(URL, stream=True))["text"] == ANSWER
"""


def test_the_fixture_records_one_call_per_acompletion_and_replays_offline(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    litellm: ModuleType,  # imported here first: the inner runs keep it loaded
) -> None:
    project: InnerProject = isolated_inner_project(pytester, monkeypatch)
    shutil.copy(litellm_agent.__file__, project.root / "tests" / "litellm_agent.py")
    project.write("test_litellm_agent.py", FIXTURE_TESTS)
    project.write("conftest.py", "")  # loopback reachable (this test refuses what is beyond)
    with SdkServer() as server:
        monkeypatch.setenv("SDK_SERVER_URL", server.base_url)
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
        assert len(server.received) == 2
    for test in ("test_whole", "test_streamed"):
        recording = project.recording("test_litellm_agent", test)
        assert len(request_rows(recording)) == 1
        assert KEY not in recording.read_text()

    project.write("conftest.py", NO_SOCKETS_CONFTEST)
    monkeypatch.delenv("OPENAI_API_KEY")
    result = project.run()  # record mode none: replay only, no socket, no key

    result.assert_outcomes(passed=2)
    assert "never requested" not in result.stdout.str()


@pytest.mark.parametrize("local", [True, False], ids=["cost map local", "cost map fetched"])
def test_litellm_reaches_nothing_when_imported(local: bool, tmp_path: Path) -> None:
    # the process boundary is the subject: what a first import of litellm does
    env = child_environment(tmp_path / "home")
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    env.pop("LITELLM_OFFLINE_MODE", None)
    if local:
        env.update(LITELLM_LOCAL)
    imported = python_process(BEYOND_REFUSED + "import litellm\n", env=env)

    assert imported.returncode == 0, imported.stderr
    beyond = reported(imported, "BEYOND")
    if local:
        assert beyond == []
    else:  # what the variable prevents, and what the watch catches
        assert ["lookup", "raw.githubusercontent.com"] in beyond
