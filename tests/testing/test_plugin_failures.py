"""How a replayed test fails: the mismatch report, a swallowed mismatch, unconsumed calls."""

from __future__ import annotations

import pytest

from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

ASK_TWICE = """
FIRST, SECOND = {first!r}, {second!r}


async def test_session(openprogram_recording):
    await ask(FIRST)
    if SECOND:
        await ask(SECOND)
"""
REPORT = [
    "*" + literal("replay mismatch at call 1, field context.messages[0].content:"),
    "*recorded 'world', incoming 'there'",
]
RERECORD = "pytest --openprogram-record-mode=all tests/test_agent.py::test_session"


def record_two_calls(project: InnerProject) -> None:
    project.write_tests(ASK_TWICE.format(first="hello", second="world"))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)


def test_a_changed_prompt_fails_with_the_two_line_report(project: InnerProject) -> None:
    record_two_calls(project)
    project.write_tests(ASK_TWICE.format(first="hello", second="there"))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(REPORT, consecutive=True)
    result.stdout.fnmatch_lines(
        [
            "*openprogram: replaying tests/recordings/test_agent/test_session.jsonl; "
            f"if the change is intended, re-record: {RERECORD}"
        ]
    )


def test_a_mismatch_the_code_swallowed_still_fails_the_test(project: InnerProject) -> None:
    record_two_calls(project)
    project.write_tests(
        """
        async def test_session(openprogram_recording):
            await ask("hello")
            try:
                await ask("there")
            except Exception:
                pass  # an agent that logs provider errors and carries on
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)  # the test itself fails, not its teardown
    result.stdout.fnmatch_lines(
        [
            *REPORT,
            "*(the code under test caught a replay mismatch and carried on; the recording is "
            "tests/recordings/test_agent/test_session.jsonl; if the change is intended, "
            f"re-record: {RERECORD})",
        ],
        consecutive=True,
    )


def test_a_test_failing_after_a_swallowed_mismatch_names_the_mismatch(
    project: InnerProject,
) -> None:
    record_two_calls(project)
    project.write_tests(
        """
        async def test_session(openprogram_recording):
            await ask("hello")
            try:
                answer = await ask("there")
            except Exception:
                answer = None
            assert answer == "echo:there"
        """
    )
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*assert None == 'echo:there'",
            "*openprogram: earlier, the code under test caught this replay mismatch:",
            *REPORT,
        ]
    )


def test_a_mismatch_swallowed_in_a_fixture_teardown_fails_at_teardown(
    project: InnerProject,
) -> None:
    agent = """
        EXTRA = {extra!r}

        @pytest.fixture
        async def agent(openprogram_recording):
            await ask("hello")
            yield
            if EXTRA:
                try:
                    await ask(EXTRA)  # past the end of the recording
                except Exception:
                    pass

        async def test_session(agent):
            await ask("world")
    """
    project.write_tests(agent.format(extra=""))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(agent.format(extra="goodbye"))
    result = project.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_session*",
            "replay mismatch at call 2, field call_index:",
            "recorded 2 calls (0..1), incoming call 2: the run makes more calls than the "
            "recording holds",
            "(the code under test caught a replay mismatch and carried on;*",
        ],
        consecutive=False,
    )


def test_fewer_calls_than_recorded_fail_naming_the_unconsumed_calls(
    project: InnerProject,
) -> None:
    record_two_calls(project)
    project.write_tests(ASK_TWICE.format(first="hello", second=""))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay incomplete: 1 of 2 recorded calls never requested (call 1) from "
            "*tests/recordings/test_agent/test_session.jsonl; the run stopped before the "
            "recorded session did",
            f"*if the change is intended, re-record: {RERECORD}",
        ],
        consecutive=True,
    )


def test_more_calls_than_recorded_fail(project: InnerProject) -> None:
    project.write_tests(ASK_TWICE.format(first="hello", second=""))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(ASK_TWICE.format(first="hello", second="world"))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay mismatch at call 1, field call_index:",
            "*recorded 1 call (0..0), incoming call 1: the run makes more calls than the "
            "recording holds",
        ],
        consecutive=True,
    )


def test_a_corrupt_recording_fails_naming_the_file_and_how_to_replace_it(
    project: InnerProject,
) -> None:
    record_two_calls(project)
    path = project.recording("test_agent", "test_session")
    path.write_text(path.read_text() + "not json\n")
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*tests/recordings/test_agent/test_session.jsonl, line *", f"*re-record: {RERECORD}"]
    )


@pytest.mark.parametrize("mode", ["none", "once", "all"])
def test_a_failing_test_without_replay_trouble_fails_as_usual(
    project: InnerProject, mode: str
) -> None:
    project.write_tests(ASK_TWICE.format(first="hello", second="world"))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(
        ASK_TWICE.format(first="hello", second="world") + "\n    assert 1 == 2, 'plain failure'\n"
    )
    result = project.run(f"--openprogram-record-mode={mode}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: plain failure"])
    result.stdout.no_fnmatch_line("*replay mismatch*")
    result.stdout.no_fnmatch_line("*replay incomplete*")


def test_a_test_expecting_a_mismatch_clears_it(project: InnerProject) -> None:
    project.write_tests(ASK_TWICE.format(first="hello", second=""))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(
        """
        from openprogram.errors import ReplayMismatch

        async def test_session(openprogram_recording):
            with pytest.raises(ReplayMismatch):
                await ask("drifted")
            openprogram_recording.replay.mismatches.clear()
            await ask("hello")
        """
    )
    project.run().assert_outcomes(passed=1)


CONNECTS = """
import socket


async def test_session(openprogram_recording):
    await ask("hello")
    with socket.socket() as client:
        try:
            client.connect(("127.0.0.1", 9))  # (this project's sockets refuse before it)
        except BaseException:
            pass  # a client that logs connection errors and carries on
"""


def test_a_replayed_test_that_opened_a_connection_fails_even_if_it_swallowed_the_refusal(
    project: InnerProject,
) -> None:
    project.write_tests(CONNECTS)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)  # live: allowed
    result = project.run()  # replays
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay refused a connection to 127.0.0.1:* (raw socket) that no recording serves*",
            "*(the code under test carried on after the refused connection; list the host in "
            "--openprogram-allowed-hosts or openprogram_allowed_hosts if the test may reach it "
            "live)",
        ]
    )
    allowed = project.run("--openprogram-allowed-hosts=127.0.0.1")
    allowed.assert_outcomes(passed=1)


def test_the_summary_names_a_connection_the_recording_did_not_capture(
    project: InnerProject,
) -> None:
    project.write_tests(CONNECTS)
    result = project.run("--openprogram-record-mode=once")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "recorded*tests/test_agent.py::test_session  (1 call recorded, 1 connection not "
            "recorded: 127.0.0.1:9 (raw socket))"
        ]
    )


def test_a_host_the_configuration_or_a_marker_allows_stays_live_under_replay(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(CONNECTS)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.run().assert_outcomes(failed=1)
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__ALLOWED_HOSTS", '["127.0.0.1"]')
    project.run().assert_outcomes(passed=1)
    monkeypatch.delenv("OPENPROGRAM_RECORD_REPLAY__ALLOWED_HOSTS")
    marked = CONNECTS.replace(
        "async def test_session",
        "@pytest.mark.openprogram(allowed_hosts=['127.0.0.1:9'])\nasync def test_session",
    )
    project.write_tests("import pytest\n" + marked)
    project.run().assert_outcomes(passed=1)
    project.write_tests("import pytest\n" + marked.replace("127.0.0.1:9", "127.0.0.1:10"))
    project.run().assert_outcomes(failed=1)  # another port of the host is not allowed
