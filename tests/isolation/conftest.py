"""Fixtures of the isolation tests: the live loopback servers of :mod:`tests.isolation.live`,
and ``needs_namespaces`` — a marker and a fixture alike — which skips a test, with the
reason, where this machine cannot make a network namespace (``unshare -rn true`` fails)."""

from __future__ import annotations

import functools
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.isolation.live import GrpcEchoServer, HitServer, LiveServers, UdpCounter

NEEDS_NAMESPACES = (
    "needs_namespaces: the test runs commands in a new user and network namespace; it is "
    "skipped, with the reason, where `unshare -rn true` fails on this machine"
)


@functools.cache
def namespaces_unavailable() -> str | None:
    """None where ``unshare -rn true`` succeeds here; else why it does not (probed once)."""
    if shutil.which("unshare") is None:
        return "no network namespaces here: the unshare command is not installed"
    try:
        done = subprocess.run(
            ["unshare", "-rn", "true"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"no network namespaces here: `unshare -rn true` failed ({error})"
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"no network namespaces here: `unshare -rn true` failed ({said[0]})"
    return None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", NEEDS_NAMESPACES)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("needs_namespaces") is not None:
        _skip_without_namespaces()


def _skip_without_namespaces() -> None:
    reason = namespaces_unavailable()
    if reason is not None:
        pytest.skip(reason)


@pytest.fixture
def needs_namespaces() -> None:
    """Skips the test, with the reason, where no network namespace can be made here."""
    _skip_without_namespaces()


@pytest.fixture
def hit_server() -> Iterator[HitServer]:
    """An HTTP server on 127.0.0.1 that counts the connections it accepts."""
    with HitServer() as server:
        yield server


@pytest.fixture
def udp_counter() -> Iterator[UdpCounter]:
    """A UDP socket on 127.0.0.1 that counts the datagrams it receives."""
    with UdpCounter() as counter:
        yield counter


@pytest.fixture
def grpc_echo() -> Iterator[GrpcEchoServer]:
    """A grpcio echo server on 127.0.0.1 that counts the calls it answers."""
    with GrpcEchoServer() as server:
        yield server


@pytest.fixture
def live_servers() -> Iterator[LiveServers]:
    """One of each (HTTP, UDP, gRPC), for tests that try every kind of escape."""
    servers = LiveServers.started()
    try:
        yield servers
    finally:
        servers.stop()
