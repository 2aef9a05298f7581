"""Record modes: ``none`` replays only, ``once`` records what is missing, ``all`` re-records;
recording never runs on CI unless allowed; the ini options."""

from __future__ import annotations

import orjson
import pytest

from tests.support.inner_project import InnerProject, file_mode

pytest_plugins = ["pytester"]

ANSWERS = """
PROMPT = {prompt!r}


async def test_answers(openprogram_recording):
    assert await ask(PROMPT) == "echo:" + PROMPT
    {extra}
"""
RECORDING = ("test_agent", "test_answers")
COMMAND = "pytest --openprogram-record-mode=once tests/test_agent.py::test_answers"


def write_answers(project: InnerProject, prompt: str = "hello", extra: str = "") -> None:
    project.write_tests(ANSWERS.format(prompt=prompt, extra=extra))


def recorded_prompts(project: InnerProject) -> list[str]:
    rows = [orjson.loads(line) for line in project.recording(*RECORDING).read_bytes().splitlines()]
    return [row["context"]["messages"][0]["content"] for row in rows if row["type"] == "request"]


def test_without_a_recording_the_default_mode_fails_naming_the_command(
    project: InnerProject,
) -> None:
    write_answers(project)
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no recording at tests/recordings/test_agent/test_answers.jsonl "
            "(record mode 'none' only replays); record it with "
            f"`{COMMAND}`, then commit it"
        ]
    )
    assert not project.recording(*RECORDING).exists()


def test_once_records_privately_then_the_default_mode_replays_offline(
    project: InnerProject,
) -> None:
    project.write_tests(
        """
        import socket

        async def test_answers(openprogram_recording, request):
            with pytest.raises(OSError, match="sockets are disabled"):
                socket.create_connection(("example.com", 80))
            expected = request.config.rootpath / "tests/recordings/test_agent/test_answers.jsonl"
            assert openprogram_recording.path == expected
            assert await ask("hello") == "echo:hello"
            if openprogram_recording.mode == "replay":
                assert openprogram_recording.replay.calls_consumed == 1
            else:
                assert openprogram_recording.replay is None
        """
    )
    recorded = project.run("--openprogram-record-mode=once", "-v")
    recorded.assert_outcomes(passed=1)
    path = project.recording(*RECORDING)
    assert path.is_file()
    assert file_mode(path) == 0o600
    assert file_mode(path.parent) == file_mode(path.parent.parent) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["test_answers.jsonl"]  # no temp left
    assert recorded_prompts(project) == ["hello"]

    replayed = project.run()  # the inner conftest refuses every socket
    replayed.assert_outcomes(passed=1)


def test_once_replays_a_recording_that_exists(project: InnerProject) -> None:
    write_answers(project)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    before = project.recording(*RECORDING).read_bytes()
    write_answers(project, extra="assert openprogram_recording.mode == 'replay'")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    assert project.recording(*RECORDING).read_bytes() == before


def test_all_records_again(project: InnerProject) -> None:
    write_answers(project, prompt="hello")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    write_answers(project, prompt="good morning")
    project.run().assert_outcomes(failed=1)  # the old recording no longer matches

    rerecorded = project.run("--openprogram-record-mode=all")
    rerecorded.assert_outcomes(passed=1)
    assert recorded_prompts(project) == ["good morning"]
    assert file_mode(project.recording(*RECORDING)) == 0o600
    project.run().assert_outcomes(passed=1)


def test_a_failing_rerecord_leaves_the_old_recording_intact(project: InnerProject) -> None:
    write_answers(project, prompt="hello")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    path = project.recording(*RECORDING)
    before = path.read_bytes()

    write_answers(project, prompt="good morning", extra="assert False, 'broken agent'")
    result = project.run("--openprogram-record-mode=all")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*openprogram: the test failed while recording, so its new recording was discarded "
            "(tests/recordings/test_agent/test_answers.jsonl is unchanged)"
        ]
    )
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["test_answers.jsonl"]


def test_a_failing_first_recording_leaves_nothing_behind(project: InnerProject) -> None:
    write_answers(project, extra="assert False, 'broken agent'")
    project.run("--openprogram-record-mode=once").assert_outcomes(failed=1)
    folder = project.recording(*RECORDING).parent
    assert list(folder.iterdir()) == []
    project.run().assert_outcomes(errors=1)  # still missing, so still asks to record it


def test_a_skipped_rerecord_keeps_the_old_recording(project: InnerProject) -> None:
    write_answers(project)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    before = project.recording(*RECORDING).read_bytes()
    write_answers(project, prompt="good morning", extra="pytest.skip('not today')")
    project.run("--openprogram-record-mode=all").assert_outcomes(skipped=1)
    assert project.recording(*RECORDING).read_bytes() == before


def test_a_test_making_no_call_records_that_it_makes_none(project: InnerProject) -> None:
    source = """
        CALLS = {calls}

        async def test_quiet(openprogram_recording):
            for _ in range(CALLS):
                await ask("hello")
    """
    project.write_tests(source.format(calls=0))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    assert project.recording("test_agent", "test_quiet").is_file()
    project.run().assert_outcomes(passed=1)
    project.write_tests(source.format(calls=1))
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the recording holds no calls, incoming call 0*"])


@pytest.mark.parametrize("value", ["true", "1", "yes", "TRUE"])
@pytest.mark.parametrize("mode", ["once", "all"])
def test_recording_is_refused_on_ci(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch, value: str, mode: str
) -> None:
    write_answers(project)
    monkeypatch.setenv("CI", value)
    result = project.run(f"--openprogram-record-mode={mode}")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*refusing to record tests/recordings/test_agent/test_answers.jsonl on CI "
            f"(CI={value}): record locally and commit the recording, or pass "
            "--openprogram-allow-record-on-ci (or set OPENPROGRAM_ALLOW_RECORD_ON_CI=1) to "
            "record here anyway"
        ]
    )
    assert not project.recording(*RECORDING).exists()


def test_recording_on_ci_when_asked_by_option_or_environment(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_answers(project)
    monkeypatch.setenv("CI", "true")
    project.run(
        "--openprogram-record-mode=all", "--openprogram-allow-record-on-ci"
    ).assert_outcomes(passed=1)
    monkeypatch.setenv("OPENPROGRAM_ALLOW_RECORD_ON_CI", "1")
    project.run("--openprogram-record-mode=all").assert_outcomes(passed=1)


def test_ci_replays_and_a_false_ci_value_records(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_answers(project)
    monkeypatch.setenv("CI", "false")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("CI", "true")
    project.run().assert_outcomes(passed=1)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)  # exists: replays


def test_the_ini_file_sets_the_mode_and_the_command_line_wins(project: InnerProject) -> None:
    write_answers(project)
    with (project.root / "pytest.ini").open("a") as ini:
        ini.write("openprogram_record_mode = once\n")
    project.run("--openprogram-record-mode=none").assert_outcomes(errors=1)
    project.run().assert_outcomes(passed=1)
    assert project.recording(*RECORDING).is_file()


def test_the_ini_file_moves_the_recordings(project: InnerProject) -> None:
    write_answers(project)
    with (project.root / "pytest.ini").open("a") as ini:
        ini.write("openprogram_recordings_dir = recordings\n")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    assert (project.root / "recordings" / "tests.test_agent" / "test_answers.jsonl").is_file()
    assert not (project.root / "tests" / "recordings").exists()
    project.run().assert_outcomes(passed=1)


def test_ignore_fields_from_the_ini_file(project: InnerProject) -> None:
    source = """
        from openprogram.providers import SimpleStreamOptions

        async def test_answers(openprogram_recording):
            context = Context(messages=[UserMessage(content="hi")])
            options = SimpleStreamOptions(metadata={{"run": {run!r}}})
            await complete_simple(ECHO_MODEL, context, options)
    """
    project.write_tests(source.format(run="first"))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.write_tests(source.format(run="second"))
    project.run().assert_outcomes(failed=1)
    with (project.root / "pytest.ini").open("a") as ini:
        ini.write("openprogram_ignore_fields =\n    options.metadata.run\n")
    project.run().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "openprogram_record_mode = always",
            "*openprogram_record_mode: must be one of none, once, new_episodes, all, rewrite, "
            "live, drift, not 'always'*",
        ),
        (
            "openprogram_ignore_fields = a..b",
            "*openprogram_ignore_fields: cannot read ignore path 'a..b'*",
        ),
    ],
)
def test_a_bad_ini_value_is_a_usage_error(project: InnerProject, line: str, message: str) -> None:
    write_answers(project)
    with (project.root / "pytest.ini").open("a") as ini:
        ini.write(line + "\n")
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_bad_record_mode_option_is_a_usage_error(project: InnerProject) -> None:
    write_answers(project)
    result = project.run("--openprogram-record-mode=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openprogram-record-mode: invalid choice: 'sometimes'*"])
