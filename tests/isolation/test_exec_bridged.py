"""What ``openprogram exec`` bridges into an isolated command, when it isolates one, and how
it names what the namespace stopped: in this process, from host lists and listening-socket
tables written here (the namespace itself is the other test modules' subject)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram import isolation
from openprogram.errors import ExecSetupError
from openprogram.isolation import Endpoint
from openprogram.serving import exec_isolation
from openprogram.serving.exec_isolation import (
    bridged_endpoints,
    isolation_for,
    listening_ports,
    stopped_problem,
    vendor_endpoints,
)

HEAD = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
TCP = HEAD + (
    "   0: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
    "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
    "   2: 0200007F:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
    "   3: 0100007F:C350 0100007F:1538 01 00000000:00000000 00:00000000 00000000     0\n"
    "   4: 0A00000A:01BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0\n"
)
"""127.0.0.1:5432, every address :22, 127.0.0.2:80 and 10.0.0.10:443 listening; a
connection from 127.0.0.1:50000 established (not listening)."""
TCP6 = HEAD + (
    "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000     0\n"
    "   1: 00000000000000000000000000000000:2382 00000000000000000000000000000000:0000 0A "
    "00000000:00000000 00:00000000 00000000     0\n"
)
"""[::1]:8080 and every IPv6 address :9090 listening."""


@pytest.fixture
def proc(tmp_path: Path) -> list[Path]:
    (tmp_path / "tcp").write_text(TCP)
    (tmp_path / "tcp6").write_text(TCP6)
    return [tmp_path / "tcp", tmp_path / "tcp6"]


def test_the_listening_sockets_are_read_from_the_kernel_s_tables(proc: list[Path]) -> None:
    assert listening_ports(proc) == [
        ("127.0.0.1", 5432),
        ("0.0.0.0", 22),
        ("127.0.0.2", 80),
        ("10.0.0.10", 443),
        ("::1", 8080),
        ("::", 9090),
    ]
    assert listening_ports([proc[0].parent / "missing"]) == []


def test_this_machine_s_own_listening_socket_is_found(tmp_path: Path) -> None:
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert ("127.0.0.1", port) in listening_ports()
        assert Endpoint("127.0.0.1", port) in bridged_endpoints(["127.0.0.1"])


def test_an_entry_with_a_port_is_that_endpoint(proc: list[Path]) -> None:
    entries = ["127.0.0.1:5432", "db.internal:5432", "[::1]:8080", "::1:8081", "localhost:6379"]
    assert bridged_endpoints(entries, proc=proc) == (
        Endpoint("127.0.0.1", 5432),
        Endpoint("::1", 8081),  # the configuration keeps [::1]:8081 without its brackets
        Endpoint("::1", 8080),
        Endpoint("db.internal", 5432),
        Endpoint("localhost", 6379),
    )


@pytest.mark.parametrize("entry", ["127.0.0.1:0", "db.internal:99999"])
def test_an_entry_whose_port_is_out_of_range_is_refused_naming_it(
    proc: list[Path], entry: str
) -> None:
    with pytest.raises(ExecSetupError) as refused:
        bridged_endpoints([entry], proc=proc)
    assert str(refused.value) == (
        f"{entry!r} in record_replay.allowed_hosts or http_passthrough_hosts names no port "
        "(1 to 65535): correct it in the configuration (nothing was run)"
    )


def test_a_bare_loopback_host_stands_for_the_ports_listening_on_it(proc: list[Path]) -> None:
    assert bridged_endpoints(["127.0.0.1"], proc=proc) == (
        Endpoint("127.0.0.1", 22),  # listening on every address
        Endpoint("127.0.0.1", 5432),
        Endpoint("127.0.0.1", 9090),  # every IPv6 address: IPv4 too, unless v6-only
    )
    assert bridged_endpoints(["::1"], proc=proc) == tuple(
        Endpoint("::1", port) for port in (8080, 9090)
    )
    assert bridged_endpoints(["localhost"], proc=proc) == tuple(
        Endpoint("localhost", port) for port in (22, 80, 5432, 8080, 9090)
    )


def test_a_bare_host_that_is_not_loopback_stands_for_its_web_ports(proc: list[Path]) -> None:
    assert bridged_endpoints(["telemetry.example.com"], proc=proc) == (
        Endpoint("telemetry.example.com", 443),
        Endpoint("telemetry.example.com", 80),
    )


def test_the_proxy_s_port_is_bridged_after_the_hosts_and_each_endpoint_once(
    proc: list[Path],
) -> None:
    proxy = Endpoint("127.0.0.1", 40000)
    assert bridged_endpoints(
        ["127.0.0.1:5432", "127.0.0.1:5432", "127.0.0.1:40000"], also=(proxy,), proc=proc
    ) == (Endpoint("127.0.0.1", 40000), Endpoint("127.0.0.1", 5432))
    assert bridged_endpoints([], also=(proxy,), proc=proc) == (proxy,)


@pytest.mark.parametrize(
    ("flag", "mode", "isolated"),
    [
        (None, "replay", True),
        (None, "blocked", True),
        (None, "record", False),
        (True, "record", True),
        (True, "replay", True),
        (False, "replay", False),
        (False, "blocked", False),
    ],
)
def test_who_is_isolated_where_a_namespace_can_be_made(
    monkeypatch: pytest.MonkeyPatch, flag: bool | None, mode: str, isolated: bool
) -> None:
    monkeypatch.setattr(isolation, "unavailable_reason", lambda: None)
    assert isolation_for(flag, mode) == (isolated, None)  # type: ignore[arg-type]


def test_where_none_can_be_made_the_default_says_why_and_isolate_refuses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(isolation, "unavailable_reason", lambda: "not Linux")
    assert isolation_for(None, "replay") == (False, "not Linux")
    assert isolation_for(None, "blocked") == (False, "not Linux")
    assert isolation_for(None, "record") == (False, None)
    assert isolation_for(False, "replay") == (False, None)
    with pytest.raises(ExecSetupError, match=r"^--isolate cannot make a network namespace here "):
        isolation_for(True, "record")


def test_what_the_namespace_stopped_is_one_problem_naming_each_connection() -> None:
    assert stopped_problem((), mode="replay") is None
    one = "127.0.0.1:50051 (TCP, refused in the isolated namespace)"
    assert stopped_problem((one,), mode="replay") == (
        f"1 connection was stopped by the isolated replay: {one}; a host:port that may stay "
        "live goes in record_replay.allowed_hosts"
    )
    two = "a DNS lookup of api.openai.com (UDP to 10.0.0.2:53)"
    assert stopped_problem((one, two), mode="record") == (
        f"2 connections were stopped by the isolated recording: {one}, {two}; a host:port "
        "that may stay live goes in record_replay.allowed_hosts"
    )


def test_the_early_probe_is_the_one_answer_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def reason() -> str | None:
        asked.append("probe")
        return "not Linux"

    monkeypatch.setattr(isolation, "unavailable_reason", reason)
    monkeypatch.setattr(exec_isolation, "_early", [])
    exec_isolation.probe_early()
    exec_isolation.probe_early()  # once per process
    assert exec_isolation.isolation_for(None, "replay") == (False, "not Linux")
    assert not exec_isolation._early[0].is_alive()
    # the thread's probe once (a second probe_early starts none), then the answer read after
    # it ended: the real function keeps it, this stand-in is simply asked again
    assert asked == ["probe", "probe"]


def test_a_recording_run_bridges_each_vendor_where_its_variable_points_else_its_api() -> None:
    """What an isolated record run (``exec --record --isolate``, ``--openprogram-isolate``
    recording) bridges in for the vendors: a base URL variable's host and port, else the
    official API on 443 — a Python SDK on its default base URL records through it."""
    found = vendor_endpoints({"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"})
    assert Endpoint("127.0.0.1", 8000) in found
    assert Endpoint("api.openai.com", 443) not in found
    assert Endpoint("api.anthropic.com", 443) in found
    assert Endpoint("generativelanguage.googleapis.com", 443) in found
    assert len(found) == len(set(found))
