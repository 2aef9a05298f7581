"""``pytest --openprogram-record-mode=drift``: each test replays its recording, then the calls
it was served are sent live — here to a loopback :class:`DriftServer` on the recorded port,
trusted with ``--openprogram-drift-base-url``, answering the recorded responses as they were
or drifted — and the drift is reported in the summary and the JSON report; a test fails only
on drift of the ``--openprogram-drift-fail-on`` class, the budget bounds what is sent, nothing
is sent without a real key, and no key goes to a host a recording was moved to."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import orjson
import pytest

# Loaded here once (openprogram.drift with it), not afresh by each inner run in this process.
import openprogram.testing.drift_mode
from openprogram.drift.check import DRIFT_CLASSES
from openprogram.recording import RecordedCall, read_recording
from openprogram.testing.suite_summary import DRIFT_CLASSES as SUMMARY_CLASSES
from tests.support.attacker_server import AttackerServer
from tests.support.drift_server import Add, Change, DriftServer, Rename, VaryContent
from tests.support.inner_project import InnerProject, literal
from tests.support.sdk_server import SdkServer

pytest_plugins = ["pytester"]

KEY = "sk-drift-0123456789abcdefghijklmn"

SOCKETS_ALLOWED = "# the inner tests record against, and the drift checks reach, loopback servers\n"

TESTS = """
import os

import openai


def client():
    return openai.OpenAI(base_url=os.environ["SDK_URL"], api_key="sk-test-key", max_retries=0)


def test_chat(openprogram_recording):
    reply = client().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hello"}]
    )
    assert reply.choices[0].message.content == "You said: hello"


def test_stream(openprogram_recording):
    stream = client().chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "stream"}], stream=True
    )
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "You said: stream"
"""

TESTS_OF = ("test_chat", "test_stream")


class Recorded:
    """The inner project with its two tests recorded against an :class:`SdkServer` (stopped
    since), and the port their recorded URLs point at."""

    def __init__(self, project: InnerProject, port: int) -> None:
        self.project = project
        self.port = port
        self.chat = f"call 0 POST 127.0.0.1:{port}/v1/chat/completions"
        """How a drift line names either test's one call."""

    def recordings(self) -> list[bytes]:
        return [self.project.recording("test_agent", test).read_bytes() for test in TESTS_OF]

    def serve(self, changes: Sequence[Change] = ()) -> DriftServer:
        """The recorded answers on the recorded port, changed: the first request is answered
        with test_chat's, the second with test_stream's (the order the checks send them)."""
        calls: list[RecordedCall] = []
        for test in TESTS_OF:
            calls += read_recording(self.project.recording("test_agent", test)).calls
        return DriftServer(calls, changes, port=self.port)

    def run(self, *args: str) -> pytest.RunResult:
        """A drift run, the recorded loopback server trusted as OpenAI's API (no loopback
        origin is, unless named)."""
        trusted = f"--openprogram-drift-base-url=openai=http://127.0.0.1:{self.port}"
        return self.project.run("--openprogram-record-mode=drift", trusted, *args)

    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = orjson.loads((self.project.root / "drift.json").read_bytes())
        return data


@pytest.fixture
def recorded(project: InnerProject, monkeypatch: pytest.MonkeyPatch) -> Recorded:
    project.write("conftest.py", SOCKETS_ALLOWED)
    project.write("test_agent.py", TESTS)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    with SdkServer() as server:
        monkeypatch.setenv("SDK_URL", server.openai_url)
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=2)
    return Recorded(project, server.port)


def test_drift_replays_reports_the_live_drift_and_fails_on_the_class_asked_for(
    recorded: Recorded,
) -> None:
    before = recorded.recordings()

    # The same shape with other text, ids and counts: content drift, the tests pass.
    with recorded.serve([VaryContent()]) as server:
        result = recorded.run("--openprogram-report=drift.json")
    result.assert_outcomes(passed=2)
    assert server.served == [0, 0]  # the check's sends only: the tests were replayed
    assert [request.headers["authorization"] for request in server.received] == [
        f"Bearer {KEY}"
    ] * 2
    result.stdout.fnmatch_lines(
        [
            "2 tests: 2 replayed; 2 calls replayed; *",
            "drift against the live providers: 2 tests checked, 0 failing; 2 calls sent "
            "(2 content)",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*breaking*")
    result.stdout.no_fnmatch_line("content      tests/*")  # content drift: with -v only
    report = recorded.report()
    chat = next(test for test in report["tests"] if test["nodeid"].endswith("::test_chat"))
    assert chat["kind"] == "replayed"
    drift = chat["drift"]
    assert (drift["fail_on"], drift["failed"]) == ("breaking", False)
    assert drift["recording"].endswith("tests/recordings/test_agent/test_chat.jsonl")
    assert drift["counts"] == {
        "breaking": 0,
        "additive": 0,
        "content": 1,
        "unchanged": 0,
        "skipped": 0,
        "failed": 0,
    }
    [call] = drift["calls"]
    assert (call["result"], call["worst"], call["call"]) == (
        "drifted",
        "content",
        f"POST 127.0.0.1:{recorded.port}/v1/chat/completions",
    )
    assert {
        "class": "content",
        "path": "choices[*].message.content",
        "what": "other values",
        "recorded": "'You said: hello'",
        "live": "'Lbh fnvq: uryyb'",
    } in call["drift"]
    assert report["drift"] == {
        "tests": 2,
        "failing_tests": 0,
        "calls_sent": 2,
        "breaking": 0,
        "additive": 0,
        "content": 2,
        "unchanged": 0,
        "failed": 0,
        "skipped": 0,
        "skipped_reasons": {},
    }

    # A new field is additive: listed, but it fails a test only when asked to.
    new_field = f"{recorded.chat}: additive: provider_notice new field: — → string"
    with recorded.serve([Add("$", "provider_notice", "v2")]):
        result = recorded.run()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["additive     tests/test_agent.py::test_chat", f"    {new_field}"])
    with recorded.serve([Add("$", "provider_notice", "v2")]):
        result = recorded.run("--openprogram-drift-fail-on=additive")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "the live answers to 1 call drifted from tests/recordings/test_agent/test_chat.jsonl "
            "(additive drift or worse fails the test):",
            new_field,
        ],
        consecutive=True,
    )

    # A field renamed is breaking: the tests fail in their call phase, with the drift lines.
    with recorded.serve([Rename("choices[*].finish_reason", "stop_cause")]) as server:
        result = recorded.run()
    result.assert_outcomes(failed=2)
    assert len(server.received) == 2
    result.stdout.fnmatch_lines(
        [
            "the live answers to 1 call drifted from tests/recordings/test_agent/test_chat.jsonl "
            "(breaking drift fails the test):",
            literal(f"{recorded.chat}: breaking: choices[*].finish_reason missing: string → —"),
            literal(f"{recorded.chat}: additive: choices[*].stop_cause new field: — → string"),
            "the test passed against its recording, which is unchanged; to accept the "
            "provider's new answers, re-record: "
            "pytest --openprogram-record-mode=all tests/test_agent.py::test_chat",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(
        [
            "drift against the live providers: 2 tests checked, 2 failing; 2 calls sent "
            "(2 breaking)",
            "breaking     tests/test_agent.py::test_chat  (the test failed)",
            literal(f"    {recorded.chat}: breaking: choices[*].finish_reason missing: *"),
        ],
        consecutive=True,
    )
    assert recorded.recordings() == before  # drift never changes a recording


def test_drift_spends_no_more_than_its_budget_and_sends_nothing_without_a_key(
    recorded: Recorded, monkeypatch: pytest.MonkeyPatch
) -> None:
    with recorded.serve() as server:
        result = recorded.run("--openprogram-drift-max-calls=0")
    result.assert_outcomes(passed=2)
    assert server.received == []
    result.stdout.fnmatch_lines(
        [
            "drift against the live providers: 2 tests checked, 0 failing; 0 calls sent; "
            "2 calls skipped",
            "    skipped 2: over --openprogram-drift-max-calls 0",
        ],
        consecutive=True,
    )

    # The budget is the run's: the first test spends it, the second is skipped.
    with recorded.serve() as server:
        result = recorded.run("--openprogram-drift-max-calls=1", "-v")
    result.assert_outcomes(passed=2)
    assert server.served == [0]
    result.stdout.fnmatch_lines(
        [
            "drift against the live providers: 2 tests checked, 0 failing; 1 call sent "
            "(1 unchanged); 1 call skipped",
            "    skipped 1: over --openprogram-drift-max-calls 1",
            "unchanged    tests/test_agent.py::test_chat",
            f"    {recorded.chat}: no drift",
            "skipped      tests/test_agent.py::test_stream",
            f"    {recorded.chat}: skipped: over --openprogram-drift-max-calls 1",
        ],
        consecutive=True,
    )

    # No key: nothing is sent (the replay's placeholder key least of all), under xdist too.
    monkeypatch.delenv("OPENAI_API_KEY")
    with recorded.serve() as server:
        result = recorded.run("-n", "2", "--openprogram-report=drift.json")
    result.assert_outcomes(passed=2)
    assert server.received == []
    result.stdout.fnmatch_lines(
        [
            "drift against the live providers: 2 tests checked, 0 failing; 0 calls sent; "
            "2 calls skipped",
            "    skipped 2: no openai key: set OPENAI_API_KEY",
        ],
        consecutive=True,
    )
    totals = recorded.report()["drift"]
    assert (totals["calls_sent"], totals["skipped"]) == (0, 2)
    assert totals["skipped_reasons"] == {"no openai key: set OPENAI_API_KEY": 2}

    result = recorded.run("--openprogram-drift-max-calls=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openprogram-drift-max-calls takes a count of 0 or more*"])


def test_the_summary_and_the_options_name_the_classes_drift_reports() -> None:
    assert SUMMARY_CLASSES == DRIFT_CLASSES
    assert openprogram.testing.drift_mode.DriftBudget(3, sent=5).remaining == 0  # never < 0


def test_a_test_without_a_recording_fails_as_in_none_naming_the_mode(
    project: InnerProject,
) -> None:
    project.write("test_agent.py", "def test_chat(openprogram_recording):\n    pass\n")
    result = project.run("--openprogram-record-mode=drift")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*no recording at tests/recordings/test_agent/test_chat.jsonl (record mode 'drift' "
         "only replays); record it with `pytest --openprogram-record-mode=once *"]
    )  # fmt: skip


MOVED_TESTS = """
import os

import httpx

ASK = [{"role": "user", "content": "hi"}]


def post(path, body, headers=None):
    reply = httpx.post(os.environ["TARGET"] + path, json=body, headers=headers or {})
    assert reply.json() == {}


def test_openai(openprogram_recording):
    post("/v1/chat/completions", {"model": "gpt-4o-mini", "messages": ASK})


def test_anthropic(openprogram_recording):
    body = {"model": "claude-x", "max_tokens": 8, "messages": ASK}
    post("/v1/messages", body, {"anthropic-version": "2023-06-01"})


def test_gemini(openprogram_recording):
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    post("/v1beta/models/gemini-2.5-flash:generateContent?key=recorded-key", body)


def test_bedrock(openprogram_recording):
    post("/model/m/converse", {"messages": [{"role": "user", "content": [{"text": "hi"}]}]})
"""

REAL_LOOKING_KEYS = {
    "OPENAI_API_KEY": "sk-live-openai-0123456789abcdefghij",
    "ANTHROPIC_API_KEY": "sk-ant-live-0123456789abcdefghij",
    "GOOGLE_API_KEY": "google-live-key-0123456789abcdef",
    "GEMINI_API_KEY": "gemini-live-key-0123456789abcdef",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
}


def test_no_key_reaches_a_host_the_recordings_were_moved_to(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recordings edited to point at another host (127.0.0.2, the attacker): drift sends it
    nothing, with every vendor's key set; named with the option, it gets OpenAI's key only."""
    project.write("conftest.py", SOCKETS_ALLOWED)
    project.write("test_moved.py", MOVED_TESTS)
    with AttackerServer() as recorded_against:
        monkeypatch.setenv("TARGET", recorded_against.origin)
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=4)
    for name, value in REAL_LOOKING_KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore would ask 169.254.169.254
    folder = project.root / "tests" / "recordings" / "test_moved"
    with AttackerServer() as attacker:
        for recording in folder.iterdir():  # the edit: every URL moved to the attacker's host
            text = recording.read_text().replace(recorded_against.origin, attacker.origin)
            recording.write_text(text)
        monkeypatch.setenv("TARGET", attacker.origin)
        moved = project.run("--openprogram-record-mode=drift", "--openprogram-report=drift.json")
        nothing_sent = list(attacker.connections)
        trusted = f"--openprogram-drift-base-url=openai={attacker.origin}"
        named = project.run("--openprogram-record-mode=drift", trusted)
    assert nothing_sent == [], "no connection at all, with every key set"
    moved.assert_outcomes(passed=4)
    origin = attacker.origin
    reasons = [
        f"{origin} is not {vendor}'s API; pass --openprogram-drift-base-url {vendor}={origin} "
        "to trust it"
        for vendor in ("openai", "anthropic", "google", "aws")
    ]
    moved.stdout.fnmatch_lines(
        [
            "drift against the live providers: 4 tests checked, 0 failing; 0 calls sent; "
            "4 calls skipped",
            *(f"    skipped 1: {reason}" for reason in sorted(reasons)),
        ],
        consecutive=True,
    )
    report = orjson.loads((project.root / "drift.json").read_bytes())
    assert sorted(report["drift"]["skipped_reasons"]) == sorted(reasons)
    assert not [key for key in REAL_LOOKING_KEYS.values() if key in moved.stdout.str()]

    named.assert_outcomes(passed=4)
    (sent,) = attacker.connections
    assert sent.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n")
    assert f"\r\nauthorization: Bearer {REAL_LOOKING_KEYS['OPENAI_API_KEY']}\r\n".encode() in sent
    others = [value for name, value in REAL_LOOKING_KEYS.items() if name != "OPENAI_API_KEY"]
    assert not [value for value in others if len(value) > 12 and value.encode() in sent]


def test_an_unusable_drift_base_url_is_a_usage_error(project: InnerProject) -> None:
    project.write("test_agent.py", "def test_nothing():\n    pass\n")
    result = project.run("--openprogram-drift-base-url=openai=http://127.0.0.2:9/v1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: "
            + literal(
                "--openprogram-drift-base-url openai= takes an origin (scheme://host[:port], no "
                "path), found 'http://127.0.0.2:9/v1'"
            )
        ]
    )
