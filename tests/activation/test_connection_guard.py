"""Under replay every connection that no recording serves is refused before it is made —
loopback included, whatever the client library — except to the allowed and passthrough
hosts; the refusal names the host, the port and the library, and fails the block even when
the code swallowed it. Under record nothing is refused, and ``AF_UNIX`` is never network.

Every server here listens on 127.0.0.1: a guard that let a connection through reaches this
machine only, and the test sees it (the server counts what it accepted)."""

from __future__ import annotations

import contextlib
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import openprogram
from openprogram.activation.connection_guard import REPLAY_GUARD, SOCKET_HOOK
from openprogram.config.hosts import is_allowed
from openprogram.errors import ReplayConnectionRefusedError
from openprogram.providers import get_api_provider
from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.reader import read_recording
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.config_files import configure
from tests.support.exec_replays import ONE_CALL, record_one_call, replay_program


class Counting(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.server.hits += 1  # type: ignore[attr-defined]
        body = b"live"
        self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def live() -> Iterator[ThreadingHTTPServer]:
    """A live HTTP server on loopback, counting the requests it answered."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Counting)
    server.hits = 0  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_port}/"


def fetch(server: ThreadingHTTPServer) -> bytes:
    """``GET /`` written on a raw socket: a client no boundary captures (``urllib.request``
    and every HTTP library the boundaries know are served from the recording instead)."""
    with socket.create_connection(("127.0.0.1", server.server_port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    return reply.partition(b"\r\n\r\n")[2]


def test_a_loopback_connection_is_refused_under_replay_naming_host_port_and_library(
    live: ThreadingHTTPServer, empty: Path
) -> None:
    port = live.server_port
    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(empty, mode="replay"),
    ):
        fetch(live)
    assert str(refused.value).startswith(
        f"replay refused a connection to 127.0.0.1:{port} (raw socket) that no recording serves: "
    )
    assert "record_replay.allowed_hosts" in str(refused.value)
    assert (refused.value.host, refused.value.port) == ("127.0.0.1", port)
    assert live.hits == 0  # type: ignore[attr-defined]


def test_a_raw_socket_is_refused_before_connect_and_closed(empty: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.setblocking(False)
        with openprogram.record_replay(empty, mode="replay"):
            sock = socket.socket()
            with pytest.raises(RecordReplayEscape) as escape:
                sock.connect(listener.getsockname())
            assert sock.fileno() == -1  # closed: the refusal is no OSError
            REPLAY_GUARD.refusals.clear()  # checked here: the block need not raise it
        assert isinstance(escape.value.error, ReplayConnectionRefusedError)
        assert "(raw socket)" in str(escape.value.error)
        with pytest.raises(BlockingIOError):
            listener.accept()  # nothing ever connected


def test_a_refusal_the_code_swallowed_still_fails_the_block(
    live: ThreadingHTTPServer, empty: Path
) -> None:
    with (
        pytest.raises(ReplayConnectionRefusedError, match=r"127\.0\.0\.1"),
        openprogram.record_replay(empty, mode="replay"),
    ):
        with contextlib.suppress(BaseException):
            fetch(live)
        print("carried on")
    assert live.hits == 0  # type: ignore[attr-defined]


def test_allowed_and_passthrough_hosts_connect_live(live: ThreadingHTTPServer, empty: Path) -> None:
    port = live.server_port
    with openprogram.record_replay(empty, mode="replay", allowed_hosts=["127.0.0.1"]):
        assert fetch(live) == b"live"
    with openprogram.record_replay(empty, mode="replay", passthrough_hosts=[f"127.0.0.1:{port}"]):
        assert fetch(live) == b"live"
    assert live.hits == 2  # type: ignore[attr-defined]
    with (
        pytest.raises(ReplayConnectionRefusedError),
        openprogram.record_replay(
            empty, mode="replay", allowed_hosts=[f"127.0.0.1:{port + 1 if port < 65535 else 1}"]
        ),
    ):
        fetch(live)  # the host on another port only
    assert live.hits == 2  # type: ignore[attr-defined]


def test_record_refuses_nothing_and_the_guard_is_lifted_when_the_block_ends(
    live: ThreadingHTTPServer, tmp_path: Path, empty: Path
) -> None:
    with openprogram.record_replay(tmp_path / "new.jsonl", mode="record"):
        assert fetch(live) == b"live"
    with (
        contextlib.suppress(ReplayConnectionRefusedError),
        openprogram.record_replay(empty, mode="replay"),
    ):
        fetch(live)
    assert not REPLAY_GUARD.active
    assert fetch(live) == b"live"
    assert live.hits == 2  # type: ignore[attr-defined]


def test_unix_sockets_are_not_network(empty: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen()
        with openprogram.record_replay(empty, mode="replay"):
            left, right = socket.socketpair()
            left.close()
            right.close()
            with socket.socket(socket.AF_UNIX) as client:
                client.connect(path)
    assert REPLAY_GUARD.refusals_since(0) == [] or all(
        refusal.host != path for refusal in REPLAY_GUARD.refusals
    )


def test_the_configured_replay_mode_leaves_other_connections_alone(
    live: ThreadingHTTPServer, empty: Path, tmp_path: Path
) -> None:
    # The configured mode is the model layer's: a connection that is not a model call goes
    # live (exec, record_replay() and the fixture are the hermetic ways in).
    configure("replay", str(empty))
    reset_provider_runtime()  # recording the empty file started it, with the mode off
    get_api_provider("echo")  # starts the runtime in replay mode
    assert fetch(live) == b"live"
    assert not REPLAY_GUARD.active


@pytest.mark.parametrize(
    ("allowed", "host", "port", "name", "expected"),
    [
        ({"db.internal"}, "DB.internal", 5432, None, True),
        ({"db.internal"}, "10.1.2.3", 5432, "db.internal", True),
        ({"localhost:4318"}, "localhost", 4318, None, True),
        ({"localhost:4318"}, "localhost", 4317, None, False),
        ({"::1"}, "::1", 80, None, True),
        ({"::1:8080"}, "::1", 8080, None, True),
        ({"[::1]:8080"}, "::1", 8080, None, True),
        (set(), "127.0.0.1", 80, None, False),
    ],
)
def test_allowed_host_syntax(
    allowed: set[str], host: str, port: int, name: str | None, expected: bool
) -> None:
    assert is_allowed(frozenset(allowed), host, port, name) is expected


def patchable() -> tuple[object, ...]:
    """What the socket hook patches, as it is now."""
    methods = (socket.socket.connect, socket.socket.connect_ex, socket.socket.sendto)
    return (*methods, socket.socket.sendmsg, socket.getaddrinfo)


def test_the_socket_hook_goes_when_its_last_check_does() -> None:
    before = patchable()
    leave = REPLAY_GUARD.enter()
    try:
        assert all(now is not then for now, then in zip(patchable(), before, strict=True))
    finally:
        leave()
    leave()  # twice is harmless
    assert patchable() == before
    assert SOCKET_HOOK.resolved_name("203.0.113.9") is None


SWALLOWING = (
    ONE_CALL
    + """
import socket, sys
try:
    socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10).close()
except BaseException as error:
    print("swallowed", type(error).__name__)
"""
)


def test_exec_replay_exits_non_zero_when_the_program_swallowed_a_refusal(
    live: ThreadingHTTPServer, tmp_path: Path
) -> None:
    result = replay_program(SWALLOWING, tmp_path, str(live.server_port))
    assert result.stdout == "swallowed RecordReplayEscape\n"
    assert result.returncode != 0, result.stderr
    assert f"replay refused a connection to 127.0.0.1:{live.server_port} (raw socket)" in (
        result.stderr
    )
    assert live.hits == 0  # type: ignore[attr-defined]


def test_record_reports_the_connections_no_boundary_captured(
    live: ThreadingHTTPServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import httpx

    port = live.server_port
    with openprogram.record_replay(tmp_path / "rec.jsonl", mode="record") as active:
        with httpx.Client() as client:
            assert client.get(url(live)).content == b"live"  # captured: recorded
        assert fetch(live) == b"live"  # the same host and port: a captured request went there
    assert active.not_recorded == []
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        other_port = other.getsockname()[1]
        with openprogram.record_replay(tmp_path / "missed.jsonl", mode="record") as active:
            assert fetch(live) == b"live"
            assert fetch(live) == b"live"  # the same connection is reported once
            socket.create_connection(("127.0.0.1", other_port)).close()
    assert [str(missed) for missed in active.not_recorded] == [
        f"127.0.0.1:{port} (raw socket)",
        f"127.0.0.1:{other_port} (raw socket)",
    ]
    assert (
        f"openprogram: 2 connections were not recorded: 127.0.0.1:{port} (raw socket), "
        f"127.0.0.1:{other_port} (raw socket) — no boundary captures that client library"
    ) in caplog.text


def test_exec_record_says_which_connections_it_did_not_record(
    live: ThreadingHTTPServer, tmp_path: Path
) -> None:
    env = user_environment(tmp_path / "exec-home")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "PYTHONPATH"):
        env.pop(name, None)
    program = tmp_path / "fetch.py"
    program.write_text(
        "import socket, sys\n"
        "socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=10).close()\n"
    )
    result = openprogram_process(
        "exec",
        "--record",
        "missed",
        "--",
        sys.executable,
        str(program),
        str(live.server_port),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert (
        f"openprogram: 1 connection was not recorded: 127.0.0.1:{live.server_port} (raw socket)"
        in " ".join(result.stderr.split())
    )
    recording = read_recording(tmp_path / "exec-home" / "recordings" / "missed.jsonl")
    assert [(entry["port"], entry["library"]) for entry in recording.not_recorded] == [
        (live.server_port, "raw socket")
    ]


@pytest.mark.parametrize("script", ["#!/usr/bin/env node\nconsole.log('live')\n", None])
def test_exec_replay_in_process_refuses_a_command_known_not_to_be_python_before_it_runs(
    tmp_path: Path, script: str | None
) -> None:
    # By default such a command runs through the recording proxy (tests/serving); asked to
    # run it in-process, exec cannot activate replay in it, so it would go live.
    env = user_environment(tmp_path / "exec-home")
    env.pop("PYTHONPATH", None)
    record_one_call(env)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / ("tool.js" if script is not None else "node")
    program.write_text(script if script is not None else "not run\n")
    program.chmod(0o755)
    result = openprogram_process(
        "exec", "--replay", "quiet", "--no-proxy", "--", str(program), env=env
    )
    assert result.returncode == 2, result.stderr
    assert (
        "is not a Python program (node), so exec cannot replay it in-process: its connections "
        "would reach the live servers. Run it without --no-proxy"
    ) in " ".join(result.stderr.split())
    assert result.stdout == ""


STARTS_ISOLATED = (
    ONE_CALL
    + """
import os, subprocess, sys
try:
    subprocess.run([sys.executable, "-I", "-c", "print('ran live')"], check=True)
except BaseException as error:
    print("refused", type(error).__name__)
try:
    os.execv(sys.executable, [sys.executable, "-E", "-c", "print('ran live')"])
except BaseException as error:
    print("refused", type(error).__name__)
print(subprocess.run([sys.executable, "-c", "print('activated')"], capture_output=True,
                     text=True).stdout.strip())
"""
)


def test_exec_replay_refuses_to_start_a_python_child_that_would_skip_the_activation(
    tmp_path: Path,
) -> None:
    env = user_environment(tmp_path / "exec-home")
    env.pop("PYTHONPATH", None)
    record_one_call(env)
    program = tmp_path / "starts.py"
    program.write_text(STARTS_ISOLATED)
    result = openprogram_process(
        "exec", "--replay", "quiet", "--", sys.executable, str(program), env=env
    )
    assert result.stdout == "refused RecordReplayEscape\nrefused RecordReplayEscape\nactivated\n"
    assert result.returncode != 0
    assert "replay refused to start" in result.stderr
    assert "-I (isolated mode) ignores PYTHONPATH" in " ".join(result.stderr.split())
