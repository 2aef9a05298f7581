"""The pytest fixture holds the child processes its test starts, in a real pytest run.

A test module is written to a folder and run with ``python -m pytest`` twice, as a user
does: once recording (``--openprogram-record-mode=once``: every test gets its recording; the
ones that try to escape make no connection then), then replaying. Under replay each escape
— a child ``python -c``, ``python -I``, ``multiprocessing`` spawn, and in a namespace
``python -S``, ``curl``, ``sh -c curl``, ``os.system`` — reaches the counting loopback server
0 times and its test fails naming the connection, though its own body swallowed whatever
the child did. A Python child's call recorded under the fixture is replayed to the child; the
marker's ``children="refuse"`` refuses curl with one line; ``allowed_commands`` lets it run;
an allowed ``127.0.0.1:PORT`` stays reachable from an isolated child.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from pathlib import Path

import pytest

from openprogram.recording.reader import read_recording
from tests.isolation.isolated_runs import run_pytest, said
from tests.isolation.live import HitServer

needs_curl = pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")

CLIENTS = '''
import multiprocessing
import os
import shlex
import socket
import subprocess
import sys

import pytest

PORT = int(os.environ["HIT_PORT"])
RECORDING = os.environ.get("RECORDING") == "1"


def url(path):
    return f"http://127.0.0.1:{PORT}/{path}"


def connect_source(path):
    return (
        "import socket\\n"
        "try:\\n"
        f"    s = socket.create_connection(('127.0.0.1', {PORT}), timeout=10)\\n"
        f"    s.sendall(b'GET /{path} HTTP/1.0\\\\r\\\\n\\\\r\\\\n'); s.recv(10); s.close()\\n"
        "except Exception as error:\\n"
        "    print('stopped:', error)\\n"
    )


def curl(path):
    return ["curl", "-sS", "--noproxy", "*", "--max-time", "10", url(path)]


def run(argv, **options):
    """Run a child and swallow whatever it did: only the fixture may fail the test."""
    if RECORDING:
        return None
    return subprocess.run(argv, capture_output=True, timeout=60, **options)


def connect(path):
    try:
        s = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        s.sendall(f"GET /{path} HTTP/1.0\\r\\n\\r\\n".encode())
        s.recv(10)
        s.close()
    except Exception as error:
        print("stopped:", error)
'''

IN_PROCESS_CASES = """

def test_python_child(openprogram_recording):
    run([sys.executable, "-c", connect_source("python")])


def test_python_isolated_child(openprogram_recording):
    run([sys.executable, "-I", "-c", connect_source("python-I")])


def test_multiprocessing_spawn(openprogram_recording):
    if RECORDING:
        return
    process = multiprocessing.get_context("spawn").Process(target=connect, args=("spawn",))
    process.start()
    process.join(60)


@pytest.mark.openprogram(children="refuse")
def test_refused_curl(openprogram_recording):
    try:
        run(curl("refused"))
    except Exception as error:
        print("REFUSAL:", error)
        raise


@pytest.mark.openprogram(children="refuse", allowed_commands=["curl"])
def test_allowed_curl(openprogram_recording):
    done = run(curl("allowed"))
    assert RECORDING or done.returncode == 0, done


def test_child_records_and_replays(openprogram_recording):
    source = f"import httpx\\nprint(httpx.get({url('recorded')!r}).text)"
    done = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    print("CHILD SAID:", done.stdout.strip())
"""

NAMESPACE_CASES = """

def test_python_no_site(openprogram_recording):
    run([sys.executable, "-S", "-c", connect_source("python-S")])


def test_curl(openprogram_recording):
    run(curl("curl"))


def test_sh_curl(openprogram_recording):
    run(["sh", "-c", shlex.join(curl("sh-curl"))])


def test_os_system_curl(openprogram_recording):
    if not RECORDING:
        os.system(shlex.join(curl("os-system")))


@pytest.mark.openprogram(allowed_hosts=[f"127.0.0.1:{PORT}"])
def test_allowed_host(openprogram_recording):
    done = run(curl("allowed-host"))
    assert RECORDING or done.returncode == 0, done
"""


def _two_runs(folder: Path, server: HitServer, body: str) -> tuple[str, str]:
    """Record, then replay, the test module; what each run printed."""
    (folder / "test_agent.py").write_text(CLIENTS + body)
    environ = {"HIT_PORT": str(server.port), "CI": "", "RECORDING": "1", "COLUMNS": "2000"}
    recorded = run_pytest(folder, "--openprogram-record-mode=once", env=environ)
    assert recorded.returncode == 0, said(recorded)
    replayed = run_pytest(folder, env={**environ, "RECORDING": ""})
    return said(recorded), said(replayed)


def _failed(output: str) -> dict[str, str]:
    """The tests the run failed, each with the rest of its summary line."""
    return dict(re.findall(r"^FAILED test_agent\.py::(\w+) - (.*)$", output, re.MULTILINE))


def _hits(server: HitServer, path: str) -> int:
    return server.paths.count(f"/{path}")


@needs_curl
def test_children_of_a_fixture_test_are_held(tmp_path: Path, hit_server: HitServer) -> None:
    recorded, replayed = _two_runs(tmp_path, hit_server, IN_PROCESS_CASES)
    connection = f"127.0.0.1:{hit_server.port}"
    failed = _failed(replayed)
    assert set(failed) == {
        "test_python_child",
        "test_python_isolated_child",
        "test_multiprocessing_spawn",
        "test_refused_curl",
    }, replayed
    for name in ("test_python_child", "test_python_isolated_child", "test_multiprocessing_spawn"):
        assert connection in failed[name], replayed
        assert "in the child process" in failed[name], replayed
    assert failed["test_refused_curl"].startswith("openprogram.errors.ChildRefusedError"), replayed
    assert "replay refused to start curl " in failed["test_refused_curl"], replayed
    refusal = re.search(r"REFUSAL: (.*)", replayed)
    assert refusal is not None, replayed
    assert "\n" not in refusal.group(1), replayed
    assert refusal.group(1).startswith("replay refused to start curl "), replayed
    for path in ("python", "python-I", "spawn", "refused"):
        assert _hits(hit_server, path) == 0, (path, hit_server.paths)
    assert _hits(hit_server, "allowed") == 1  # allowed_commands: curl ran as it is
    # the Python child's call: recorded once (first run), then served from the recording
    assert _hits(hit_server, "recorded") == 1
    assert "CHILD SAID: hit" in replayed, replayed
    recording = next(tmp_path.rglob("test_child_records_and_replays*.jsonl"))
    assert len(read_recording(recording).calls) == 1, recorded
    assert hit_server.hits == 2  # no connection besides those two


@needs_curl
@pytest.mark.needs_namespaces
def test_children_that_cannot_replay_in_process_run_isolated(
    tmp_path: Path, hit_server: HitServer
) -> None:
    _, replayed = _two_runs(tmp_path, hit_server, NAMESPACE_CASES)
    connection = f"127.0.0.1:{hit_server.port}"
    failed = _failed(replayed)
    assert set(failed) == {
        "test_python_no_site",
        "test_curl",
        "test_sh_curl",
        "test_os_system_curl",
    }, replayed
    for name, line in failed.items():
        assert f"a child process's connection to {connection}" in line, (name, replayed)
    for path in ("python-S", "curl", "sh-curl", "os-system"):
        assert _hits(hit_server, path) == 0, (path, hit_server.paths)
    assert _hits(hit_server, "allowed-host") == 1  # bridged into the namespace
    assert hit_server.hits == 1  # no connection besides it


def test_children_setting_is_checked(tmp_path: Path) -> None:
    (tmp_path / "test_bad.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.openprogram(children="allow")
            def test_bad(openprogram_recording):
                pass
            """
        )
    )
    done = run_pytest(tmp_path, env={"CI": ""})
    assert done.returncode == 1, said(done)
    assert "children must be 'isolate' or 'refuse', not 'allow'" in done.stdout, said(done)
