"""Each test its own recording, its own registry: async and sync tests, pytest-xdist,
parametrized and class-based tests, tests without the fixture, the user's configured mode."""

from __future__ import annotations

import pytest

from tests.support.inner_project import InnerProject

pytest_plugins = ["pytester"]

MANY_TESTS = """
@pytest.mark.parametrize("word", ["alpha", "beta", "two words", "a/b", "a_b"])
async def test_echo(openprogram_recording, word):
    assert await ask(word) == "echo:" + word


def test_sync(openprogram_recording):
    assert asyncio.run(ask("sync")) == "echo:sync"


class TestAgent:
    async def test_answers(self, openprogram_recording):
        assert await ask("class") == "echo:class"

    class TestNested:
        @pytest.mark.parametrize("n", [1, 2])
        async def test_counts(self, openprogram_recording, n):
            for i in range(n):
                await ask(f"call {i}")
"""

MANY_RECORDINGS = {
    "test_echo-alpha.jsonl",
    "test_echo-beta.jsonl",
    "test_echo-two_words-3f24f9cd.jsonl",
    "test_echo-a_b-e45268c0.jsonl",
    "test_echo-a_b.jsonl",
    "test_sync.jsonl",
    "TestAgent.test_answers.jsonl",
    "TestAgent.TestNested.test_counts-1.jsonl",
    "TestAgent.TestNested.test_counts-2.jsonl",
}


def recordings_of(project: InnerProject, module: str) -> set[str]:
    return {path.name for path in (project.root / "tests" / "recordings" / module).iterdir()}


def test_parametrized_class_and_sync_tests_get_their_own_files(project: InnerProject) -> None:
    project.write_tests(MANY_TESTS)
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=9)
    assert recordings_of(project, "test_agent") == MANY_RECORDINGS
    project.run().assert_outcomes(passed=9)


def test_xdist_workers_record_and_replay_each_test_in_its_own_file(
    project: InnerProject,
) -> None:
    project.write_tests(MANY_TESTS)
    project.write_tests(MANY_TESTS, name="test_more.py")
    recorded = project.run("-n", "2", "--openprogram-record-mode=once", subprocess=True)
    recorded.assert_outcomes(passed=18)
    assert recordings_of(project, "test_agent") == MANY_RECORDINGS
    assert recordings_of(project, "test_more") == MANY_RECORDINGS
    project.run("-n", "2", subprocess=True).assert_outcomes(passed=18)


def test_the_plugin_is_inert_for_tests_without_the_fixture(project: InnerProject) -> None:
    project.write(
        "test_plain.py",
        """\
import sys

import pytest


def test_nothing_of_openprogram_is_loaded():
    assert "openprogram.testing.pytest_plugin" in sys.modules  # loaded, yet idle
    assert "openprogram.providers.registry" not in sys.modules
    assert "openprogram.testing.recording_session" not in sys.modules
    assert "openprogram.testing.session_lifecycle" not in sys.modules


def test_a_plain_failure_is_reported_as_usual():
    assert 1 == 2, "plain"


def test_the_registry_is_untouched_before_and_after_a_fixture_test():
    from openprogram.providers import get_api_provider
    from openprogram.providers import registry as scopes

    get_api_provider("echo")
    assert scopes.current_scope().transform is None


def test_using_the_fixture(openprogram_recording):
    from openprogram.providers import registry as scopes

    assert scopes.current_scope().transform is not None


def test_the_registry_is_restored_after_a_fixture_test():
    from openprogram.providers import EchoProvider, get_api_provider
    from openprogram.providers import registry as scopes

    assert scopes.current_scope().transform is None
    assert type(get_api_provider("echo")) is EchoProvider
""",
    )
    result = project.run("--openprogram-record-mode=once", subprocess=True)
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(["*AssertionError: plain"])
    result.stdout.no_fnmatch_line("*openprogram:*")


def test_the_users_configured_mode_does_not_reach_a_test_using_the_fixture(
    project: InnerProject,
) -> None:
    project.home.mkdir()
    (project.home / "config.toml").write_text(
        '[record_replay]\nmode = "replay"\nfile = "no-such-recording"\n'
    )
    project.write_tests(
        """
        from openprogram.errors import RecordReplayBlockedError


        def test_the_configuration_blocks_the_runtime():
            with pytest.raises(RecordReplayBlockedError):
                asyncio.run(ask("hello"))


        async def test_with_the_fixture(openprogram_recording):
            assert await ask("hello") == "echo:hello"


        def test_blocked_again_after_the_fixture_test():
            with pytest.raises(RecordReplayBlockedError):
                asyncio.run(ask("hello"))
        """
    )
    project.run("--openprogram-record-mode=once", subprocess=True).assert_outcomes(passed=3)
    assert project.recording("test_agent", "test_with_the_fixture").is_file()
    assert not project.recording("test_agent", "test_the_configuration_blocks_the_runtime").exists()
    project.run(subprocess=True).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", ["once", "none"])
def test_an_async_fixture_can_build_on_the_recording(project: InnerProject, mode: str) -> None:
    project.write_tests(
        """
        @pytest.fixture
        async def greeting(openprogram_recording):
            return await ask("good morning")


        async def test_agent_greets(greeting, openprogram_recording):
            assert greeting == "echo:good morning"
            assert await ask("bye") == "echo:bye"
        """
    )
    if mode == "none":
        project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    project.run(f"--openprogram-record-mode={mode}").assert_outcomes(passed=1)
