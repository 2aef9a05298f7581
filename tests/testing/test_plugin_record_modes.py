"""The record modes beyond none / once / all, through pytest: ``new_episodes`` refreshes only
what drifted (an official SDK at HTTP beside a provider call, under pytest-xdist), ``rewrite``
is ``all``, ``live`` calls live and records nothing, and both refuse to run on CI."""

from __future__ import annotations

from collections.abc import Iterator

import orjson
import pytest

from tests.support.inner_project import LIVE_MODEL, InnerProject
from tests.support.sdk_server import SdkServer

pytest_plugins = ["pytester"]

SOCKETS_ALLOWED = "# the inner tests reach the loopback server while they record\n"

TESTS = """
import os

import openai

from openprogram.providers import Model

SECOND = os.environ.get("SECOND", "how are you?")


def test_chat(openprogram_recording):
    client = openai.OpenAI(base_url=os.environ["SDK_URL"], api_key="sk-test-key")
    answers = [
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        ).choices[0].message.content
        for question in ("hello", SECOND)
    ]
    assert answers == ["You said: hello", "You said: " + SECOND]


async def test_provider(openprogram_recording):
    reply = await complete_simple(Model(id="m", api="live", provider="live"),
                                  Context(messages=[UserMessage(content=SECOND)]))
    assert reply.text == "echo:" + SECOND
    if openprogram_recording.mode == "replay":
        assert LIVE_CALLS == []
"""
AGENT = LIVE_MODEL + TESTS


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[SdkServer]:
    with SdkServer() as running:
        monkeypatch.setenv("SDK_URL", running.openai_url)
        yield running


def requests_of(project: InnerProject, test: str) -> list[object]:
    rows = project.recording("test_agent", test).read_bytes().splitlines()
    found = []
    for row in map(orjson.loads, rows):
        if row["type"] != "request":
            continue
        if row.get("boundary") == "http":
            found.append(row["body"]["messages"][0]["content"])
        else:
            found.append(row["context"]["messages"][0]["content"])
    return found


def rows_of_call(project: InnerProject, test: str, call_index: int) -> list[bytes]:
    rows = project.recording("test_agent", test).read_bytes().splitlines()
    return [row for row in rows if orjson.loads(row).get("call_index") == call_index]


def test_new_episodes_refreshes_only_what_drifted_under_xdist(
    project: InnerProject, server: SdkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("conftest.py", SOCKETS_ALLOWED)
    project.write_tests(AGENT)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
    assert len(server.received) == 2
    first_call = rows_of_call(project, "test_chat", 0)

    monkeypatch.setenv("SECOND", "what now?")
    result = project.run(
        "-n", "2", "--openprogram-record-mode=new_episodes", "--openprogram-report=report.json"
    )
    result.assert_outcomes(passed=2)
    assert len(server.received) == 3  # "hello" was replayed, only "what now?" went out
    assert requests_of(project, "test_chat") == ["hello", "what now?"]
    assert rows_of_call(project, "test_chat", 0) == first_call  # replayed: kept as recorded
    result.stdout.fnmatch_lines(
        [
            "*= openprogram recordings =*",
            "2 tests: 2 re-recorded; 1 call replayed; * tokens replayed instead of spent; "
            "2 calls recorded; 2 unused calls dropped",
            "re-recorded  tests/test_agent.py::test_chat  (1 call replayed, 1 call recorded, "
            "1 unused call dropped, * tokens)",
            "    difference at call 1, field body.messages[0].content:",
            "    old 'how are you?', new 'what now?'",
            "re-recorded  tests/test_agent.py::test_provider  (1 call recorded, 1 unused call *",
            "    difference at call 0, field context.messages[0].content:",
        ],
        consecutive=True,
    )
    report = orjson.loads((project.root / "report.json").read_bytes())
    chat = next(test for test in report["tests"] if test["nodeid"].endswith("test_chat"))
    assert (chat["kind"], chat["replayed_calls"], chat["dropped_calls"]) == ("re-recorded", [0], 1)
    assert chat["tokens_replayed"] > 0  # the SDK response's recorded usage

    server.stop()
    project.run().assert_outcomes(passed=2)  # the merged recordings replay offline
    assert len(server.received) == 3
    before = project.recording("test_agent", "test_chat").read_bytes()
    result = project.run("--openprogram-record-mode=new_episodes")
    result.assert_outcomes(passed=2)  # nothing drifted: nothing live, nothing rewritten
    assert project.recording("test_agent", "test_chat").read_bytes() == before
    result.stdout.fnmatch_lines(["2 tests: 2 replayed; 3 calls replayed; *"])


def test_rewrite_is_all_and_live_records_nothing(
    project: InnerProject, server: SdkServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("conftest.py", SOCKETS_ALLOWED)
    project.write_tests(AGENT)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
    monkeypatch.setenv("SECOND", "rewritten")
    result = project.run("--openprogram-record-mode=rewrite")
    result.assert_outcomes(passed=2)
    assert requests_of(project, "test_chat") == ["hello", "rewritten"]
    result.stdout.fnmatch_lines(["2 tests: 2 re-recorded; 0 calls replayed; 3 calls recorded"])
    before = project.recording("test_agent", "test_chat").read_bytes()
    sent = len(server.received)

    monkeypatch.setenv("SECOND", "live now")
    result = project.run("--openprogram-record-mode=live", "-v")
    result.assert_outcomes(passed=2)
    assert len(server.received) == sent + 2
    assert project.recording("test_agent", "test_chat").read_bytes() == before
    folder = project.recording("test_agent", "test_chat").parent
    assert sorted(p.name for p in folder.iterdir()) == ["test_chat.jsonl", "test_provider.jsonl"]
    result.stdout.fnmatch_lines(
        [
            "2 tests: 2 live; 0 calls replayed",
            "live         tests/test_agent.py::test_chat",
            "live         tests/test_agent.py::test_provider",
        ],
        consecutive=True,
    )


@pytest.mark.parametrize(
    ("mode", "refusal"),
    [
        (
            "new_episodes",
            "refusing to record tests/recordings/test_agent/test_answers.jsonl on CI (CI=true): "
            "record locally and commit the recording, or pass --openprogram-allow-record-on-ci *",
        ),
        (
            "live",
            "refusing to call live providers for tests/recordings/test_agent/test_answers.jsonl "
            "on CI (CI=true): run it live locally, or pass --openprogram-allow-record-on-ci *",
        ),
    ],
)
def test_modes_that_call_live_refuse_to_run_on_ci(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch, mode: str, refusal: str
) -> None:
    project.write_tests(
        """
        async def test_answers(openprogram_recording):
            assert await ask("hello") == "echo:hello"
        """
    )
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("CI", "true")
    result = project.run(f"--openprogram-record-mode={mode}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([refusal])
    result = project.run(f"--openprogram-record-mode={mode}", "--openprogram-allow-record-on-ci")
    result.assert_outcomes(passed=1)
