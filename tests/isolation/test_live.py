"""The harness itself: every kind of escape reaches its live loopback server when nothing
holds it (so a 0 elsewhere means it was held), and none does from inside a bare network
namespace (so a client that was held says so rather than hanging or raising)."""

from __future__ import annotations

import subprocess

import pytest

from tests.isolation.live import (
    CLIENT_TIMEOUT,
    ESCAPES,
    Escape,
    LiveServers,
    grpc_unary,
    python_socket,
    udp_sendto,
    urllib_get,
)


def _run(argv: list[str]) -> str:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=CLIENT_TIMEOUT * 3)
    return done.stdout + done.stderr


@pytest.mark.parametrize("escape", ESCAPES, ids=str)
def test_each_escape_reaches_its_server_when_nothing_holds_it(
    escape: Escape, live_servers: LiveServers
) -> None:
    said = _run(escape.argv(live_servers))
    assert escape.hits(live_servers) == 1, said
    assert "stopped" not in said


@pytest.mark.needs_namespaces
@pytest.mark.parametrize("escape", ESCAPES, ids=str)
def test_no_escape_reaches_its_server_from_a_bare_namespace(
    escape: Escape, live_servers: LiveServers
) -> None:
    said = _run(["unshare", "-rn", *escape.argv(live_servers)])
    assert escape.hits(live_servers) == 0, said
    assert "reached: grpc" not in said
    if escape.aims_at != "udp":  # a datagram's sender is not told it went nowhere
        assert "reached" not in said, said


def test_the_servers_count_in_process_clients_too(live_servers: LiveServers) -> None:
    for source in (
        urllib_get(live_servers.http.url),
        python_socket("127.0.0.1", live_servers.http.port),
        udp_sendto("127.0.0.1", live_servers.udp.port),
        grpc_unary(live_servers.grpc.target),
    ):
        exec(compile(source, "<client>", "exec"), {})
    assert live_servers.http.paths == ["/escape", "/socket"]
    assert live_servers.grpc.hits == 1
    assert live_servers.udp.hits == 1
