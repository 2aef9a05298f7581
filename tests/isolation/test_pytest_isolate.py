"""``pytest --openprogram-isolate``: a real pytest run in a new process over generated test
files, the live servers outside it in this process. Inside, every kind of escape — a curl
child, a shell, ``os.system``, a child ``python -I``, ctypes, UDP, grpcio, in a child and in
the test's own process — reaches none of them, and the run fails naming each connection,
although every test passed; an allowed ``127.0.0.1:PORT`` stays reachable; pytest-xdist's
workers are held as well; without the option the run is what it was."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.isolation.isolated_runs import Case, run_pytest, said, suite_text
from tests.isolation.live import (
    HOST,
    GrpcEchoServer,
    HitServer,
    UdpCounter,
    child_python_isolated,
    ctypes_connect,
    curl_plain,
    grpc_unary,
    os_system_curl,
    python_argv,
    sh_curl,
    udp_sendto,
)

pytestmark = pytest.mark.needs_namespaces


class _Escapes:
    """One server per kind of escape, so the run's report must name each one's port."""

    def __init__(self) -> None:
        self.http = {name: HitServer() for name in _HTTP_KINDS}
        self.udp = {name: UdpCounter() for name in ("udp_child", "udp_in_process")}
        self.grpc = {name: GrpcEchoServer() for name in ("grpc_child", "grpc_in_process")}

    def cases(self) -> list[Case]:
        http = self.http
        return [
            Case("curl", argv=curl_plain(http["curl"].url)),
            Case("sh_c_curl", argv=sh_curl(http["sh_c_curl"].url)),
            Case("os_system", argv=python_argv(os_system_curl(http["os_system"].url))),
            Case("python_I", argv=python_argv(child_python_isolated(http["python_I"].url))),
            Case("ctypes_child", argv=python_argv(ctypes_connect(HOST, http["ctypes_child"].port))),
            Case("ctypes_in_process", source=ctypes_connect(HOST, http["ctypes_in_process"].port)),
            Case("udp_child", argv=python_argv(udp_sendto(HOST, self.udp["udp_child"].port))),
            Case("udp_in_process", source=udp_sendto(HOST, self.udp["udp_in_process"].port)),
            Case("grpc_child", argv=python_argv(grpc_unary(self.grpc["grpc_child"].target))),
            Case("grpc_in_process", source=grpc_unary(self.grpc["grpc_in_process"].target)),
        ]

    def servers(self) -> dict[str, HitServer | UdpCounter | GrpcEchoServer]:
        return {**self.http, **self.udp, **self.grpc}

    def hits(self) -> dict[str, int]:
        return {name: server.hits for name, server in self.servers().items()}

    def ports(self) -> dict[str, int]:
        return {name: server.port for name, server in self.servers().items()}

    def stop(self) -> None:
        for server in self.servers().values():
            server.stop()


_HTTP_KINDS = ("curl", "sh_c_curl", "os_system", "python_I", "ctypes_child", "ctypes_in_process")


@pytest.fixture
def escapes() -> Iterator[_Escapes]:
    servers = _Escapes()
    yield servers
    servers.stop()


def test_every_escape_gets_nothing_and_the_run_fails_naming_each_connection(
    escapes: _Escapes, tmp_path: Path
) -> None:
    (tmp_path / "test_escapes.py").write_text(suite_text(escapes.cases()))
    done = run_pytest(tmp_path, "--openprogram-isolate")
    assert escapes.hits() == dict.fromkeys(escapes.hits(), 0), said(done)
    assert "10 passed" in done.stdout, said(done)  # the tests passed: the namespace fails the run
    assert done.returncode == 1, said(done)
    report = done.stderr.partition("stopped by the test session's network namespace")[2]
    for name, port in escapes.ports().items():
        assert f"127.0.0.1:{port} " in report, f"{name} not named\n{said(done)}"
    assert "10 connections were stopped" in done.stderr, said(done)


def test_without_the_option_the_run_is_as_today(escapes: _Escapes, tmp_path: Path) -> None:
    (tmp_path / "test_escapes.py").write_text(suite_text(escapes.cases()))
    done = run_pytest(tmp_path)
    assert done.returncode == 0, said(done)
    assert escapes.hits() == dict.fromkeys(escapes.hits(), 1), said(done)
    assert "stopped" not in done.stderr


def test_an_allowed_loopback_host_stays_reachable(
    hit_server: HitServer, grpc_echo: GrpcEchoServer, tmp_path: Path
) -> None:
    cases = [
        Case("curl", argv=curl_plain(hit_server.url), expect="hit"),
        Case(
            "ctypes", source=ctypes_connect(HOST, hit_server.port), expect="reached: HTTP/1.0 200"
        ),
        Case("grpc", source=grpc_unary(grpc_echo.target), expect="reached: grpc echo:hi"),
    ]
    (tmp_path / "test_allowed.py").write_text(suite_text(cases))
    allowed = f"127.0.0.1:{hit_server.port},127.0.0.1:{grpc_echo.port}"
    done = run_pytest(tmp_path, "--openprogram-isolate", f"--openprogram-allowed-hosts={allowed}")
    assert done.returncode == 0, said(done)
    assert "3 passed" in done.stdout
    assert hit_server.hits == 2
    assert grpc_echo.hits == 1
    assert "stopped" not in done.stderr


def test_the_ini_option_isolates_and_the_command_line_turns_it_off(
    hit_server: HitServer, tmp_path: Path
) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\nopenprogram_isolate = true\n")
    (tmp_path / "test_curl.py").write_text(
        suite_text([Case("curl", argv=curl_plain(hit_server.url))])
    )
    done = run_pytest(tmp_path)
    assert done.returncode == 1, said(done)
    assert hit_server.hits == 0
    assert f"127.0.0.1:{hit_server.port} (TCP" in done.stderr, said(done)
    done = run_pytest(tmp_path, "-o", "openprogram_isolate=false")
    assert done.returncode == 0, said(done)
    assert hit_server.hits == 1


def test_xdist_workers_run_inside(
    hit_server: HitServer, grpc_echo: GrpcEchoServer, tmp_path: Path
) -> None:
    cases = [
        Case("curl", argv=curl_plain(hit_server.url)),
        Case("grpc", source=grpc_unary(grpc_echo.target)),
        Case("worker", source="import os\nprint(os.environ['PYTEST_XDIST_WORKER'])"),
    ]
    (tmp_path / "test_workers.py").write_text(suite_text(cases))
    done = run_pytest(tmp_path, "--openprogram-isolate", "-n", "2")
    assert "3 passed" in done.stdout, said(done)
    assert done.returncode == 1, said(done)
    assert (hit_server.hits, grpc_echo.hits) == (0, 0)
    assert f"127.0.0.1:{hit_server.port} (TCP" in done.stderr
    assert f"127.0.0.1:{grpc_echo.port} (TCP" in done.stderr


def test_only_the_session_started_inside_says_it_is_isolated(tmp_path: Path) -> None:
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "test_inner.py").write_text("def test_inner():\n    pass\n")
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", str(nested)]
    case = Case("a_pytest_of_its_own", argv=argv, expect="1 passed")
    (tmp_path / "test_outer.py").write_text(suite_text([case]))
    done = run_pytest(tmp_path, "--openprogram-isolate", "test_outer.py")
    assert done.returncode == 0, said(done)
    header = "openprogram: isolated in a loopback-only network namespace; bridged: nothing"
    assert done.stdout.count(header) == 1, said(done)  # the outer run's, not the nested one's
    assert "CLIENT a_pytest_of_its_own:" in done.stdout
