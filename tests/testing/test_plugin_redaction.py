"""The user's redaction under the pytest fixture: ``redact_patterns`` from openprogram's
configuration or the ``openprogram_redact_patterns`` ini option, and a ``redact=`` function
in the marker, are applied to everything a test records (its calls and its tapes), the
recording's header names them (``redaction_fingerprint``), and the recording replays; a bad
pattern fails naming where it was set; ``new_episodes`` after a pattern was added redacts the
calls it keeps."""

from __future__ import annotations

import json

import pytest

from tests.support.config_files import write_config
from tests.support.inner_project import InnerProject, literal

pytest_plugins = ["pytester"]

SECRET = "ACME-123456"

SESSION = """
import re

from openprogram import taped


def hide_orders(text):
    return re.sub(r"ACME-[0-9]{{6}}", "[secret removed]", text)


@taped
def order_status(order):
    return f"{{order}} shipped"


{marker}
async def test_order(openprogram_recording):
    status = order_status("ACME-123456")
    reply = await ask(f"where is {{status}}?")
    # Under replay the model's recorded reply holds the placeholder, not the order number.
    assert reply.startswith("echo:where is ") and reply.endswith(" shipped?")
"""


def ini_option(project: InnerProject, text: str) -> None:
    ini = project.root / "pytest.ini"
    ini.write_text(ini.read_text() + text)


@pytest.mark.parametrize("source", ["configuration", "ini", "marker"])
def test_the_users_redaction_applies_to_what_the_fixture_records(
    project: InnerProject, source: str
) -> None:
    marker = ""
    if source == "configuration":
        write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    elif source == "ini":
        ini_option(project, "openprogram_redact_patterns =\n    ACME-[0-9]{6}\n")
    else:
        marker = "@pytest.mark.openprogram(redact=hide_orders)"
    project.write_tests(SESSION.format(marker=marker))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)

    recording = project.recording("test_agent", "test_order")
    text = recording.read_text()
    assert SECRET not in text
    assert '"[secret removed] shipped"' in text  # the tape's result
    header = json.loads(text.splitlines()[0])
    assert header["redaction_fingerprint"].startswith("sha256:")
    project.run().assert_outcomes(passed=1)  # replays, offline


def test_a_markers_pattern_adds_to_the_configured_ones(project: InnerProject) -> None:
    # The configuration hides order numbers; one test's marker adds customer ids. Both are
    # removed from that test's recording: a marker cannot drop a pattern set below it.
    write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    project.write_tests(
        """
        @pytest.mark.openprogram(redact_patterns=["cust-[0-9]{4}"])
        async def test_order(openprogram_recording):
            reply = await ask("ACME-123456 for cust-0042")
            # Live, the reply holds both; replayed, the recorded one holds the placeholders.
            assert reply in (
                "echo:ACME-123456 for cust-0042", "echo:[secret removed] for [secret removed]"
            )
        """
    )
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    text = project.recording("test_agent", "test_order").read_text()
    assert SECRET not in text
    assert "cust-0042" not in text
    project.run().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "configuration",
            "openprogram's configuration: *config.toml, line 2: record_replay.redact_patterns: "
            "*" + literal("'ACME-([' is not a regular expression") + "*",
        ),
        ("ini", "*" + literal("openprogram_redact_patterns: 'ACME-([' is not a regular") + "*"),
        (
            "fixture",
            literal(
                "the openprogram_config fixture: redact_patterns: 'secret' matches part of "
                "the placeholder '[secret removed]' itself, so redacting a redacted recording "
                "would change it again: make the pattern more specific"
            ),
        ),
    ],
)
def test_a_bad_pattern_fails_naming_where_it_was_set(
    project: InnerProject, source: str, message: str
) -> None:
    tests = """
    async def test_order(openprogram_recording):
        pass
    """
    if source == "configuration":
        write_config("[record_replay]\nredact_patterns = ['ACME-([']\n")
    elif source == "ini":
        ini_option(project, "openprogram_redact_patterns =\n    ACME-([\n")
    else:
        tests += """
    @pytest.fixture(scope="module")
    def openprogram_config():
        return {"redact_patterns": ["secret"]}
    """
    project.write_tests(tests)
    result = project.run()
    output = result.stderr if source == "ini" else result.stdout
    output.fnmatch_lines([message])
    if source != "ini":  # the ini file is read at start-up: a usage error, no test runs
        result.assert_outcomes(errors=1)


def test_new_episodes_replays_a_call_whose_prompt_holds_a_redacted_secret(
    project: InnerProject,
) -> None:
    # The recorded request holds the placeholder where the live one holds the order number:
    # new_episodes compares them with the user redaction on both sides, as replay does, so
    # the call is replayed, not sent live again and re-recorded.
    write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    project.write_tests(SESSION.format(marker=""))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    recording = project.recording("test_agent", "test_order")
    before = recording.read_bytes()
    result = project.run("--openprogram-record-mode=new_episodes")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 test: 1 replayed; 1 call replayed; *"])
    assert recording.read_bytes() == before


def test_new_episodes_redacts_the_replayed_calls_with_a_pattern_added_since(
    project: InnerProject,
) -> None:
    project.write_tests(SESSION.format(marker=""))
    project.run("--openprogram-record-mode=once").assert_outcomes(passed=1)
    recording = project.recording("test_agent", "test_order")
    assert SECRET in recording.read_text()
    write_config("[record_replay]\nredact_patterns = ['ACME-[0-9]{6}']\n")
    # Every call replays, so only the redaction changed: the merged recording is written
    # with it, the replayed calls redacted again, not kept as they were under a header
    # that names the new pattern.
    project.run("--openprogram-record-mode=new_episodes").assert_outcomes(passed=1)
    text = recording.read_text()
    assert SECRET not in text
    assert json.loads(text.splitlines()[0])["redaction_fingerprint"].startswith("sha256:")
    project.run().assert_outcomes(passed=1)
