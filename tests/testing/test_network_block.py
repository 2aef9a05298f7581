"""The network block refuses internet sockets to other machines before ``connect`` runs, lets
loopback and the allowed hosts through, and puts ``socket`` back exactly as it was.

Nothing here opens a connection to another machine: refusals are checked on
:meth:`NetworkBlock.check` and on sockets whose ``connect`` the block stops first (the test
suite's own guard stands under it, so a block that let one through would fail loudly)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from openprogram.errors import NetworkBlockedError
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.testing.network_block import NetworkBlock, is_loopback_host

BLOCKED = "192.0.2.1"  # TEST-NET-1: documentation only, never routed


@pytest.fixture
def block() -> Iterator[NetworkBlock]:
    installed = NetworkBlock(["db.internal", "198.51.100.7"])
    installed.install()
    installed.test = "tests/test_x.py::test_y"
    yield installed
    installed.uninstall()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),
        ("localhost", True),
        ("LocalHost", True),
        ("0.0.0.0", False),
        (BLOCKED, False),
        ("::ffff:192.0.2.1", False),
        ("example.com", False),
    ],
)
def test_loopback_is_this_machine_only(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_a_connection_elsewhere_is_refused_before_connect_with_one_line(
    block: NetworkBlock,
) -> None:
    with socket.socket() as sock, pytest.raises(RecordReplayEscape) as escape:
        sock.connect((BLOCKED, 443))
    error = escape.value.error
    assert isinstance(error, NetworkBlockedError)
    assert (error.test, error.host, error.port) == ("tests/test_x.py::test_y", BLOCKED, 443)
    assert str(error) == (
        "blocked a connection to 192.0.2.1 port 443 from tests/test_x.py::test_y: the network "
        "is blocked (--openprogram-block-network); replay the test's calls with the "
        "openprogram_recording fixture, or list the host in openprogram_allowed_hosts"
    )
    with socket.socket(socket.AF_INET6) as sock, pytest.raises(RecordReplayEscape):
        sock.connect_ex(("2001:db8::1", 80, 0, 0))
    assert [refused.host for refused in block.refusals] == [BLOCKED, "2001:db8::1"]


def test_loopback_and_unix_sockets_pass(block: NetworkBlock, tmp_path: object) -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    block.check(socket.AF_UNIX, "/tmp/some.sock")
    assert block.refusals == []


def test_allowed_hosts_and_what_an_allowed_name_resolved_to_pass(block: NetworkBlock) -> None:
    block.check(socket.AF_INET, ("DB.internal", 5432))  # as given to connect
    block.check(socket.AF_INET, ("198.51.100.7", 5432))
    block._learn("db.internal", [(socket.AF_INET, 1, 6, "", ("203.0.113.9", 5432))])
    block.check(socket.AF_INET, ("203.0.113.9", 5432))  # resolved from an allowed name
    block._learn("api.example.com", [(socket.AF_INET, 1, 6, "", (BLOCKED, 443))])
    with pytest.raises(RecordReplayEscape) as escape:
        block.check(socket.AF_INET, (BLOCKED, 443))
    assert "blocked a connection to 192.0.2.1 port 443 (api.example.com) from" in str(escape.value)


def test_lifted_lets_everything_through_and_collection_is_named(block: NetworkBlock) -> None:
    with block.lifted():
        block.check(socket.AF_INET, (BLOCKED, 80))
    block.test = None
    with pytest.raises(RecordReplayEscape, match="port 80 during collection: the network"):
        block.check(socket.AF_INET, (BLOCKED, 80))


def test_uninstall_puts_socket_back_exactly() -> None:
    before = (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo)
    block = NetworkBlock()
    block.install()
    assert socket.socket.connect is not before[0]
    block.uninstall()
    assert (socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo) == before
