"""Tapes under the pytest fixture: a tape mismatch fails the test (also when swallowed),
entries never read fail it like calls never made, and the agent tools' policies come from
the ``openprogram_tools`` ini option, the configuration's ``[record_replay.tools]``, the
``openprogram_config`` fixture and the marker; under ``new_episodes`` the merged recording
keeps the tapes, taped afresh (a tape that alone drifted is written too), and replays."""

from __future__ import annotations

import pytest

from tests.support.config_files import write_config
from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

TAPED = """
from openprogram import taped
from openprogram.agent import run_agent, tool

RUNS = []


@taped
def forecast(city):
    RUNS.append(city)
    return {{"city": city, "high": 21}}


@tool
def lookup(city: str) -> str:
    \"\"\"Look a city up.\"\"\"
    RUNS.append(city)
    return f"found {{city}}{suffix}"


async def test_session(openprogram_recording):
{body}
"""


def write(project: InnerProject, body: str, suffix: str = "") -> None:
    indented = "\n".join(f"    {line}" for line in body.strip().splitlines())
    project.write_tests(TAPED.format(body=indented, suffix=suffix))


def test_a_tape_entry_never_read_fails_the_test(project: InnerProject) -> None:
    write(project, 'forecast("Paris")\nforecast("Lyon")')
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    write(project, 'assert forecast("Paris") == {"city": "Paris", "high": 21}\nassert RUNS == []')
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay incomplete: tape forecast: 1 of 2 entries never read (entry 1) from *"
            "test_session.jsonl; the run stopped before the recorded session did"
        ]
    )


def test_a_tape_mismatch_the_code_swallowed_still_fails_the_test(project: InnerProject) -> None:
    write(project, 'forecast("Paris")')
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    write(
        project,
        """
try:
    forecast("Nice")
except Exception:
    pass
forecast("Paris")
""",
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*" + literal("replay mismatch at tape forecast[0], field args.city:"),
            "*recorded 'Paris', incoming 'Nice'",
            "*(the code under test caught a replay mismatch and carried on;*",
        ],
        consecutive=True,
    )


SESSION = """
from openprogram.providers import ECHO_MODEL
done = await run_agent(ECHO_MODEL, '/tool lookup {"city": "Paris"}', tools=[lookup])
assert done.final.content[0].text == "echo:found Paris"
"""


@pytest.mark.parametrize(
    ("policy", "runs", "outcome"),
    [("live", 1, "failed"), ("replay", 0, "passed"), ("check", 1, "failed")],
)
def test_the_tools_ini_option_sets_the_policy(
    project: InnerProject, policy: str, runs: int, outcome: str
) -> None:
    write(project, SESSION)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    write(project, SESSION + f"assert len(RUNS) == {runs}", suffix=" (changed)")
    (project.root / "pytest.ini").write_text(
        (project.root / "pytest.ini").read_text() + f"openprogram_tools =\n    lookup={policy}\n"
    )
    result = project.run()
    result.assert_outcomes(**{outcome: 1})
    if policy == "check":
        result.stdout.fnmatch_lines(
            [
                "*" + literal("replay mismatch at tape tool:lookup[0], field result.text:"),
                "*recorded 'found Paris', incoming 'found Paris (changed)'",
            ],
            consecutive=True,
        )


def test_a_bad_tools_ini_option_is_a_usage_error(project: InnerProject) -> None:
    write(project, "pass")
    (project.root / "pytest.ini").write_text(
        (project.root / "pytest.ini").read_text() + "openprogram_tools =\n    lookup=sometimes\n"
    )
    result = project.run()
    result.stderr.fnmatch_lines(["*openprogram_tools: tool 'lookup': unknown policy 'sometimes'*"])


POLICIES = """
from openprogram.agent import run_agent, tool
from openprogram.providers import ECHO_MODEL

RUNS = []


@tool
def lookup(city: str) -> str:
    \"\"\"Look a city up.\"\"\"
    RUNS.append(city)
    return f"found {{city}}{suffix}"


async def session():
    RUNS.clear()
    done = await run_agent(ECHO_MODEL, '/tool lookup {{"city": "Paris"}}', tools=[lookup])
    return done.final.content[0].text

{tests}
"""

SERVED_FROM_THE_TAPE = """
    assert await session() == "echo:found Paris"  # the taped result, not the changed one
    assert RUNS == ([] if openprogram_recording.mode == "replay" else ["Paris"])
"""

MARKED = (
    """
async def test_configured(openprogram_recording):
    await session()


@pytest.mark.openprogram(tools={"lookup": "replay"})
async def test_marked(openprogram_recording):
"""
    + SERVED_FROM_THE_TAPE
)

FIXTURE = (
    """
@pytest.fixture(scope="module")
def openprogram_config():
    return {"tools": {"*": "replay"}}


async def test_module_wide(openprogram_recording):
"""
    + SERVED_FROM_THE_TAPE
)


def test_the_configuration_the_fixture_and_the_marker_set_the_tools_policy(
    project: InnerProject,
) -> None:
    write_config('[record_replay.tools]\nlookup = "check"\n')

    def write_modules(suffix: str) -> None:
        for name, tests in (("test_agent.py", MARKED), ("test_fixture.py", FIXTURE)):
            project.write_tests(POLICIES.format(suffix=suffix, tests=tests), name=name)

    write_modules("")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=3)
    write_modules(" (changed)")
    result = project.run("-rf")
    # The configuration's check runs the tool and fails on its changed result; the fixture's
    # and the marker's replay, each replacing the configuration's policies, serve the tape.
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*" + literal("replay mismatch at tape tool:lookup[0], field result.text:"),
            "*recorded 'found Paris', incoming 'found Paris (changed)'",
        ],
        consecutive=True,
    )
    result.stdout.fnmatch_lines(["FAILED tests/test_agent.py::test_configured - *"])


EPISODE = """
import openprogram
assert openprogram.now() > 0  # a taped clock: its reading differs from run to run
assert forecast({city!r}) == {{"city": {city!r}, "high": 21}}
assert RUNS == ([] if openprogram_recording.mode == "replay" else [{city!r}])
assert await ask({question!r}) == "echo:" + {question!r}
"""


@pytest.mark.parametrize("drifted", ["call", "tape", "nothing"])
def test_new_episodes_keeps_the_tapes_in_the_merged_recording_which_replays(
    project: InnerProject, drifted: str
) -> None:
    write(project, EPISODE.format(city="Paris", question="How warm is it?"))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    recording = project.recording("test_agent", "test_session")
    before = recording.read_bytes()
    if drifted == "call":  # one model call goes live; the taped call is the same
        write(project, EPISODE.format(city="Paris", question="Will it rain?"))
    elif drifted == "tape":  # every model call replays; only the taped call differs
        write(project, EPISODE.format(city="Nice", question="How warm is it?"))
    project.run("--openprogram-record-mode=new_episodes").assert_outcomes(passed=1)
    if drifted == "nothing":  # the clock read anew is no drift: the file is as it was
        assert recording.read_bytes() == before
        return
    assert recording.read_bytes() != before
    assert '"type":"tape"' in recording.read_text()
    project.run().assert_outcomes(passed=1)  # replays: the taped function does not run
