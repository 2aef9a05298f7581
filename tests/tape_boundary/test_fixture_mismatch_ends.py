"""A tape mismatch ends a test under the pytest fixture: the test fails with the two-line
report and pytest exits 1 — the clock read once more than recorded, a taped function called
with another argument, a tool under ``check`` whose result changed. The replaying run is a
process of its own, given a generous time, so a run that hung would fail this test rather
than hang the suite (under ``exec`` each of these once hung)."""

from __future__ import annotations

import pytest

from tests.support.inner_project import InnerProject, isolated_inner_project, literal

pytest_plugins = ["pytester"]

SESSION = """
import openprogram
from openprogram.agent import run_agent, tool

KIND = {kind!r}


@openprogram.taped
def lookup(word: str) -> str:
    return word.upper()


@tool
def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    return "rainy" if KIND == "check" else "sunny"


@pytest.mark.openprogram(tools={{"weather": "check"}})
async def test_session(openprogram_recording):
    assert openprogram.now() > 0
    if KIND == "clock":
        openprogram.now()
    assert lookup("b" if KIND == "argument" else "a") in ("A", "B")
    await run_agent(ECHO_MODEL, '/tool weather {{"city": "Paris"}}', tools=[weather])
"""

REPORTS = {
    "clock": (
        "replay mismatch at tape openprogram.now[1], field tape:",
        "the recording holds 1 entry on tape openprogram.now (openprogram.now[0..0]), all "
        "read: the run calls it more often than the recorded run did",
    ),
    "argument": (
        "replay mismatch at tape lookup[0], field args.word:",
        "recorded 'a', incoming 'b'",
    ),
    "check": (
        "replay mismatch at tape tool:weather[0], field result.text:",
        "recorded 'sunny', incoming 'rainy'",
    ),
}


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> InnerProject:
    return isolated_inner_project(pytester, monkeypatch)


@pytest.mark.parametrize("kind", list(REPORTS))
def test_the_fixture_fails_the_test_with_the_report(project: InnerProject, kind: str) -> None:
    project.write_tests(SESSION.format(kind="record"))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(SESSION.format(kind=kind))
    result = project.run(subprocess=True)
    result.assert_outcomes(failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    first, second = REPORTS[kind]
    result.stdout.fnmatch_lines(["*" + literal(first), "*" + literal(second)], consecutive=True)
