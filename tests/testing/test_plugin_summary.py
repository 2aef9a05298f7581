"""The suite summary through pytest: what every test did, gathered across pytest-xdist
workers, in the terminal and in ``--openprogram-report``; orphaned recordings are listed
only when the whole tree was collected, a test's custom recording name counted."""

from __future__ import annotations

import orjson
import pytest

from tests.support.inner_project import InnerProject

pytest_plugins = ["pytester"]

SUITE = """
import os

DRIFT = os.environ.get("DRIFT", "")


async def test_replays(openprogram_recording):
    assert await ask("steady") == "echo:steady"


async def test_drifts(openprogram_recording):
    assert await ask("hello" + DRIFT) == "echo:hello" + DRIFT


async def test_stops_early(openprogram_recording):
    await ask("one")
    if not DRIFT:
        await ask("two")


@pytest.mark.openprogram(name="custom")
async def test_named(openprogram_recording):
    assert await ask("named") == "echo:named"


def test_without_the_fixture():
    pass


async def test_skipped_in_its_body(openprogram_recording):
    if DRIFT:
        pytest.skip("not today")
"""


def test_the_summary_is_whole_under_xdist_and_lists_orphans(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(SUITE)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=6)
    assert project.recording("test_agent", "custom").is_file()
    orphan = project.recording("test_removed", "test_gone")
    orphan.parent.mkdir()
    orphan.write_bytes(project.recording("test_agent", "test_replays").read_bytes())

    monkeypatch.setenv("DRIFT", " again")
    result = project.run("-n", "2", "--openprogram-report=out/report.json")

    result.assert_outcomes(passed=3, failed=2, skipped=1)  # the skipped test is not counted
    result.stdout.fnmatch_lines(
        [
            "*= openprogram recordings =*",
            "4 tests: 2 replayed, 1 mismatched, 1 unconsumed; 3 calls replayed; "
            "* tokens replayed instead of spent",
            "mismatched   tests/test_agent.py::test_drifts  (call 0 requested but mismatched)",
            "    replay mismatch at call 0, field context.messages[0].content:",
            "    recorded 'hello', incoming 'hello again'",
            "unconsumed   tests/test_agent.py::test_stops_early  (1 call replayed, "
            "call 1 never requested, * tokens)",
            "1 orphaned recording (no collected test uses them):",
            "    tests/recordings/test_removed/test_gone.jsonl",
        ],
        consecutive=True,
    )
    report = orjson.loads((project.root / "out" / "report.json").read_bytes())
    assert report["totals"]["tests"] == 4
    assert report["totals"]["tokens_replayed"] > 0
    assert report["orphans"] == ["tests/recordings/test_removed/test_gone.jsonl"]
    assert {test["nodeid"].split("::")[1]: test["kind"] for test in report["tests"]} == {  # no skip
        "test_drifts": "mismatched",
        "test_named": "replayed",
        "test_replays": "replayed",
        "test_stops_early": "unconsumed",
    }
    assert (project.root / "out" / "report.json").stat().st_mode & 0o777 == 0o600

    for selection, reason in [
        (["-k", "replays"], "tests were selected with -k"),
        (["tests/test_agent.py::test_replays"], "tests were selected by path or node id"),
        (["--deselect", "tests/test_agent.py::test_drifts"], "tests were deselected"),
    ]:
        result = project.run(*selection)
        result.stdout.no_fnmatch_line("*orphaned recordings not looked for*")  # unless asked
        result.stdout.no_fnmatch_line("*test_gone.jsonl*")
        result = project.run(*selection, "-v")
        result.stdout.fnmatch_lines([f"orphaned recordings not looked for: {reason}"])


TWO_CALLS = """
import os


async def test_two_calls(openprogram_recording):
    assert await ask("first" + os.environ.get("DRIFT", "")) == "echo:first"
    await ask("second")
"""


def test_a_mismatched_call_is_told_apart_from_calls_never_requested(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(TWO_CALLS)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("DRIFT", "!")

    result = project.run("--openprogram-report=report.json")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "mismatched   tests/test_agent.py::test_two_calls  "
            "(call 0 requested but mismatched, call 1 never requested)",
            "    replay mismatch at call 0, field context.messages[0].content:",
        ],
        consecutive=True,
    )
    result.stdout.no_fnmatch_line("*calls 0..1 never requested*")
    [test] = orjson.loads((project.root / "report.json").read_bytes())["tests"]
    assert (test["mismatched_calls"], test["unconsumed_calls"]) == ([0], [1])
