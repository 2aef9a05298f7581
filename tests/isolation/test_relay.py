"""The relay: what is bridged is reachable from inside, nothing else is — even when a
process inside asks the relay's socket itself — and it collects every bridge's report.

Every target here is a live server on loopback that counts its hits."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from openprogram.isolation import Endpoint, Relay
from tests.isolation.live import HitServer

CURL = "/usr/bin/curl"
TIMEOUT = 60

needs_namespaces = pytest.mark.needs_namespaces


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL
    )


def _python(source: str) -> list[str]:
    return [sys.executable, "-I", "-S", "-c", source]


def _get(url: str) -> str:
    return (
        "import urllib.request\n"
        f"with urllib.request.urlopen({url!r}, timeout=10) as answer:\n"
        "    print(answer.read().decode().strip())\n"
    )


def _ask(path: Path, request: bytes) -> tuple[bytes, list[int]]:
    with socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(TIMEOUT)
        connection.connect(str(path))
        connection.sendall(request)
        answer, descriptors, _, _ = socket.recv_fds(connection, 1024, 1)
    return answer, descriptors


# --- the relay's own check, in process -----------------------------------------------------


def test_the_relay_connects_only_to_the_endpoints_it_was_made_with(
    hit_server: HitServer,
) -> None:
    with HitServer() as other, Relay([Endpoint("127.0.0.1", hit_server.port)]) as relay:
        refused, none = _ask(relay.socket_path, f"CONNECT 127.0.0.1 {other.port}\n".encode())
        renamed, none_too = _ask(
            relay.socket_path, f"CONNECT localhost {hit_server.port}\n".encode()
        )
        answer, descriptors = _ask(
            relay.socket_path, f"CONNECT 127.0.0.1 {hit_server.port}\n".encode()
        )
        with socket.socket(fileno=descriptors[0]) as connected:
            connected.sendall(b"GET /through-the-relay HTTP/1.0\r\n\r\n")
            assert connected.recv(100).startswith(b"HTTP/1.0 200")
    assert refused == b"NO this endpoint is not bridged\n"
    assert renamed == refused  # the policy is the endpoint as written, not what it resolves to
    assert (none, none_too) == ([], [])
    assert answer == b"OK\n"
    assert other.hits == 0
    assert hit_server.paths == ["/through-the-relay"]


@pytest.mark.parametrize(
    "request_line",
    [b"HELLO\n", b"CONNECT 127.0.0.1\n", b"CONNECT 127.0.0.1 http\n", b"x" * 5000],
    ids=["unknown", "no-port", "port-not-a-number", "too-long"],
)
def test_the_relay_refuses_what_it_does_not_understand(request_line: bytes) -> None:
    with Relay() as relay, socket.socket(socket.AF_UNIX) as connection:
        connection.settimeout(TIMEOUT)
        connection.connect(str(relay.socket_path))
        try:
            connection.sendall(request_line)
            answer = connection.recv(1024)
        except ConnectionResetError:  # closed with the long line unread
            answer = b""
    assert answer in (
        b"",
        b"NO not a request this relay knows\n",
        b"NO this endpoint is not bridged\n",
    )
    assert not answer.startswith(b"OK")


def test_the_relay_collects_reports_deduplicated_and_answers_them() -> None:
    with Relay() as relay:
        for lines in (["a:1 (TCP, refused)", "b:2 (UDP, unreachable)"], ["a:1 (TCP, refused)"]):
            message = f"STOPPED {len(lines)}\n" + "".join(f"{line}\n" for line in lines)
            answer, _ = _ask(relay.socket_path, message.encode())
            assert answer == b"OK\n"
        assert relay.stopped() == ("a:1 (TCP, refused)", "b:2 (UDP, unreachable)")


def test_the_relays_folder_is_private_and_removed_when_it_stops() -> None:
    with Relay() as relay:
        folder = relay.socket_path.parent
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
        assert relay.socket_path.is_socket()
    assert not folder.exists()


def test_endpoints_are_parsed_and_bad_ones_named() -> None:
    assert Endpoint.parse("localhost:5432") == Endpoint("localhost", 5432)
    assert Endpoint.parse("[::1]:8080") == Endpoint("::1", 8080)
    assert str(Endpoint("::1", 8080)) == "[::1]:8080"
    for bad in ("localhost", "::1:80", "host:0", "host:99999", "ho st:1"):
        with pytest.raises(ValueError, match=repr(bad).replace("[", r"\[")):
            Endpoint.parse(bad)


# --- through the namespace -----------------------------------------------------------------


@needs_namespaces
def test_a_bridged_endpoint_is_reachable_from_inside_by_python_and_curl(
    hit_server: HitServer,
) -> None:
    if not Path(CURL).exists():
        pytest.skip(f"{CURL} is not installed here")
    url = f"http://127.0.0.1:{hit_server.port}"
    with Relay([Endpoint("127.0.0.1", hit_server.port)]) as relay:
        by_python = _run(relay.wrap(_python(_get(f"{url}/python"))))
        by_curl = _run(
            relay.wrap([CURL, "-sS", "--noproxy", "*", "--max-time", "10", f"{url}/curl"])
        )
        stopped = relay.stopped()
    assert (by_python.stdout, by_curl.stdout) == ("hit\n", "hit\n"), by_python.stderr
    assert hit_server.paths == ["/python", "/curl"]
    assert stopped == ()


@needs_namespaces
def test_localhost_is_bridged_at_both_loopback_addresses_inside(hit_server: HitServer) -> None:
    source = _get(f"http://127.0.0.1:{hit_server.port}/v4") + _get(
        f"http://[::1]:{hit_server.port}/v6"
    )
    with Relay([Endpoint("localhost", hit_server.port)]) as relay:
        done = _run(relay.wrap(_python(source)))
    assert done.stdout == "hit\nhit\n", done.stderr
    assert hit_server.paths == ["/v4", "/v6"]


@needs_namespaces
def test_a_process_inside_asking_the_relay_for_what_is_not_bridged_is_refused(
    hit_server: HitServer,
) -> None:
    with HitServer() as bridged, Relay([Endpoint("127.0.0.1", bridged.port)]) as relay:
        source = (
            "import socket\n"
            "connection = socket.socket(socket.AF_UNIX)\n"
            f"connection.connect({str(relay.socket_path)!r})\n"
            f"connection.sendall(b'CONNECT 127.0.0.1 {hit_server.port}\\n')\n"
            "answer, descriptors, _, _ = socket.recv_fds(connection, 1024, 1)\n"
            "print(answer, descriptors)\n"
            "plain = socket.socket()\n"
            f"print(plain.connect_ex(('127.0.0.1', {hit_server.port})))\n"
        )
        done = _run(relay.wrap(_python(source)))
    assert done.stdout == "b'NO this endpoint is not bridged\\n' []\n111\n", done.stderr
    assert (hit_server.hits, bridged.hits) == (0, 0)


@needs_namespaces
def test_several_bridges_at_once_report_to_one_relay(hit_server: HitServer) -> None:
    results: list[subprocess.CompletedProcess[str]] = []
    with HitServer() as other, Relay() as relay:
        commands = [
            relay.wrap(_python(f"import socket\nsocket.socket().connect_ex(('127.0.0.1', {port}))"))
            for port in (hit_server.port, other.port, hit_server.port)
        ]
        threads = [threading.Thread(target=lambda c=c: results.append(_run(c))) for c in commands]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        stopped = relay.stopped()
        assert (hit_server.hits, other.hits) == (0, 0)
    assert [result.returncode for result in results] == [0, 0, 0]
    assert sorted(stopped) == sorted(
        f"127.0.0.1:{port} (TCP, refused in the isolated namespace)"
        for port in (hit_server.port, other.port)
    )


@needs_namespaces
def test_a_relay_that_is_gone_does_not_hang_the_command(hit_server: HitServer) -> None:
    relay = Relay([Endpoint("127.0.0.1", hit_server.port)])
    with relay:
        argv = relay.wrap(
            _python(
                "import socket\n"
                f"client = socket.create_connection(('127.0.0.1', {hit_server.port}), timeout=30)\n"
                "client.sendall(b'GET / HTTP/1.0\\r\\n\\r\\n')\n"
                "try:\n"
                "    print('answer', client.recv(100))\n"
                "except ConnectionResetError:\n"
                "    print('answer', b'')\n"
                f"socket.socket().connect_ex(('127.0.0.1', {hit_server.port + 1}))\n"
            )
        )
    done = _run(argv)  # the relay is closed and its folder removed
    assert done.stdout == "answer b''\n"  # accepted inside, then closed: nothing to pass to
    assert hit_server.hits == 0
    assert done.stderr == (
        f"openprogram isolation: stopped 127.0.0.1:{hit_server.port + 1} "
        "(TCP, refused in the isolated namespace)\n"
    )


@needs_namespaces
def test_a_bridged_name_resolves_inside_and_reaches_the_name_outside(
    hit_server: HitServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = socket.getaddrinfo

    def outside(host: str, *rest: object, **options: object) -> object:
        # the relay, in this process, connects to the name: here it means the live server
        return real("127.0.0.1" if host == "db.bridged.test" else host, *rest, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", outside)
    outside_namespace = os.stat("/proc/self/ns/net").st_ino
    source = (
        "import os, socket, sys, urllib.request\n"
        f"if os.stat('/proc/self/ns/net').st_ino == {outside_namespace}:\n"
        "    sys.exit('NOT ISOLATED: nothing asked')\n"
        f"print(socket.getaddrinfo('db.bridged.test', {hit_server.port}, socket.AF_INET)[0][4])\n"
        + _get(f"http://db.bridged.test:{hit_server.port}/by-name")
        + "try:\n"
        "    socket.getaddrinfo('api.openai.com', 443)\n"
        "except socket.gaierror as error:\n"
        "    print('not resolved', error.errno == socket.EAI_NONAME)\n"
    )
    with Relay([Endpoint("db.bridged.test", hit_server.port)]) as relay:
        done = _run(relay.wrap([sys.executable, "-I", "-c", source]))
        stopped = relay.stopped()
    assert done.stdout.splitlines() == [
        f"('198.18.0.1', {hit_server.port})",
        "hit",
        "not resolved True",
    ], done.stderr
    assert hit_server.paths == ["/by-name"]
    assert len(stopped) == 1
    assert stopped[0].startswith("a DNS lookup of api.openai.com (UDP to ")


def test_the_relay_serves_a_bounded_number_of_requests_at_once() -> None:
    with Relay() as relay:
        idle = []
        for _ in range(64):  # each holds a request open without sending its line
            connection = socket.socket(socket.AF_UNIX)
            connection.connect(str(relay.socket_path))
            idle.append(connection)
        with socket.socket(socket.AF_UNIX) as one_more:
            one_more.settimeout(TIMEOUT)
            one_more.connect(str(relay.socket_path))
            with contextlib.suppress(ConnectionResetError):
                one_more.sendall(b"CONNECT 127.0.0.1 1\n")
                assert one_more.recv(100) == b""  # closed unanswered
        for connection in idle:
            connection.close()
        answers = set()
        for _ in range(10_000):  # the handlers see their clients gone, and serve again
            answer, _ = _ask(relay.socket_path, b"CONNECT 127.0.0.1 1\n")
            answers.add(answer)
            if answer:
                break
        assert b"NO this endpoint is not bridged\n" in answers
