"""``openprogram exec --record`` sees every connection of the command's processes, below
Python too: a recorded httpx call beside a ``curl`` child, ``os.system``, a ctypes
``connect``, a grpcio call and a command that is not Python — each run in a new process as a
user runs it, against live loopback servers that count their hits. What a Python hook saw
is listed as before, once; what only the kernel saw is listed with who opened it. A watcher
that stops, or an exec that is killed, never breaks the command's connections.

Linux with seccomp user notification only (skipped elsewhere, with the reason)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram.isolation.connect_watch import ConnectWatch
from openprogram.recording.reader import read_recording
from tests.isolation.live import (
    HOST,
    GrpcEchoServer,
    HitServer,
    ctypes_connect,
    curl_plain,
    grpc_unary,
    os_system_curl,
)
from tests.support.child_processes import CLI_MAIN, openprogram_process, user_environment

UNWATCHED = ConnectWatch().unwatched
pytestmark = pytest.mark.skipif(
    UNWATCHED is not None, reason=f"no connection watch here: {UNWATCHED}"
)

RECORDED_CALL = """\
import httpx, sys
print("vendor:", httpx.get(sys.argv[1]).text.strip())
"""
"""A program's one recorded call: an httpx GET to the vendor stand-in given first."""


def record(
    tmp_path: Path, program: str, *args: str, command: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``openprogram exec --record run -- python PROGRAM ARGS`` (or ``command``) in a new
    home under ``tmp_path``."""
    path = tmp_path / "program.py"
    path.write_text(program)
    argv = command or [sys.executable, str(path), *args]
    done = openprogram_process(
        "exec", "--record", "run", "--", *argv, env=user_environment(tmp_path / "home")
    )
    assert done.returncode == 0, done.stderr
    return done


def not_recorded(done: subprocess.CompletedProcess[str]) -> str:
    """The ``… not recorded: …`` line exec said at the end (one line, however wrapped)."""
    said = " ".join(done.stderr.split())
    found = re.search(r"(\d+ connections? (?:was|were) not recorded: .*?) — ", said)
    assert found is not None, done.stderr
    return found.group(1)


def recorded_calls(tmp_path: Path) -> int:
    [path] = (tmp_path / "home").rglob("run.jsonl")
    return len(read_recording(path).calls)


def kept_as_not_recorded(tmp_path: Path) -> list[dict[str, object]]:
    """The recording's ``not_recorded`` connections (what ``status`` and ``show`` name)."""
    [path] = (tmp_path / "home").rglob("run.jsonl")
    return list(read_recording(path).not_recorded)


def test_a_curl_child_beside_a_recorded_call_is_listed(tmp_path: Path) -> None:
    with HitServer() as vendor, HitServer() as other:
        program = RECORDED_CALL + f"import subprocess\nsubprocess.run({curl_plain(other.url)!r})\n"
        done = record(tmp_path, program, vendor.url)
        assert (vendor.hits, other.hits) == (1, 1)
    assert "vendor: hit" in done.stdout
    assert recorded_calls(tmp_path) == 1
    assert "openprogram: recorded 1 call into " in done.stderr
    assert not_recorded(done) == (
        f"1 connection was not recorded: {HOST}:{other.port} (curl, a process that is not Python)"
    )
    assert "not watched" not in done.stderr
    assert kept_as_not_recorded(tmp_path) == [
        {"host": HOST, "port": other.port, "library": "curl, a process that is not Python"}
    ]


def test_os_system_curl_is_listed(tmp_path: Path) -> None:
    with HitServer() as vendor, HitServer() as other:
        done = record(tmp_path, RECORDED_CALL + os_system_curl(other.url), vendor.url)
        assert other.hits == 1
    assert "reached: hit" in done.stdout
    assert recorded_calls(tmp_path) == 1
    assert not_recorded(done) == (
        f"1 connection was not recorded: {HOST}:{other.port} (curl, a process that is not Python)"
    )


def test_a_ctypes_connect_is_listed_as_opened_outside_python(tmp_path: Path) -> None:
    with HitServer() as vendor, HitServer() as other:
        done = record(tmp_path, RECORDED_CALL + ctypes_connect(HOST, other.port), vendor.url)
        assert other.hits == 1
    assert "reached: HTTP/1.0 200 OK" in done.stdout
    line = not_recorded(done)
    assert re.fullmatch(
        rf"1 connection was not recorded: {HOST}:{other.port} "
        r"\(opened outside Python, pid \d+ python[\d.]*\)",
        line,
    ), line


def test_a_grpc_call_is_listed_as_opened_outside_python(tmp_path: Path) -> None:
    pytest.importorskip("grpc")
    with HitServer() as vendor, GrpcEchoServer() as echo:
        done = record(tmp_path, RECORDED_CALL + grpc_unary(echo.target), vendor.url)
        assert echo.hits == 1
    assert "reached: grpc echo:hi" in done.stdout
    assert recorded_calls(tmp_path) == 1
    line = not_recorded(done)
    assert re.fullmatch(
        rf"1 connection was not recorded: {HOST}:{echo.port} "
        r"\(opened outside Python, pid \d+ python[\d.]*\)",
        line,
    ), line


def test_a_connection_a_python_hook_saw_is_listed_once(tmp_path: Path) -> None:
    """A raw socket: Python's hook saw it (no boundary captured it), so it is listed as
    before, and the kernel's sight of the same connection adds nothing."""
    with HitServer() as vendor, HitServer() as other:
        raw = f"import socket\nsocket.create_connection(({HOST!r}, {other.port})).close()\n"
        done = record(tmp_path, RECORDED_CALL + raw, vendor.url)
        assert other.hits == 1
    assert not_recorded(done) == f"1 connection was not recorded: {HOST}:{other.port} (raw socket)"
    assert [entry["library"] for entry in kept_as_not_recorded(tmp_path)] == ["raw socket"]


def test_a_recorded_call_alone_lists_nothing(tmp_path: Path) -> None:
    """The httpx call's own connection was seen by the kernel too: Python's hook saw it."""
    with HitServer() as vendor:
        done = record(tmp_path, RECORDED_CALL, vendor.url)
    assert "not recorded" not in done.stderr
    assert "openprogram: recorded 1 call into " in done.stderr


def test_a_command_through_the_proxy_lists_what_did_not_go_through_it(tmp_path: Path) -> None:
    """``sh -c``: not Python, so it runs through exec's proxy; its curl to the proxy is not
    listed, its curl to another server is."""
    with HitServer() as other:
        script = (
            'curl -s -o /dev/null --noproxy "*" "$OPENPROGRAM_SERVE_URL/"; '
            f"curl -s -o /dev/null --noproxy '*' {other.url}"
        )
        done = record(tmp_path, "", command=["sh", "-c", script])
        assert other.hits == 1
    assert not_recorded(done) == (
        f"1 connection was not recorded: {HOST}:{other.port} (curl, not through exec's proxy)"
    )
    assert kept_as_not_recorded(tmp_path) == [
        {"host": HOST, "port": other.port, "library": "curl, not through exec's proxy"}
    ]


def test_a_nested_exec_says_its_command_was_not_watched(tmp_path: Path) -> None:
    """The outer exec's listener already watches the inner one's command: the kernel gives
    no second listener, and the inner exec says so in one line (the outer still sees)."""
    with HitServer() as other:
        inner = [sys.executable, "-c", CLI_MAIN, "exec", "--record", "inner", "--"]
        done = record(tmp_path, "", command=[*inner, *curl_plain(other.url)])
    said = " ".join(done.stderr.split())
    assert (
        "openprogram: connections opened outside Python were not watched here: its processes "
        "are watched by another seccomp listener already (an enclosing openprogram exec "
        "--record, or a container's own)"
    ) in said
    # the outer exec runs Python (the inner openprogram), so it sees curl as not Python
    assert f"{HOST}:{other.port} (curl, a process that is not Python)" in said


def test_a_command_outlives_an_exec_killed_mid_run(tmp_path: Path) -> None:
    """exec is killed while its command runs; the command (a shell that ignores the SIGTERM
    exec's death sends it) goes on and connects: the keeper answers in exec's stead."""
    with HitServer() as other:
        script = f'trap "" TERM; echo started; read line; {" ".join(curl_plain(other.url))}'
        env = user_environment(tmp_path / "home")
        argv = [sys.executable, "-c", CLI_MAIN, "exec", "--record", "run", "--", "sh", "-c"]
        with subprocess.Popen(
            [*argv, script],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        ) as exec_process:
            assert exec_process.stdin is not None
            assert exec_process.stdout is not None
            assert exec_process.stdout.readline() == "started\n"  # the command runs, watched
            os.kill(exec_process.pid, signal.SIGKILL)
            assert exec_process.wait() == -signal.SIGKILL
            exec_process.stdin.write("go\n")
            exec_process.stdin.close()
            assert exec_process.stdout.read() == "hit\n"  # until the command's end
        assert other.hits == 1


@pytest.mark.needs_namespaces
def test_an_isolated_record_leaves_the_namespace_to_say_what_it_stopped(tmp_path: Path) -> None:
    """``--isolate``: only the bridged hosts get out, and the namespace names what it stopped;
    the watch would only add the bridge's own traffic, so it is not run."""
    with HitServer() as other:
        done = openprogram_process(
            "exec",
            "--record",
            "run",
            "--isolate",
            "--",
            "sh",
            "-c",
            f"{shlex.join(curl_plain(other.url))}; exit 0",  # exits 0: the report is whole
            env=user_environment(tmp_path / "home"),
        )
        assert other.hits == 0
    assert done.returncode == 1, done.stderr  # a connection the namespace stopped
    said = " ".join(done.stderr.split())
    assert f"{HOST}:{other.port} (TCP, refused in the isolated namespace)" in said, said
    assert "not recorded" not in said
    assert "not watched" not in said
