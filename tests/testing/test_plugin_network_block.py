"""``--openprogram-block-network`` through pytest: a test that connects to another machine
fails with one line naming the test, host and port — however it handled the refusal, with
or without pytest-xdist — while loopback, the allowed hosts, and fixture tests that record
or run live get through; replay under the fixture stays blocked.

Safety: nothing here may reach another machine even if the block were broken. The in-process
runs happen inside this suite's own socket guard (``tests/conftest.py``), which stands under
the block: a connection the block lets through meets that guard, never the network — the
tests below check it does. The subprocess run happens in a network namespace of its own that
holds only loopback (``unshare -rn``), and is skipped where there is none. The blocked
address is ``192.0.2.1`` (TEST-NET-1, for documentation), never a real host."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.support.inner_project import UNRELATED_PLUGINS_OFF, InnerProject

pytest_plugins = ["pytester"]

NO_GUARD_OF_ITS_OWN = "# the block under test is the inner run's only socket rule\n"

NETWORK_TESTS = """
import os
import socket


def connect(host, port):
    sock = socket.socket()
    try:
        sock.settimeout(2)
        sock.connect((host, port))
    finally:
        sock.close()


def test_without_the_fixture():
    connect("192.0.2.1", 80)


def test_swallowing_the_refusal():
    try:
        connect("192.0.2.1", 8080)
    except BaseException:
        pass


def test_loopback_passes():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        connect(*server.getsockname())


def passed_the_block(host):
    \"\"\"Whether a connection to ``host`` got past the block to the outer suite's guard.\"\"\"
    try:
        connect(host, 80)
    except BaseException as error:
        return type(error).__name__ == "NetworkAccessError"
    return False


def test_an_allowed_host_passes():
    assert passed_the_block("198.51.100.7")


@pytest.mark.openprogram(record_mode="live")
def test_live_under_the_fixture_passes(openprogram_recording):
    assert passed_the_block("192.0.2.1")
    # a run that replays sets placeholder keys at start-up; a live call never sends them
    assert os.environ.get("OPENAI_API_KEY") != "openprogram-replay-placeholder-key"


async def test_replay_under_the_fixture_is_blocked(openprogram_recording):
    if openprogram_recording.mode == "replay":
        connect("192.0.2.1", 443)
"""


def refused(test: str, port: int) -> str:
    return (
        f"blocked a connection to 192.0.2.1 port {port} from tests/test_agent.py::{test}: the "
        "network is blocked (--openprogram-block-network); replay the test's calls with the "
        "openprogram_recording fixture, or list the host in openprogram_allowed_hosts"
    )


@pytest.mark.parametrize("switch", ["command line", "ini file"])
def test_a_connection_elsewhere_fails_the_test_with_one_line(
    project: InnerProject, switch: str
) -> None:
    project.write("conftest.py", NO_GUARD_OF_ITS_OWN)
    project.write_tests(NETWORK_TESTS)
    replay = "tests/test_agent.py::test_replay_under_the_fixture_is_blocked"
    project.run("--openprogram-record-mode=once", replay).assert_outcomes(passed=1)
    if switch == "command line":
        options = ["--openprogram-block-network", "--openprogram-allowed-hosts=198.51.100.7"]
    else:
        ini = project.root / "pytest.ini"
        ini.write_text(
            ini.read_text()
            + "openprogram_block_network = true\nopenprogram_allowed_hosts =\n    198.51.100.7\n"
        )
        options = []

    result = project.run(*options)

    result.assert_outcomes(passed=3, failed=3)
    for test, port in [
        ("test_without_the_fixture", 80),
        ("test_swallowing_the_refusal", 8080),
        ("test_replay_under_the_fixture_is_blocked", 443),
    ]:
        result.stdout.fnmatch_lines([f"*_ {test} _*", refused(test, port)], consecutive=True)


def test_without_the_option_nothing_is_blocked(project: InnerProject) -> None:
    project.write("conftest.py", NO_GUARD_OF_ITS_OWN)
    project.write_tests(
        """
        import socket


        def test_reaches_the_outer_guard():
            with socket.socket() as sock:
                try:
                    sock.connect(("192.0.2.1", 80))
                except BaseException as error:
                    assert type(error).__name__ == "NetworkAccessError"
                else:
                    raise AssertionError("connected")
        """
    )
    project.run().assert_outcomes(passed=1)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare")
def test_in_a_real_process_under_xdist_the_worker_names_the_test(project: InnerProject) -> None:
    probe = subprocess.run(["unshare", "-rn", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("no network namespace here (unshare -rn fails)")
    project.write("conftest.py", NO_GUARD_OF_ITS_OWN)
    project.write_tests(NETWORK_TESTS)
    # Loopback in a new namespace is down until brought up (with `ip`, where there is one).
    loopback_up = shutil.which("ip") is not None
    start = 'ip link set lo up && exec "$@"' if loopback_up else 'exec "$@"'
    command = [
        *("unshare", "-rn", "sh", "-c", start, "sh", sys.executable, "-m", "pytest"),
        *UNRELATED_PLUGINS_OFF,
        *("-n", "2", "--openprogram-block-network"),
        *("-k", "without or loopback" if loopback_up else "without"),
    ]
    result = project.pytester.run(*command, timeout=120)
    result.assert_outcomes(passed=1 if loopback_up else 0, failed=1)
    result.stdout.fnmatch_lines([refused("test_without_the_fixture", 80)])
