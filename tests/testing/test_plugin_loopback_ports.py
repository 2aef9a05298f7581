"""Under the pytest fixture, a test's recording made against a local server replays with
the server on another port; ``compare_loopback_ports`` (the marker, the configuration)
makes it a mismatch whose advice is the base URL, and ``ignore_fields`` may name URL parts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import openprogram
from tests.support.config_files import write_config
from tests.support.http_agent import answering, ask
from tests.support.inner_project import InnerProject
from tests.support.sse_server import ScriptedServer

pytest_plugins = ["pytester"]

ASKING = """
import httpx


{marker}
def test_asks(openprogram_recording):
    reply = httpx.post({url!r}, json={{"question": "hi"}})
    assert reply.json() == {{"answer": "re: hi"}}
"""


def recorded(project: InnerProject, tmp_path: Path) -> str:
    """The inner test's recording, made against a loopback server; its base URL."""
    made = tmp_path / "made.jsonl"
    with ScriptedServer() as server:
        server.serve(answering("re: hi"))
        with openprogram.record_replay(made, mode="record"):
            assert ask(server.base_url, "hi") == "re: hi"
    target = project.recording("test_agent", "test_asks")
    target.parent.mkdir(parents=True)
    shutil.copy(made, target)
    return server.base_url


def write_test(project: InnerProject, url: str, marker: str = "") -> None:
    project.write_tests(ASKING.format(url=url, marker=marker))


def test_the_fixture_replays_a_local_server_on_another_port(
    project: InnerProject, tmp_path: Path
) -> None:
    recorded(project, tmp_path)
    write_test(project, "http://127.0.0.1:1/ask")
    project.run().assert_outcomes(passed=1)


def test_the_marker_compares_the_port_and_the_failure_advises_the_base_url(
    project: InnerProject, tmp_path: Path
) -> None:
    base_url = recorded(project, tmp_path)
    compared = "@pytest.mark.openprogram(compare_loopback_ports=True)"
    write_test(project, "http://127.0.0.1:1/ask", compared)
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay mismatch at call 0, field url:*",
            f"*the recording has {base_url}/ask: the base URL changed; point the client at the "
            f"recorded base URL ({base_url})*",
            "*openprogram: replaying tests/recordings/test_agent/test_asks.jsonl; the request "
            "went to another URL than the recorded one*",
        ]
    )


def test_the_configuration_compares_the_port(project: InnerProject, tmp_path: Path) -> None:
    recorded(project, tmp_path)
    write_config("[record_replay]\ncompare_loopback_ports = true\n")
    write_test(project, "http://127.0.0.1:1/ask")
    project.run().assert_outcomes(failed=1)


def test_a_query_parameter_ignored_by_the_marker(project: InnerProject, tmp_path: Path) -> None:
    base_url = recorded(project, tmp_path)
    # Recorded without a query: the one the run adds differs at url.query.run, ignored.
    ignored = "@pytest.mark.openprogram(ignore_fields=['url.query.run'])"
    write_test(project, f"{base_url}/ask?run=2", ignored)
    project.run().assert_outcomes(passed=1)
    write_test(project, f"{base_url}/ask?run=2")
    result = project.run()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the query changed*"])


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "@pytest.mark.openprogram(ignore_fields=['url.hostname'])",
            "*@pytest.mark.openprogram: ignore_fields: 'url.hostname' names no part of an HTTP "
            "call's URL*",
        ),
        (
            "@pytest.mark.openprogram(compare_loopback_ports='yes')",
            "*@pytest.mark.openprogram: compare_loopback_ports: must be True or False, not 'yes'*",
        ),
    ],
)
def test_a_bad_marker_value_fails_the_test_naming_it(
    project: InnerProject, tmp_path: Path, marker: str, message: str
) -> None:
    recorded(project, tmp_path)
    write_test(project, "http://127.0.0.1:1/ask", marker)
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])
