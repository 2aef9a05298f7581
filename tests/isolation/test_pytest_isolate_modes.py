"""``pytest --openprogram-isolate`` beside the record modes, and where no namespace can be
made: a test recording through the fixture reaches its loopback upstream (the base URL
variable's) through the bridge and replays it inside with the server gone; the option
refuses to run unisolated (exit 4, one line), the ini option runs unisolated and says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.isolation.isolated_runs import Case, run_pytest, said, suite_text
from tests.isolation.live import HitServer, curl_plain, urllib_get

NO_NAMESPACE = """\
import openprogram.isolation

openprogram.isolation.unavailable_reason = lambda: "simulated: user namespaces are off"
"""
"""A plugin (``-p no_namespace``) that makes this machine one where no namespace can be made."""


@pytest.mark.needs_namespaces
def test_a_recording_test_reaches_its_loopback_upstream_and_replays_inside(
    hit_server: HitServer, tmp_path: Path
) -> None:
    base_url = f"http://127.0.0.1:{hit_server.port}/v1"
    case = Case(
        "agent",
        source=urllib_get(f"{base_url}/models"),
        expect="reached: hit",
        fixture="openprogram_recording",
    )
    (tmp_path / "test_agent.py").write_text(suite_text([case]))
    environ = {"OPENAI_BASE_URL": base_url}
    done = run_pytest(
        tmp_path, "--openprogram-isolate", "--openprogram-record-mode=once", env=environ
    )
    assert done.returncode == 0, said(done)
    assert hit_server.hits == 1
    header = "openprogram: isolated in a loopback-only network namespace; bridged: "
    bridged = f"127.0.0.1:{hit_server.port}, api.anthropic.com:443, "
    assert f"{header}{bridged}generativelanguage.googleapis.com:443" in done.stdout, said(done)
    assert (tmp_path / "tests" / "recordings" / "test_agent" / "test_agent.jsonl").is_file()
    hit_server.stop()  # the upstream is gone: the replay needs nothing of it
    done = run_pytest(tmp_path, "--openprogram-isolate", env=environ)
    assert done.returncode == 0, said(done)
    assert "1 passed" in done.stdout
    assert f"{header}nothing" in done.stdout, said(done)  # replay: no upstream


def test_the_option_refuses_where_no_namespace_can_be_made(
    hit_server: HitServer, tmp_path: Path
) -> None:
    (tmp_path / "no_namespace.py").write_text(NO_NAMESPACE)
    (tmp_path / "test_curl.py").write_text(
        suite_text([Case("curl", argv=curl_plain(hit_server.url))])
    )
    done = run_pytest(
        tmp_path, "-p", "no_namespace", "--openprogram-isolate", env={"PYTHONPATH": str(tmp_path)}
    )
    assert done.returncode == 4, said(done)
    assert hit_server.hits == 0  # no test ran
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    assert errors == [
        "ERROR: --openprogram-isolate cannot make a network namespace here (simulated: user "
        "namespaces are off); no test was run, and the run is not made unisolated instead: "
        "run without the option"
    ], said(done)


def test_the_ini_option_runs_unisolated_and_says_so_where_no_namespace_can_be_made(
    hit_server: HitServer, tmp_path: Path
) -> None:
    (tmp_path / "no_namespace.py").write_text(NO_NAMESPACE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nopenprogram_isolate = true\n")
    (tmp_path / "test_curl.py").write_text(
        suite_text([Case("curl", argv=curl_plain(hit_server.url))])
    )
    done = run_pytest(tmp_path, "-p", "no_namespace", env={"PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, said(done)
    assert hit_server.hits == 1
    line = (
        "openprogram: openprogram_isolate is set, but this machine cannot make a network "
        "namespace (simulated: user namespaces are off): the tests run unisolated, and only "
        "Python's own guard holds a replay"
    )
    assert line in done.stderr.splitlines(), said(done)  # at the start
    assert done.stdout.splitlines().count(line) == 2, said(done)  # in the header and the summary


NO_RELAY = """\
import openprogram.isolation


class NoRelay:
    def __init__(self, bridged):
        pass

    def __enter__(self):
        raise OSError("simulated: no folder for the relay's socket")

    def __exit__(self, *exc_info):
        return None


openprogram.isolation.unavailable_reason = lambda: None
openprogram.isolation.Relay = NoRelay
"""
"""A plugin (``-p no_relay``) with which the relay cannot start."""


def test_a_relay_that_cannot_start_is_one_line_and_runs_no_test(
    hit_server: HitServer, tmp_path: Path
) -> None:
    (tmp_path / "no_relay.py").write_text(NO_RELAY)
    cases = [Case("curl", argv=curl_plain(hit_server.url))]
    (tmp_path / "test_curl.py").write_text(suite_text(cases))
    done = run_pytest(
        tmp_path, "-p", "no_relay", "--openprogram-isolate", env={"PYTHONPATH": str(tmp_path)}
    )
    assert done.returncode == 3, said(done)
    assert hit_server.hits == 0
    assert "Traceback" not in done.stderr, said(done)
    assert done.stderr.splitlines()[-1] == (
        "openprogram: --openprogram-isolate could not start the isolated session (simulated: "
        "no folder for the relay's socket); no test was run"
    ), said(done)
