"""The fixture pairs requests with recorded calls by content: sub-agents gathered with
``asyncio.gather`` replay although their calls arrive in another order than recorded; the
``openprogram_match`` ini option and the ``@pytest.mark.openprogram_match`` marker ask for
strict order instead."""

from __future__ import annotations

import pytest

from tests.support.gathered_agents import PROVIDER_AGENTS_SOURCE
from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

GATHERED = (
    PROVIDER_AGENTS_SOURCE
    + """

import os

import pytest

SLOWER = os.environ["INNER_SLOWER"]
DELAYS = {name: 0.03 if name == SLOWER else 0.0 for name in "AB"}


{marker}
async def test_sub_agents(openprogram_recording):
    assert await sub_agents(DELAYS) == ["echo:A turn 2", "echo:B turn 2"]
"""
)
REPORT = [
    literal("*replay mismatch at call 0, field context.messages[0].content:"),
    "*recorded 'B start', incoming 'A start'",
]


def record_then_replay_the_other_slower(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch, *args: str, marker: str = ""
) -> pytest.RunResult:
    project.write("test_agents.py", GATHERED.replace("{marker}", marker))
    monkeypatch.setenv("INNER_SLOWER", "A")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("INNER_SLOWER", "B")
    return project.run(*args)


def test_gathered_sub_agents_replay_by_content(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    record_then_replay_the_other_slower(project, monkeypatch).assert_outcomes(passed=1)


def test_the_ini_option_asks_for_order(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = record_then_replay_the_other_slower(
        project, monkeypatch, "-o", "openprogram_match=order"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(REPORT, consecutive=True)


def test_the_marker_asks_for_order_for_its_test(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = '@pytest.mark.openprogram_match("order")'
    result = record_then_replay_the_other_slower(project, monkeypatch, marker=marker)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(REPORT, consecutive=True)
    overridden = marker.replace("order", "content")
    project.write("test_agents.py", GATHERED.replace("{marker}", overridden))
    project.run("-o", "openprogram_match=order").assert_outcomes(passed=1)


def test_an_unknown_matching_is_refused(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write("test_agents.py", GATHERED.replace("{marker}", ""))
    monkeypatch.setenv("INNER_SLOWER", "A")
    result = project.run("-o", "openprogram_match=fuzzy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*openprogram_match: must be one of content, order, not 'fuzzy'"])
    marker = '@pytest.mark.openprogram_match("fuzzy")'
    project.write("test_agents.py", GATHERED.replace("{marker}", marker))
    result = project.run("--openprogram-record-mode=once")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.openprogram_match takes one of content, order, not 'fuzzy'"]
    )
