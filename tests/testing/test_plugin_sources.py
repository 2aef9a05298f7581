"""The deterministic sources under the pytest fixture: ``@pytest.mark.openprogram(seed=...,
clock=...)`` and ``--openprogram-seed`` / ``--openprogram-clock-start`` /
``--openprogram-clock-step`` make a test that says the time (in the local zone) and a random
draw record alike in any zone, and replay in another; a bad value is one line."""

from __future__ import annotations

import pytest

from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.inner_project import InnerProject
from tests.support.seeded_session import ZONES, local_zone

pytest_plugins = ["pytester"]

SESSION = """
from datetime import datetime

import openprogram


{marker}
async def test_session(openprogram_recording):
    at = datetime.fromtimestamp(openprogram.now())  # the local zone
    said = await ask(f"at {{at:%Y-%m-%d %H:%M:%S}} drew {{openprogram.random():.9f}}")
    print("SAID", said)
"""

MARKER = "@pytest.mark.openprogram(seed=99, clock=openprogram.stepping_clock(1751500800000))"


def said(result: pytest.RunResult) -> str:
    [line] = [line for line in result.outlines if "SAID " in line]
    return line.split("SAID ", 1)[1]


def record(project: InnerProject, zone: str, *options: str) -> tuple[str, str]:
    """Record the test afresh in ``zone``: what it said, and the recording's hash."""
    with local_zone(zone):
        result = project.run("--openprogram-record-mode=all", "-s", *options)
    result.assert_outcomes(passed=1)
    recording = project.recording("test_agent", "test_session")
    return said(result), transcript_hash(read_recording(recording))


def test_the_marker_records_alike_in_any_zone_and_replays_in_another(
    project: InnerProject,
) -> None:
    project.write_tests(SESSION.format(marker=MARKER))
    first, digest = record(project, ZONES[0])
    second, other = record(project, ZONES[1])
    assert first == second
    assert first.startswith("echo:at 2025-07-03 00:00:00 drew ")
    assert digest == other
    with local_zone("UTC+3"):
        project.run().assert_outcomes(passed=1)  # the marker's clock: the test runs in UTC


def test_the_command_line_gives_the_sources_and_a_marker_overrides_them(
    project: InnerProject,
) -> None:
    project.write_tests(SESSION.format(marker=""))
    options = ("--openprogram-seed=99", "--openprogram-clock-start=2025-07-03T00:00:00Z")
    first, digest = record(project, ZONES[0], *options)
    second, other = record(project, ZONES[1], *options, "--openprogram-clock-step=0")
    assert (first, digest) == (second, other)  # one reading: the step does not show
    project.write_tests(SESSION.format(marker=MARKER.replace("seed=99", "seed=98")))
    third, changed = record(project, ZONES[0], *options)
    assert third != first
    assert changed != digest


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (
            ("--openprogram-seed=-1",),
            "ERROR: --openprogram-seed: a seed is a whole number from 0 to "
            "9223372036854775807, not -1",
        ),
        (
            ("--openprogram-clock-step=10",),
            "ERROR: --openprogram-clock-step needs --openprogram-clock-start: the time the "
            "clock reads first",
        ),
        (
            ("--openprogram-clock-start=noon",),
            "ERROR: --openprogram-clock-start: 'noon' is not a time: write milliseconds "
            "since 1970-01-01T00:00:00Z (1751500800000) or a time with its zone "
            "(2025-07-03T00:00:00Z)",
        ),
    ],
)
def test_a_bad_option_is_a_usage_error_of_one_line(
    project: InnerProject, options: tuple[str, ...], error: str
) -> None:
    project.write_tests(SESSION.format(marker=""))
    result = project.run(*options)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert error in result.errlines


def test_a_marker_with_something_that_is_no_clock_stops_the_test(project: InnerProject) -> None:
    project.write_tests(SESSION.format(marker="@pytest.mark.openprogram(clock=1751500800000)"))
    result = project.run("--openprogram-record-mode=once")
    result.assert_outcomes(errors=1)  # at the fixture's setup, as any bad setting
    result.stdout.fnmatch_lines(
        [
            "*@pytest.mark.openprogram: clock: must be openprogram.stepping_clock(start_ms, "
            "step_ms), openprogram.sequence_clock(times) or another clock, not 1751500800000"
        ]
    )
    assert not project.recording("test_agent", "test_session").exists()
