"""What the namespace stopped, read from the packets on its loopback.

Inside the isolated namespace every address is local and ``lo`` is the only interface, so
every packet any process sends passes there, and a packet socket (``AF_PACKET``) bound to
``lo`` sees it. :class:`StopObserver` reads the headers (IPv4 and IPv6, TCP, UDP, ICMP) and
keeps what it needs to say, at the end of the run, which connections the namespace stopped:

* a TCP SYN to an address:port answered by a reset, where that address:port never accepted a
  connection during the run (a program that retries against its own server until the server
  is up is not reported): ``93.184.216.34:443 (TCP, refused in the isolated namespace)``;
* a UDP datagram answered by "port unreachable" (nothing in the namespace listens there),
  unless something did send from that address:port during the run:
  ``10.1.2.3:9999 (UDP, unreachable in the isolated namespace)``;
* a DNS query among those (to port 53) names what was looked up, read from the copy of the
  query the "unreachable" carries: ``a DNS lookup of api.openai.com (UDP to 10.0.0.2:53)``.

It is bounded: it reads one packet at a time into a fixed buffer (the rest of a long packet
is dropped), remembers at most :data:`MAX_TRACKED` addresses of each kind and reports at most
:data:`MAX_REPORTS` lines. It never slows the command: the kernel drops what the socket's
buffer cannot hold, and a classic BPF filter keeps the socket to the packets it reads
(TCP SYN and RST, UDP, ICMP), so the bytes of bridged connections are never copied to it.

What it cannot see: a connection that is not attempted because the program gave up first (a
name that does not resolve is seen only as the DNS query before it), and anything after the
bridge ends (a daemon left running by the command)."""

from __future__ import annotations

import ctypes
import socket
import struct

from openprogram.isolation.names import queried_name

__all__ = ["MAX_REPORTS", "MAX_TRACKED", "StopObserver", "open_loopback_packet_socket"]

MAX_REPORTS = 64
MAX_TRACKED = 4096
_BUFFER = 2048
_ETH_P_ALL = 0x0003
_ETH_P_IP = 0x0800
_ETH_P_IPV6 = 0x86DD
_PACKET_OUTGOING = 4
_TCP, _UDP, _ICMP, _ICMPV6 = 6, 17, 1, 58
_SYN, _RST, _ACK = 0x02, 0x04, 0x10
_SO_ATTACH_FILTER = 26
_SKF_AD_PKTTYPE = -0x1000 + 4

Address = tuple[int, bytes, int]
"""(family, packed address, port)."""


def open_loopback_packet_socket() -> socket.socket:
    """A non-blocking packet socket on ``lo`` that receives only what the observer reads."""
    # Made receiving nothing (protocol 0), then bound once to what it reads: a packet socket
    # rebound while it receives waits for an RCU grace period (milliseconds at every start).
    packets = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        _attach_filter(packets, _filter_program())
        packets.bind(("lo", _ETH_P_ALL))  # Python puts it in network order
        packets.setblocking(False)
    except OSError:
        packets.close()
        raise
    return packets


class StopObserver:
    """Reads packets from ``lo`` and says which connections the namespace stopped."""

    def __init__(self, packets: socket.socket) -> None:
        self._packets = packets
        self._buffer = bytearray(_BUFFER)
        self._view = memoryview(self._buffer)
        self._syn_targets: set[Address] = set()
        self._accepted: set[Address] = set()
        self._refused: dict[Address, None] = {}
        self._udp_sources: set[Address] = set()
        self._unreachable: dict[Address, str] = {}

    def fileno(self) -> int:
        return self._packets.fileno()

    def read_available(self, *, limit: int = 256) -> None:
        """Read up to ``limit`` waiting packets without blocking."""
        for _ in range(limit):
            try:
                size, address = self._packets.recvfrom_into(self._buffer)
            except (BlockingIOError, InterruptedError):
                return
            if address[2] == _PACKET_OUTGOING:
                continue  # each packet on lo is seen leaving and arriving: count it once
            self.observe(self._view[:size])

    def observe(self, frame: memoryview | bytes) -> None:
        """Take one Ethernet frame from ``lo`` (zero addresses, then the ethertype)."""
        if len(frame) < 14:
            return
        parsed = _network(frame[14:], int.from_bytes(frame[12:14], "big"))
        if parsed is None:
            return
        family, protocol, source, destination, transport = parsed
        if protocol == _TCP and len(transport) >= 14:
            self._tcp(family, source, destination, transport)
        elif protocol == _UDP and len(transport) >= 8:
            self._remember(self._udp_sources, (family, source, _port(transport, 0)))
        elif (protocol, family) in ((_ICMP, socket.AF_INET), (_ICMPV6, socket.AF_INET6)):
            self._unreachable_port(family, transport)

    def stopped(self) -> tuple[str, ...]:
        """One line per connection stopped so far (at most :data:`MAX_REPORTS`)."""
        lines: dict[str, None] = {}
        for target in self._refused:
            if target not in self._accepted:
                lines[f"{_format(target)} (TCP, refused in the isolated namespace)"] = None
        for target, line in self._unreachable.items():
            if target not in self._udp_sources:
                lines[line] = None
        return tuple(lines)[:MAX_REPORTS]

    def _tcp(self, family: int, source: bytes, destination: bytes, segment: memoryview) -> None:
        flags = segment[13]
        if flags & _SYN and not flags & _ACK:
            self._remember(self._syn_targets, (family, destination, _port(segment, 2)))
        elif flags & _SYN and flags & _ACK:
            self._remember(self._accepted, (family, source, _port(segment, 0)))
        elif flags & _RST:
            answered = (family, source, _port(segment, 0))
            if answered in self._syn_targets and len(self._refused) < MAX_TRACKED:
                self._refused[answered] = None

    def _unreachable_port(self, family: int, message: memoryview) -> None:
        port_unreachable = (3, 3) if family == socket.AF_INET else (1, 4)
        if len(message) < 8 or (message[0], message[1]) != port_unreachable:
            return
        inner = _network(message[8:], _ETH_P_IP if family == socket.AF_INET else _ETH_P_IPV6)
        if inner is None or inner[1] != _UDP or len(inner[4]) < 8:
            return
        target = (family, inner[3], _port(inner[4], 2))
        if target in self._unreachable or len(self._unreachable) >= MAX_TRACKED:
            return
        name = queried_name(bytes(inner[4][8:])) if target[2] == 53 else None
        if name is not None:
            self._unreachable[target] = f"a DNS lookup of {name} (UDP to {_format(target)})"
        else:
            self._unreachable[target] = (
                f"{_format(target)} (UDP, unreachable in the isolated namespace)"
            )

    @staticmethod
    def _remember(seen: set[Address], address: Address) -> None:
        if len(seen) < MAX_TRACKED:
            seen.add(address)


def _network(
    packet: memoryview | bytes, ethertype: int
) -> tuple[int, int, bytes, bytes, memoryview] | None:
    """(family, protocol, source, destination, transport bytes) of an IP packet, or None."""
    view = memoryview(packet)
    if ethertype == _ETH_P_IP and len(view) >= 20 and view[0] >> 4 == 4:
        header = (view[0] & 0x0F) * 4
        if header < 20 or len(view) < header:
            return None
        return socket.AF_INET, view[9], bytes(view[12:16]), bytes(view[16:20]), view[header:]
    if ethertype == _ETH_P_IPV6 and len(view) >= 40 and view[0] >> 4 == 6:
        return socket.AF_INET6, view[6], bytes(view[8:24]), bytes(view[24:40]), view[40:]
    return None


def _port(transport: memoryview | bytes, offset: int) -> int:
    return int.from_bytes(transport[offset : offset + 2], "big")


def _format(address: Address) -> str:
    family, packed, port = address
    text = socket.inet_ntop(family, packed)
    return f"[{text}]:{port}" if family == socket.AF_INET6 else f"{text}:{port}"


def _filter_program() -> bytes:
    """A classic BPF program: keep incoming TCP SYN/RST, UDP and ICMP over IPv4 and IPv6.

    IPv6 packets with extension headers before TCP/UDP are dropped (the header chain is not
    walked); a connection attempt is a plain SYN, which has none."""
    ld_w, ld_h, ld_b, ldx_msh, ld_b_ind = 0x20, 0x28, 0x30, 0xB1, 0x50
    jeq, jset, ret = 0x15, 0x45, 0x06
    flags = _SYN | _RST
    # (code, k, label if true, label if false); a jump's labels name later instructions.
    program: list[tuple[int, int, str, str]] = [
        (ld_w, _SKF_AD_PKTTYPE & 0xFFFFFFFF, "", ""),
        (jeq, _PACKET_OUTGOING, "drop", "ethertype"),
        (ld_h, 12, "", ""),  # ethertype
        (jeq, _ETH_P_IP, "ipv4", "ipv6?"),
        (ld_b, 14 + 9, "", ""),  # ipv4: the protocol
        (jeq, _UDP, "keep", "icmp?"),
        (jeq, _ICMP, "keep", "tcp4?"),
        (jeq, _TCP, "tcp4", "drop"),
        (ldx_msh, 14, "", ""),  # tcp4: X = the IPv4 header's length
        (ld_b_ind, 14 + 13, "", ""),
        (jset, flags, "keep", "drop"),
        (jeq, _ETH_P_IPV6, "ipv6", "drop"),  # ipv6?
        (ld_b, 14 + 6, "", ""),  # ipv6: the next header
        (jeq, _UDP, "keep", "icmp6?"),
        (jeq, _ICMPV6, "keep", "tcp6?"),
        (jeq, _TCP, "tcp6", "drop"),
        (ld_b, 14 + 40 + 13, "", ""),  # tcp6: the flags
        (jset, flags, "keep", "drop"),
        (ret, _BUFFER, "", ""),  # keep
        (ret, 0, "", ""),  # drop
    ]
    labels = {
        "ethertype": 2, "ipv4": 4, "icmp?": 6, "tcp4?": 7, "tcp4": 8, "ipv6?": 11,
        "ipv6": 12, "icmp6?": 14, "tcp6?": 15, "tcp6": 16, "keep": 18, "drop": 19,
    }  # fmt: skip
    code = bytearray()
    for index, (operation, k, if_true, if_false) in enumerate(program):
        true_skip = labels[if_true] - index - 1 if if_true else 0
        false_skip = labels[if_false] - index - 1 if if_false else 0
        code += struct.pack("=HBBI", operation, true_skip, false_skip, k)
    return bytes(code)


def _attach_filter(packets: socket.socket, code: bytes) -> None:
    """``SO_ATTACH_FILTER`` with ``struct sock_fprog`` pointing at ``code``."""
    instructions = ctypes.create_string_buffer(code, len(code))
    program = struct.pack("@HP", len(code) // 8, ctypes.addressof(instructions))
    packets.setsockopt(socket.SOL_SOCKET, _SO_ATTACH_FILTER, program)
