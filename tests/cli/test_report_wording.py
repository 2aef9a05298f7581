"""A drift is written by one function, ``openprogram.recording.report.format_report``: replacing
it changes what replay raises, what ``diff``, ``verify`` and ``openprogram run`` print, and
what the pytest fixture reports; and the CLI shows an error's report because the error
carries a difference, not because its message starts with certain words."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from openprogram.errors import OpenProgramError, ReplayMismatch
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
from openprogram.recording import report
from openprogram.recording.report import FirstDifference
from openprogram.testing.recording_session import open_recording_session
from tests.support.cli_runner import next_start, openprogram, run
from tests.support.recording_rows import stored
from tests.support.tool_sessions import recording_into

READ_X = '/tool read_file {"path": "x.txt"}'


def reworded(difference: FirstDifference) -> str:
    return (
        f"DRIFT {difference.sides.heading} / call {difference.call_index} / "
        f"{difference.field_path}\nsecond line"
    )


@pytest.fixture(autouse=True)
def reworded_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(report, "format_report", reworded)


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "x.txt").write_text("contents of x\n")
    monkeypatch.chdir(folder)
    return folder


def record_run(name: str) -> None:
    """``openprogram run READ_X`` recorded into ``name``; the mode is off afterwards."""
    assert openprogram("recordings", "record", name).exit_code == 0
    next_start()
    assert openprogram("run", READ_X).exit_code == 0
    next_start()
    assert openprogram("recordings", "off").exit_code == 0
    next_start()


def test_replay_raises_the_new_wording(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    with recording_into(path):
        asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")])))
    next_start()
    replay = ReplayProvider(path)
    with (
        recording_into(tmp_path / "unused.jsonl", provider=replay),
        pytest.raises(ReplayMismatch) as caught,
    ):
        asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="bye")])))

    assert str(caught.value) == (
        "DRIFT replay mismatch / call 0 / context.messages[0].content\nsecond line"
    )


def test_openprogram_run_prints_the_new_wording() -> None:
    record_run("s1")
    assert openprogram("recordings", "replay", "s1").exit_code == 0
    next_start()

    drifted = openprogram("run", '/tool read_file {"path": "y.txt"}')

    assert drifted.exit_code == 1
    assert drifted.stderr.splitlines() == [
        "error: DRIFT replay mismatch / call 0 / context.messages[0].content",
        "second line",
    ]


def test_verify_prints_the_new_wording(workdir: Path) -> None:
    record_run("s1")
    (workdir / "x.txt").write_text("changed\n")

    result = run("verify", "s1")

    assert result.exit_code == 1
    assert result.stdout.splitlines()[1:] == [
        "DRIFT replay mismatch / call 1 / context.messages[2].content[0].text",
        "second line",
    ]


def test_diff_prints_the_new_wording(workdir: Path) -> None:
    record_run("a")
    (workdir / "x.txt").write_text("changed\n")
    record_run("b")

    result = run("diff", "a", "b")

    assert result.exit_code == 1
    assert result.stdout.splitlines()[1:3] == [
        "DRIFT difference / call 1 / context.messages[2].content[0].text",
        "second line",
    ]


def test_the_fixture_reports_the_new_wording(workdir: Path) -> None:
    record_run("s1")
    session = open_recording_session(
        stored("s1"), record_mode="none", display_path="s1.jsonl", test_argument="test_x"
    )
    assert session.replay is not None
    # The code under test swallows the mismatch; the fixture fails the test all the same.
    with session.installed(), contextlib.suppress(ReplayMismatch):
        asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="other")])))

    problem = session.problem_after_call()

    assert problem is not None
    assert problem.startswith(
        "DRIFT replay mismatch / call 0 / context.messages[0].content\nsecond line\n"
    )


def test_the_cli_shows_a_report_because_the_error_carries_a_difference() -> None:
    from openprogram.cli.output import error_text

    mismatch = ReplayMismatch(0, "model.id", "a", "b")
    assert error_text(mismatch) == "DRIFT replay mismatch / call 0 / model.id\nsecond line"
    look_alike = OpenProgramError("replay mismatch at call 0, field x:\nrecorded 1, incoming 2")
    assert error_text(look_alike) == "replay mismatch at call 0, field x: recorded 1, incoming 2"
