"""Per-test settings: openprogram's configuration (file, then environment), the ini file, the
command line, the ``openprogram_config`` fixture and ``@pytest.mark.openprogram`` combine in
that order, each replacing the keys it sets; the configuration documents' environment
example works for fixture tests; a bad setting fails the test naming where it was set."""

from __future__ import annotations

import pytest

from tests.support.config_files import write_config
from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

LAYERS = """
def settings_of(session):
    s = session.settings
    return (s.record_mode, s.name, s.ignore_fields, s.match, s.http_headers)


async def test_plain(openprogram_recording):
    assert settings_of(openprogram_recording) == (
        "once", None, ("from_env",), "order", ("x-from-ini",)
    )


class TestMarked:
    pytestmark = pytest.mark.openprogram(ignore_fields=["from_class"], match="content")

    @pytest.mark.openprogram(record_mode="live", name="shared-session")
    async def test_marked(self, openprogram_recording, request):
        assert settings_of(openprogram_recording) == (
            "live", "shared-session", ("from_class",), "content", ("x-from-ini",)
        )
        folder = request.config.rootpath / "tests/recordings/test_agent"
        assert openprogram_recording.path == folder / "shared-session.jsonl"
"""

FIXTURE_MODULE = """
@pytest.fixture(scope="module")
def openprogram_config():
    return {"record_mode": "all", "http_headers": ["x-from-fixture"]}


async def test_module_wide(openprogram_recording):
    s = openprogram_recording.settings
    assert (s.record_mode, s.ignore_fields, s.match, s.http_headers) == (
        "all", ("from_env",), "order", ("x-from-fixture",)
    )


@pytest.mark.openprogram(record_mode="none")
async def test_the_marker_beats_the_fixture(openprogram_recording):
    pass
"""


def test_the_layers_combine_in_their_documented_order(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        '[record_replay]\nignore_fields = ["from_file"]\nmatch = "order"\n'
        'http_headers = ["x-from-file"]\n'
    )
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS", '["from_env"]')
    ini = project.root / "pytest.ini"
    ini.write_text(ini.read_text() + "openprogram_record_mode = none\n")
    ini.write_text(ini.read_text() + "openprogram_http_headers = x-from-ini\n")
    project.write_tests(LAYERS)
    project.write_tests(FIXTURE_MODULE, name="test_fixture.py")
    result = project.run("--openprogram-record-mode=once")
    result.assert_outcomes(passed=3, errors=1)
    # The marker's "none" beats the fixture's "all": the missing recording is not recorded.
    result.stdout.fnmatch_lines(
        [
            "*no recording at tests/recordings/test_fixture/test_the_marker_beats_the_fixture"
            ".jsonl (record mode 'none' only replays)*"
        ]
    )
    assert project.recording("test_agent", "test_plain").is_file()
    assert not project.recording("test_agent", "shared-session").exists()  # live


def test_the_environment_example_of_the_configuration_docs_works_for_fixture_tests(
    project: InnerProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.write_tests(
        """
        import os

        from openprogram.providers import ECHO_MODEL, SimpleStreamOptions


        async def test_answers(openprogram_recording):
            options = SimpleStreamOptions(temperature=float(os.environ["TEMPERATURE"]))
            context = Context(messages=[UserMessage(content="hello")])
            assert (await complete_simple(ECHO_MODEL, context, options)).text == "echo:hello"
        """
    )
    monkeypatch.setenv("TEMPERATURE", "0.1")
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    monkeypatch.setenv("TEMPERATURE", "0.9")
    drifted = project.run()
    drifted.assert_outcomes(failed=1)
    drifted.stdout.fnmatch_lines(["*replay mismatch at call 0, field options.temperature:"])
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__IGNORE_FIELDS", '["temperature"]')
    project.run().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("decoration", "message"),
    [
        (
            '@pytest.mark.openprogram(mode="once")',
            "@pytest.mark.openprogram: unknown setting 'mode'; the settings are record_mode, *",
        ),
        (
            '@pytest.mark.openprogram("once")',
            "@pytest.mark.openprogram takes keywords only, e.g. *",
        ),
        (
            '@pytest.mark.openprogram(http_headers=["x-api-key"])',
            "@pytest.mark.openprogram: http_headers: 'x-api-key' may carry a credential, *",
        ),
        (
            '@pytest.mark.openprogram(tools={"lookup": "sometimes"})',
            "@pytest.mark.openprogram: tools: tool 'lookup': unknown policy 'sometimes'; a "
            "tool's policy is live, replay, check",
        ),
        (
            '@pytest.mark.openprogram(redact_patterns=["ACME-(["])',
            literal("@pytest.mark.openprogram: redact_patterns: 'ACME-([' is not a regular ") + "*",
        ),
        (
            '@pytest.mark.openprogram(redact="ACME")',
            "@pytest.mark.openprogram: redact: must be a function taking a string and "
            "returning it, not 'ACME'",
        ),
    ],
)
def test_a_bad_marker_fails_the_test_naming_it(
    project: InnerProject, decoration: str, message: str
) -> None:
    project.write_tests(
        f"""
        {decoration}
        async def test_answers(openprogram_recording):
            pass
        """
    )
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_answers*", message])
    result.stdout.no_fnmatch_line("*During handling*")


def test_a_broken_configuration_fails_the_fixture_tests_naming_it(project: InnerProject) -> None:
    write_config('[record_replay]\nmatch = "sometimes"\n')
    project.write_tests(
        """
        async def test_uses_the_fixture(openprogram_recording):
            pass


        def test_without_it():
            pass
        """
    )
    result = project.run()
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["openprogram's configuration: *config.toml, line 2: record_replay.match: *"]
    )
