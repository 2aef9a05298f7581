"""A suite recorded with pytest-recording (vcrpy) migrated whole to openprogram: the inner
tests call the real ``openai`` and ``anthropic`` SDKs and ``requests`` against a loopback
server under ``@pytest.mark.vcr``; ``openprogram recordings import tests --pytest-recording``
writes each cassette where the ``openprogram_recording`` fixture reads that test's recording;
the same tests on the fixture then pass offline, reading what they read live, with no key in
a recording — and a prompt changed since the cassette, which vcrpy's method-and-URL matching
serves the old answer, fails with openprogram's replay mismatch report."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest

# Loaded here once, not afresh by each inner run in this process (see inner_project.py).
import requests  # noqa: F401
import vcr  # type: ignore[import-untyped]  # noqa: F401

from tests.support.cli_runner import run
from tests.support.inner_project import InnerProject, isolated_inner_project, literal
from tests.support.models_sdk_server import MODELS, ModelsSdkServer

pytest_plugins = ["pytester"]

OPENAI_KEY = "sk-test-0123456789abcdefghij"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdefghij"
KEYS = (OPENAI_KEY, ANTHROPIC_KEY)

CONFTEST = f'''\
import json
import os
import re
import socket
from pathlib import Path

import anthropic
import openai
import pytest

URL = os.environ["INNER_SERVER_URL"]
VOLATILE = ("id", "created")


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch):
    """Loopback connections only; none at all when INNER_OFFLINE is set."""
    connect = socket.socket.connect
    offline = bool(os.environ.get("INNER_OFFLINE"))

    def guarded(self, address):
        if offline or not str(address[0]).startswith("127."):
            raise OSError(f"no connection to {{address}} in this test")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)


@pytest.fixture
def openai_client():
    with openai.OpenAI(base_url=URL + "/v1", api_key={OPENAI_KEY!r}, max_retries=0) as client:
        yield client


@pytest.fixture
def anthropic_client():
    with anthropic.Anthropic(base_url=URL, api_key={ANTHROPIC_KEY!r}, max_retries=0) as client:
        yield client


def _stable(value):
    if isinstance(value, dict):
        return {{key: _stable(item) for key, item in value.items() if key not in VOLATILE}}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


@pytest.fixture
def save(request):
    """save(name=value, ...): what the test read (ids and timestamps left out), written to
    INNER_OUT for the outer test to compare."""

    def save(**read):
        out = Path(os.environ["INNER_OUT"])
        out.mkdir(exist_ok=True)
        name = re.sub(r"[^\\w.-]", "_", request.node.nodeid)
        (out / f"{{name}}.json").write_text(json.dumps(_stable(read), indent=1, sort_keys=True))

    return save
'''

OPENAI_TESTS = """\
import openai
import pytest

MODEL = "gpt-4o-mini"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


@pytest.mark.vcr
def test_completion(openai_client, save):
    reply = openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.choices[0].message.content == "You said: hello"
    save(reply=reply.model_dump(mode="json"))


@pytest.mark.vcr
def test_stream(openai_client, save):
    stream = openai_client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "stream"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "You said: stream"
    save(text=text, chunks=len(chunks), usage=chunks[-1].usage.model_dump(mode="json"))


@pytest.mark.vcr
def test_tool_loop(openai_client, save):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = openai_client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
    [call] = first.choices[0].message.tool_calls
    assert call.function.name == "get_weather"
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call.model_dump(mode="json")]},
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    second = openai_client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER])
    assert second.choices[0].message.content == "The tool answered: sunny, 21 C"
    save(first=first.model_dump(mode="json"), second=second.model_dump(mode="json"))


class TestErrors:
    @pytest.mark.vcr
    def test_bad_request(self, openai_client, save):
        with pytest.raises(openai.BadRequestError) as raised:
            openai_client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hot"}], temperature=3
            )
        error = raised.value
        save(status=error.status_code, message=error.message, body=error.body)
"""

LOOP_TESTS = f"""\
import os

import pytest
import requests

URL = os.environ["INNER_SERVER_URL"] + "/v1"
HEADERS = {{"authorization": "Bearer {OPENAI_KEY}"}}


@pytest.fixture
def vcr_config():
    return {{"serializer": "json", "decode_compressed_response": True}}


class TestLoop:
    @pytest.mark.vcr
    def test_anthropic_stream(self, anthropic_client, save):
        with anthropic_client.messages.stream(
            model="claude-loopback-1",
            max_tokens=256,
            messages=[{{"role": "user", "content": "plan the loop"}}],
        ) as stream:
            text = "".join(stream.text_stream)
            final = stream.get_final_message()
        assert text == "You said: plan the loop"
        save(text=text, final=final.model_dump(mode="json"))


@pytest.mark.vcr
def test_plain_http(save):
    listing = requests.get(URL + "/models", headers=HEADERS, timeout=10)
    question = {{"model": "gpt-4o-mini", "messages": [{{"role": "user", "content": "plain"}}]}}
    answer = requests.post(URL + "/chat/completions", json=question, headers=HEADERS, timeout=10)
    assert (listing.status_code, answer.status_code) == (200, 200)
    save(
        models=[model["id"] for model in listing.json()["data"]],
        answer=answer.json(),
        content_type=answer.headers["content-type"],
    )


@pytest.mark.parametrize("prompt", ["hi", "bye"])
@pytest.mark.vcr
def test_echo(prompt, openai_client, save):
    reply = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": prompt}}]
    )
    assert reply.choices[0].message.content == "You said: " + prompt
    save(reply=reply.model_dump(mode="json"))
"""

TEST_FILES = {"test_openai_chat.py": OPENAI_TESTS, "agent/test_loop.py": LOOP_TESTS}

CASSETTES = {
    "cassettes/test_openai_chat/test_completion.yaml": "test_openai_chat/test_completion",
    "cassettes/test_openai_chat/test_stream.yaml": "test_openai_chat/test_stream",
    "cassettes/test_openai_chat/test_tool_loop.yaml": "test_openai_chat/test_tool_loop",
    "cassettes/test_openai_chat/TestErrors.test_bad_request.yaml": (
        "test_openai_chat/TestErrors.test_bad_request"
    ),
    "agent/cassettes/test_loop/TestLoop.test_anthropic_stream.json": (
        "agent.test_loop/TestLoop.test_anthropic_stream"
    ),
    "agent/cassettes/test_loop/test_plain_http.json": "agent.test_loop/test_plain_http",
    "agent/cassettes/test_loop/test_echo[hi].json": "agent.test_loop/test_echo-hi",
    "agent/cassettes/test_loop/test_echo[bye].json": "agent.test_loop/test_echo-bye",
}
"""Each cassette pytest-recording writes (below tests/), and the recording it becomes (below
tests/recordings/, without .jsonl): where the fixture reads that test's."""

ONE_OPENAI_CALL = "1 call; 2 secrets removed (authorization header ×1, set-cookie header ×1)"
TWO_OPENAI_CALLS = "2 calls; 4 secrets removed (authorization header ×2, set-cookie header ×2)"
"""The import's summary of a cassette of one OpenAI call, and of two: the key the client sent
and the cookie the server set, removed from each."""

VCR_TEST = re.compile(r"^( *)@pytest\.mark\.vcr\n\1(async )?def (test\w*)\((self, )?", re.M)


def migrated(source: str) -> str:
    """``source`` with each ``@pytest.mark.vcr`` test asking for ``openprogram_recording``
    instead, as a user migrating by hand would write it; nothing else changed."""
    rewritten, count = VCR_TEST.subn(r"\1\2def \3(\4openprogram_recording, ", source)
    assert count == source.count("@pytest.mark.vcr") > 0
    return rewritten


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    inner = isolated_inner_project(pytester, monkeypatch)
    inner.write("conftest.py", CONFTEST)
    return inner


def record_with_vcr(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> tuple[ModelsSdkServer, pytest.RunResult]:
    """``files`` written and their tests run by pytest-recording (``--record-mode=once``)
    against a loopback server, stopped since; what they read goes to ``out-live/``."""
    for name, source in files.items():
        project.write(name, source)
    monkeypatch.setenv("INNER_OUT", str(project.root / "out-live"))
    with ModelsSdkServer() as server:
        monkeypatch.setenv("INNER_SERVER_URL", server.base_url)
        result = project.run("--record-mode=once")
    return server, result


def import_suite(project: InnerProject, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """``openprogram recordings import tests --pytest-recording``, in the project's folder:
    its stdout lines."""
    with monkeypatch.context() as here:
        here.chdir(project.root)
        result = run("import", "tests", "--pytest-recording")
    assert (result.exit_code, result.stderr) == (0, ""), result.output
    return result.stdout.splitlines()


def replay(project: InnerProject, monkeypatch: pytest.MonkeyPatch, out: str) -> pytest.RunResult:
    """The tests run by openprogram alone (pytest-recording left out), with no socket at all;
    what they read goes to ``out``."""
    monkeypatch.setenv("INNER_OUT", str(project.root / out))
    monkeypatch.setenv("INNER_OFFLINE", "1")
    return project.run("-p", "no:recording")


def read_outputs(folder: Path) -> dict[str, Any]:
    return {path.name: orjson.loads(path.read_bytes()) for path in sorted(folder.iterdir())}


def test_a_pytest_recording_suite_migrates_whole_and_replays_what_it_read_live(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, recorded = record_with_vcr(project, monkeypatch, TEST_FILES)
    recorded.assert_outcomes(passed=8)
    tests = project.root / "tests"
    cassettes = sorted(str(path.relative_to(tests)) for path in tests.rglob("cassettes/*/*"))
    assert cassettes == sorted(CASSETTES)
    for name in CASSETTES:  # vcrpy keeps the key each client sent
        assert any(key in (tests / name).read_text() for key in KEYS), name
    assert len(server.received) == 10  # the tool loop asks twice; the plain test GETs and POSTs

    lines = import_suite(project, monkeypatch)

    recordings = tests / "recordings"
    # The tool loop's two requests share a method and URL, which the summary points out (how
    # it explains vcrpy's matching is left to its own tests: only the part before is compared).
    summaries = {
        "TestLoop.test_anthropic_stream": "1 call; 1 secret removed (authorization header ×1)",
        "test_plain_http": TWO_OPENAI_CALLS,
        "test_tool_loop": f"{TWO_OPENAI_CALLS}; requests sharing a method and URL "
        f"(POST {server.openai_url}/chat/completions ×2)",
    }
    assert [line.partition(": vcrpy served them in order")[0] for line in lines] == [
        f"✔ tests/{cassette} → {recordings / recording}.jsonl: "
        + summaries.get(Path(recording).name, ONE_OPENAI_CALL)
        for cassette, recording in sorted(CASSETTES.items())
    ] + ["8 cassettes imported, 0 failed"]
    written = sorted(str(path.relative_to(recordings)) for path in recordings.rglob("*.jsonl"))
    assert written == sorted(f"{recording}.jsonl" for recording in CASSETTES.values())
    for path in recordings.rglob("*.jsonl"):
        text = path.read_text()
        assert re.search(r"\bsk-", text) is None, path  # neither key, nor a piece of one

    for name, source in TEST_FILES.items():
        project.write(name, migrated(source))
    replayed = replay(project, monkeypatch, "out-replayed")

    replayed.assert_outcomes(passed=8)
    replayed.stdout.fnmatch_lines(["8 tests: 8 replayed; 10 calls replayed*"])
    live = read_outputs(project.root / "out-live")
    assert len(live) == 8
    assert read_outputs(project.root / "out-replayed") == live
    plain = live["tests_agent_test_loop.py__test_plain_http.json"]
    assert plain["models"] == list(MODELS)


PROMPTED_TEST = """\
import pytest

PROMPT = {prompt!r}


@pytest.mark.vcr
def test_answers(openai_client):
    reply = openai_client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": PROMPT}}]
    )
    assert reply.choices[0].message.content.startswith("You said: ")
"""


def test_a_prompt_changed_since_the_cassette_fails_under_openprogram_not_under_vcrpy(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = {"test_agent.py": PROMPTED_TEST.format(prompt="hello")}
    record_with_vcr(project, monkeypatch, before)[1].assert_outcomes(passed=1)
    [line] = import_suite(project, monkeypatch)
    assert line.endswith(f"/tests/recordings/test_agent/test_answers.jsonl: {ONE_OPENAI_CALL}")

    changed = PROMPTED_TEST.format(prompt="hello, again")
    project.write("test_agent.py", changed)
    monkeypatch.setenv("INNER_OFFLINE", "1")
    project.run("--record-mode=none").assert_outcomes(passed=1)  # vcrpy: same method and URL

    project.write("test_agent.py", migrated(changed))
    result = replay(project, monkeypatch, "out-replayed")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            literal("*replay mismatch at call 0, field body.messages[0].content:"),
            "*recorded 'hello', incoming 'hello, again'",
        ],
        consecutive=True,
    )
