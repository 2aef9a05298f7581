"""The fixture covers both boundaries for every thread: a thread or an executor's worker
started by the test is served from the recording under replay — never live — at the
provider registry and at HTTP; a mismatch at HTTP fails the test with the report, also when
the test swallowed it with ``except BaseException``; passthrough hosts go live."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from tests.support.inner_project import LIVE_MODEL, InnerProject
from tests.support.sse_server import ScriptedServer

pytest_plugins = ["pytester"]

OFFLINE_WHEN_ASKED = """\
import os
import socket

import pytest


@pytest.fixture(autouse=True)
def _offline_when_asked(monkeypatch):
    if not os.environ.get("INNER_OFFLINE"):
        return

    def refuse(*args, **kwargs):
        raise OSError("sockets are disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
"""

THREAD_HELPERS = """
import asyncio
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from openprogram.providers import Context, Model, UserMessage, complete_simple

MODEL = Model(id="live", api="live", provider="live")
URL = os.environ["AGENT_URL"]


def ask_model(text):
    context = Context(messages=[UserMessage(content=text)])
    return asyncio.run(complete_simple(MODEL, context)).text


def ask_http(question, url=URL):
    return httpx.post(url + "/ask", json={"question": question}, timeout=10).json()["answer"]


def in_a_thread(function, *args):
    seen = []

    def run():
        try:
            seen.append(function(*args))
        except BaseException as error:  # a worker that logs and carries on
            seen.append(type(error).__name__)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    return seen[0]

"""
HELPERS = LIVE_MODEL + THREAD_HELPERS

THREADS = """
QUESTION = {question!r}


def test_threads(openprogram_recording):
    answers = [in_a_thread(ask_model, "in a thread"), in_a_thread(ask_http, QUESTION)]
    with ThreadPoolExecutor(max_workers=1) as pool:
        answers.append(pool.submit(ask_model, "in a worker").result())
        answers.append(pool.submit(ask_http, "from a worker").result())
    assert answers[::2] == ["echo:in a thread", "echo:in a worker"]
    if openprogram_recording.mode == "replay":
        assert LIVE_CALLS == []
"""


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        monkeypatch.setenv("AGENT_URL", running.base_url)
        yield running


def inner(project: InnerProject, body: str) -> None:
    project.write("conftest.py", OFFLINE_WHEN_ASKED)
    project.write("test_agent.py", HELPERS + body)


def answer(server: ScriptedServer, *texts: str) -> None:
    from tests.support.http_agent import answering

    server.serve(*(answering(text) for text in texts))


def test_threads_and_workers_replay_from_the_recording_never_live(
    project: InnerProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner(project, THREADS.format(question="from a thread"))
    answer(server, "to the thread", "to the worker")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    assert len(server.received) == 2
    monkeypatch.setenv("INNER_OFFLINE", "1")
    project.run().assert_outcomes(passed=1)
    assert len(server.received) == 2


def test_a_thread_that_drifts_is_refused_and_fails_the_test(
    project: InnerProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner(project, THREADS.format(question="from a thread"))
    answer(server, "to the thread", "to the worker")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    inner(project, THREADS.format(question="changed in the thread"))
    monkeypatch.setenv("INNER_OFFLINE", "1")
    result = project.run()
    result.assert_outcomes(failed=1)
    # The thread swallowed the refusal; matched by content, the later calls are served all
    # the same, and the test fails when its body returns, with the mismatch the thread met.
    result.stdout.fnmatch_lines(
        [
            "*replay mismatch at call 1, field body.question:",
            "*recorded 'from a thread', incoming 'changed in the thread'",
            "*(the code under test caught a replay mismatch and carried on; *",
        ],
        consecutive=True,
    )
    assert len(server.received) == 2


def test_a_thread_that_drifts_under_order_matching_stops_the_next_call(
    project: InnerProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner(project, THREADS.format(question="from a thread"))
    answer(server, "to the thread", "to the worker")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    inner(project, THREADS.format(question="changed in the thread"))
    monkeypatch.setenv("INNER_OFFLINE", "1")
    result = project.run("-o", "openprogram_match=order")
    result.assert_outcomes(failed=1)
    # The thread swallowed the refusal; the next call, at the same index, then fails the
    # test, which names the mismatch the thread met first.
    result.stdout.fnmatch_lines(
        [
            "*openprogram: earlier, the code under test caught this replay mismatch:",
            "*replay mismatch at call 1, field body.question:",
            "*recorded 'from a thread', incoming 'changed in the thread'",
        ],
        consecutive=True,
    )
    assert len(server.received) == 2


HTTP_BODY = """
QUESTION = {question!r}
SWALLOW = {swallow!r}


def test_http(openprogram_recording):
    if not SWALLOW:
        assert ask_http(QUESTION) == "hello"
        return
    try:
        ask_http(QUESTION)
    except BaseException:
        pass
"""


def test_a_mismatch_at_http_fails_the_test_with_the_report_not_the_carrier(
    project: InnerProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner(project, HTTP_BODY.format(question="hi", swallow=False))
    answer(server, "hello")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("INNER_OFFLINE", "1")
    report = [
        "*replay mismatch at call 0, field body.question:",
        "*recorded 'hi', incoming 'bye'",
    ]
    inner(project, HTTP_BODY.format(question="bye", swallow=False))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *openprogram.errors.ReplayMismatch: " + report[0][1:], "E " + report[1]],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["*openprogram: replaying tests/recordings/test_agent/test_http*"])
    result.stdout.no_fnmatch_line("E *RecordReplayEscape*")
    # The test's own frames only: not httpx's, nor openprogram's, the mismatch passed through.
    result.stdout.no_fnmatch_line("*site-packages*")
    result.stdout.no_fnmatch_line("*openprogram/http_boundary*")
    project.run("--full-trace").stdout.fnmatch_lines(["*site-packages*httpx*"])
    inner(project, HTTP_BODY.format(question="bye", swallow=True))  # except BaseException
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [*report, "(the code under test caught a replay mismatch and carried on;*"],
        consecutive=True,
    )
    assert len(server.received) == 1


def test_passthrough_hosts_go_live_and_are_not_recorded(
    project: InnerProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    with ScriptedServer() as telemetry:
        (project.root / "pytest.ini").write_text(
            (project.root / "pytest.ini").read_text()
            + f"openprogram_http_passthrough_hosts =\n    127.0.0.1:{telemetry.port}\n"
        )
        body = f"""
def test_http(openprogram_recording):
    assert ask_http("hi") == "hello"
    assert ask_http("ping", url={telemetry.base_url!r}) == "pong"
"""
        inner(project, body)
        answer(server, "hello")
        answer(telemetry, "pong", "pong")
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
        recording = project.recording("test_agent", "test_http").read_text()
        assert str(telemetry.port) not in recording
        project.run().assert_outcomes(passed=1)
        assert (len(server.received), len(telemetry.received)) == (1, 2)


def test_in_replay_only_mode_module_level_sdk_clients_build_without_a_key(
    project: InnerProject,
) -> None:
    project.write(
        "test_client.py",
        """\
import os

import openai

CLIENT = openai.OpenAI()  # at import, as many agents do: it needs a key


def test_the_key_is_the_placeholder():
    assert os.environ["OPENAI_API_KEY"] == "openprogram-replay-placeholder-key"
    assert os.environ["ANTHROPIC_API_KEY"] == "openprogram-replay-placeholder-key"
""",
    )
    project.run().assert_outcomes(passed=1)
    assert "OPENAI_API_KEY" not in os.environ  # put back as it was
    result = project.run("--openprogram-record-mode=once")
    result.assert_outcomes(errors=1)  # recording needs a real key: none is made up
    result.stdout.fnmatch_lines(["*OpenAIError*"])
