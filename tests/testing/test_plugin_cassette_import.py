"""``pytest --openprogram-import-cassettes``: each test without a recording gets its vcrpy
cassette — found where pytest-recording's own fixtures say, a conftest's overrides obeyed —
imported into its recording before it runs, then replays it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.inner_project import InnerProject

pytest_plugins = ["pytester"]
pytest.importorskip("pytest_recording")

CHAT = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1767225600,
    "model": "gpt-4o-mini",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Sunny."}, "finish_reason": "stop"}
    ],
}
KEY = "sk-test-0123456789abcdefghijkl"

CONFTEST = """
import os

import pytest


@pytest.fixture
def vcr_cassette_dir(request):
    return os.path.join(os.path.dirname(__file__), "vcr", request.module.__name__.split(".")[-1])


@pytest.fixture(scope="module")
def vcr_config():
    return {"serializer": "json"}
"""

TESTS = """
import openai
import pytest


def ask():
    client = openai.OpenAI(api_key="sk-replay", base_url="http://127.0.0.1:9/v1", max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Paris?"}]
    )
    return reply.choices[0].message.content


def test_weather(openprogram_recording):
    assert ask() == "Sunny."


@pytest.mark.vcr("shared.json")
def test_two_cassettes(openprogram_recording):
    assert ask() == "Sunny."
"""


def cassette(path: Path) -> None:
    interaction = {
        "request": {
            "method": "POST",
            "uri": "http://127.0.0.1:4242/v1/chat/completions",
            "body": json.dumps(
                {"messages": [{"role": "user", "content": "Paris?"}], "model": "gpt-4o-mini"}
            ),
            "headers": {"Content-Type": ["application/json"], "Authorization": [f"Bearer {KEY}"]},
        },
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"Content-Type": ["application/json"]},
            "body": {"string": json.dumps(CHAT, separators=(",", ":"))},
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "interactions": [interaction]}, indent=4))


def test_each_tests_cassette_is_imported_where_pytest_recording_says_then_replayed(
    project: InnerProject,
) -> None:
    project.write("conftest.py", (project.root / "tests" / "conftest.py").read_text() + CONFTEST)
    project.write("test_weather.py", TESTS)
    for name in ("test_weather", "test_two_cassettes"):
        cassette(project.root / "tests" / "vcr" / "test_weather" / f"{name}.json")

    result = project.run("--openprogram-import-cassettes")

    result.assert_outcomes(passed=1, errors=1)  # the fixture's setup refused it
    recording = project.recording("test_weather", "test_weather")
    source = Path("tests/vcr/test_weather/test_weather.json")
    result.stdout.fnmatch_lines(
        [
            "*= openprogram: cassettes imported =*",
            f"✔ {source} → tests/recordings/test_weather/test_weather.jsonl: 1 call; "
            "1 secret removed (authorization header ×1)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*tests/recordings/test_weather/test_two_cassettes.jsonl: this test plays 2 "
            "cassettes (test_two_cassettes.json, shared.json), which one recording cannot "
            "replay in order: import them with `openprogram recordings import` into the "
            "recording you want"
        ]
    )
    assert KEY not in recording.read_text()
    header = json.loads(recording.read_text().splitlines()[0])
    assert header["imported_from"]["cassette"] == str(source), "no home folder in the file"
    assert not project.recording("test_weather", "test_two_cassettes").exists()

    # From now on the test replays its recording, the option or not.
    again = project.run("-k", "test_weather and not two")
    again.assert_outcomes(passed=1)
    again.stdout.no_fnmatch_line("*cassettes imported*")


def test_without_pytest_recording_the_option_says_what_it_needs(project: InnerProject) -> None:
    project.write("test_weather.py", TESTS)
    only = "test_weather and not two"
    result = project.run("--openprogram-import-cassettes", "-p", "no:recording", "-k", only)
    result.assert_outcomes(errors=1, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*--openprogram-import-cassettes asks pytest-recording where each test's cassette "
            "is: install pytest-recording (pip install pytest-recording)"
        ]
    )
