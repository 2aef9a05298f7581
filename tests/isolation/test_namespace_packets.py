"""The packet observer's reading of loopback frames, and the reasons a namespace cannot be
made — in process, with frames built here (no socket, no namespace)."""

from __future__ import annotations

import random
import socket
import struct
import sys

import pytest

from openprogram.isolation import launch, namespace, unavailable_reason
from openprogram.isolation.packets import MAX_REPORTS, StopObserver

SYN, RST_ACK, SYN_ACK = 0x02, 0x14, 0x12


class _NoSocket:
    def fileno(self) -> int:
        return -1


def _observer() -> StopObserver:
    return StopObserver(_NoSocket())  # type: ignore[arg-type]  # observe() reads no socket


def _ipv4(protocol: int, source: str, destination: str, payload: bytes) -> bytes:
    header = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        20 + len(payload),
        0,
        0,
        64,
        protocol,
        0,
        socket.inet_aton(source),
        socket.inet_aton(destination),
    )
    return header + payload


def _ipv6(next_header: int, source: str, destination: str, payload: bytes) -> bytes:
    return (
        struct.pack("!IHBB", 6 << 28, len(payload), next_header, 64)
        + socket.inet_pton(socket.AF_INET6, source)
        + socket.inet_pton(socket.AF_INET6, destination)
        + payload
    )


def _frame(packet: bytes) -> bytes:
    ethertype = 0x0800 if packet[0] >> 4 == 4 else 0x86DD
    return bytes(12) + ethertype.to_bytes(2, "big") + packet


def _tcp(source_port: int, destination_port: int, flags: int) -> bytes:
    return struct.pack("!HHIIBBHHH", source_port, destination_port, 0, 0, 0x50, flags, 0, 0, 0)


def _udp(source_port: int, destination_port: int, payload: bytes = b"") -> bytes:
    return struct.pack("!HHHH", source_port, destination_port, 8 + len(payload), 0) + payload


def _dns_query(name: str) -> bytes:
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.split("."))
    return b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00" + labels + b"\x00\x00\x01\x00\x01"


def _refused_attempt(observer: StopObserver, address: str, port: int) -> None:
    observer.observe(_frame(_ipv4(6, address, address, _tcp(40000, port, SYN))))
    observer.observe(_frame(_ipv4(6, address, address, _tcp(port, 40000, RST_ACK))))


def _port_unreachable(address: str, port: int, payload: bytes = b"") -> bytes:
    datagram = _ipv4(17, address, address, _udp(40000, port, payload))
    icmp = struct.pack("!BBHI", 3, 3, 0, 0) + datagram
    return _frame(_ipv4(1, address, address, icmp))


def test_a_syn_answered_by_a_reset_is_stopped() -> None:
    observer = _observer()
    _refused_attempt(observer, "203.0.113.7", 443)
    assert observer.stopped() == ("203.0.113.7:443 (TCP, refused in the isolated namespace)",)


def test_a_reset_without_a_syn_before_it_is_not_a_stopped_connection() -> None:
    observer = _observer()
    observer.observe(_frame(_ipv4(6, "127.0.0.1", "127.0.0.1", _tcp(8080, 40000, RST_ACK))))
    assert observer.stopped() == ()


def test_an_address_that_accepted_during_the_run_is_not_reported() -> None:
    observer = _observer()
    _refused_attempt(observer, "127.0.0.1", 8080)
    frame = _frame(_ipv4(6, "127.0.0.1", "127.0.0.1", _tcp(8080, 40001, SYN_ACK)))
    observer.observe(frame)
    assert observer.stopped() == ()


def test_ipv6_is_read_and_written_in_brackets() -> None:
    observer = _observer()
    observer.observe(_frame(_ipv6(6, "2001:db8::7", "2001:db8::7", _tcp(40000, 443, SYN))))
    observer.observe(_frame(_ipv6(6, "2001:db8::7", "2001:db8::7", _tcp(443, 40000, RST_ACK))))
    assert observer.stopped() == ("[2001:db8::7]:443 (TCP, refused in the isolated namespace)",)


def test_udp_answered_unreachable_is_stopped_unless_something_sent_from_there() -> None:
    observer = _observer()
    observer.observe(_port_unreachable("10.1.2.3", 9999))
    observer.observe(_port_unreachable("127.0.0.1", 5353))
    observer.observe(_frame(_ipv4(17, "127.0.0.1", "127.0.0.1", _udp(5353, 40000))))
    assert observer.stopped() == ("10.1.2.3:9999 (UDP, unreachable in the isolated namespace)",)


def test_a_dns_query_names_what_was_looked_up() -> None:
    observer = _observer()
    observer.observe(_port_unreachable("10.0.0.2", 53, _dns_query("api.openai.com")))
    assert observer.stopped() == ("a DNS lookup of api.openai.com (UDP to 10.0.0.2:53)",)


def test_an_icmpv6_port_unreachable_is_read() -> None:
    datagram = _ipv6(17, "2001:db8::53", "2001:db8::53", _udp(40000, 53, _dns_query("x.test")))
    icmp = struct.pack("!BBHI", 1, 4, 0, 0) + datagram
    observer = _observer()
    observer.observe(_frame(_ipv6(58, "::1", "::1", icmp)))
    assert observer.stopped() == ("a DNS lookup of x.test (UDP to [2001:db8::53]:53)",)


def test_a_queried_name_is_shown_safely() -> None:
    observer = _observer()
    observer.observe(_port_unreachable("10.0.0.2", 53, _dns_query("a\x1b[31m.test")))
    assert observer.stopped() == ("a DNS lookup of a\\x1b\\x5b31m.test (UDP to 10.0.0.2:53)",)


def test_the_reports_are_bounded() -> None:
    observer = _observer()
    for port in range(1, MAX_REPORTS + 50):
        _refused_attempt(observer, "127.0.0.2", port)
    assert len(observer.stopped()) == MAX_REPORTS


def test_random_and_truncated_frames_never_raise() -> None:
    generator = random.Random(37)
    whole = [
        _port_unreachable("10.0.0.2", 53, _dns_query("api.openai.com")),
        _frame(_ipv6(6, "::1", "::1", _tcp(1, 2, SYN))),
    ]
    observer = _observer()
    for _ in range(3000):
        frame = bytearray(generator.choice(whole))
        for _ in range(generator.randrange(4)):
            frame[generator.randrange(len(frame))] = generator.randrange(256)
        observer.observe(bytes(frame[: generator.randrange(len(frame) + 1)]))
    observer.stopped()


# --- why a namespace cannot be made --------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "code", "says"),
    [
        ({"apparmor": "1"}, 1, "restricted (kernel.apparmor_restrict_unprivileged_userns=1)"),
        ({"max": "0"}, 28, "user namespaces are disabled (user.max_user_namespaces=0)"),
        ({"clone": "0"}, 1, "disabled (kernel.unprivileged_userns_clone=0)"),
        ({}, 1, "a container's seccomp profile or policy"),
    ],
    ids=["ubuntu-apparmor", "max-zero", "debian-clone-zero", "seccomp"],
)
def test_a_refused_unshare_says_why_in_the_machines_terms(
    monkeypatch: pytest.MonkeyPatch, settings: dict[str, str], code: int, says: str
) -> None:
    monkeypatch.setattr(namespace, "_setting", settings.get)
    monkeypatch.setattr(namespace, "_unmapped", lambda: False)
    reason = namespace._unshare_refused(code)
    assert says in reason
    assert "\n" not in reason


def test_a_restricted_namespace_that_unshares_but_cannot_map_says_apparmor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(namespace, "_setting", {"apparmor": "1"}.get)
    reason = namespace._refused("mapping the user's own uid and gid", PermissionError(1, "no"))
    assert reason.startswith("unprivileged user namespaces are restricted ")


def test_not_linux_is_said_without_trying(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    launch.unavailable_reason.cache_clear()
    try:
        assert unavailable_reason() == "not Linux (darwin): network namespaces are a Linux feature"
    finally:
        launch.unavailable_reason.cache_clear()
