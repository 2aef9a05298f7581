"""Names inside the namespace: a bridged host given by name resolves, nothing else does.

Inside the isolated namespace no resolver is reachable. When a bridged endpoint is a name
(``api.openai.com:443``, ``db.internal:5432``), the bridge gives each such name an address of its
own from the benchmarking range 198.18.0.0/15 (every address is local inside, so it can listen
there), and answers DNS queries itself: it listens on UDP port 53 at each ``nameserver`` of
``/etc/resolv.conf`` — the addresses the command's resolver will ask — and says

* for a bridged name: its address (an ``A`` record; no ``AAAA``, so clients use IPv4);
* for any other name: it does not exist (``NXDOMAIN``) — and the lookup is reported as
  stopped: ``a DNS lookup of example.com (UDP to 127.0.0.53:53)``.

The connection to the name's address goes through the relay, which connects out to the
name as written, resolved out there: TLS and ``Host`` still carry the name. Nothing is
resolved before the command starts (a bridge starts as fast offline as online). A name that
``/etc/hosts`` lists is resolved from there by the C library and never asked.

Bounded: one datagram of at most 512 bytes read at a time (anything longer is dropped), the
first question only, at most :data:`MAX_REPORTS` names reported."""

from __future__ import annotations

import socket
import struct

__all__ = ["MAX_REPORTS", "NameResponder", "nameservers", "queried_name", "synthetic_address"]

MAX_REPORTS = 64
_RESOLV_CONF = "/etc/resolv.conf"
_MAX_DATAGRAM = 512
_TTL = 5
_TYPE_A = 1
_CLASS_IN = 1
_NXDOMAIN = 3
_FORMERR = 1
_HEADER = struct.Struct("!HHHHHH")


def synthetic_address(index: int) -> str:
    """The address inside of the ``index``-th bridged name (198.18.0.1, 198.18.0.2, ...)."""
    return socket.inet_ntoa(struct.pack("!I", (198 << 24 | 18 << 16) + 1 + index))


def nameservers(path: str = _RESOLV_CONF) -> list[tuple[int, str]]:
    """(family, address) of each ``nameserver`` line of ``resolv.conf`` (127.0.0.53 where it
    names none: the C library then asks the local host, 127.0.0.1)."""
    found: dict[tuple[int, str], None] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as file:
            lines = file.read(64 * 1024).splitlines()
    except OSError:
        lines = []
    for line in lines:
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            address = words[1].split("%")[0]
            for family in (socket.AF_INET, socket.AF_INET6):
                try:
                    socket.inet_pton(family, address)
                except OSError:
                    continue
                found[(family, address)] = None
    return list(found) or [(socket.AF_INET, "127.0.0.1")]


class NameResponder:
    """Answers DNS queries on the namespace's nameserver addresses; bridged names only."""

    def __init__(self, names: dict[str, str]) -> None:
        self._names = {name.lower().rstrip("."): address for name, address in names.items()}
        self._sockets: list[socket.socket] = []
        self._stopped: dict[str, None] = {}

    def listen(self, servers: list[tuple[int, str]]) -> list[socket.socket]:
        """Bind UDP port 53 at each server address (inside the namespace, every address is
        local); returns the sockets to read."""
        for family, address in servers:
            listener = socket.socket(family, socket.SOCK_DGRAM)
            try:
                if family == socket.AF_INET6:
                    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    listener.setsockopt(socket.IPPROTO_IPV6, 78, 1)  # IPV6_FREEBIND
                else:
                    listener.setsockopt(socket.IPPROTO_IP, 15, 1)  # IP_FREEBIND
                listener.bind((address, 53))
                listener.setblocking(False)
            except OSError:
                listener.close()
                continue  # no IPv6 here: the C library falls back to the next server
            self._sockets.append(listener)
        return list(self._sockets)

    def answer_waiting(self, listener: socket.socket) -> None:
        """Answer the queries waiting on ``listener`` (without blocking)."""
        for _ in range(64):
            try:
                query, sender = listener.recvfrom(_MAX_DATAGRAM)
            except (BlockingIOError, InterruptedError):
                return
            reply = self.reply(query, _format(listener.getsockname()))
            if reply is not None:
                try:
                    listener.sendto(reply, sender)
                except OSError:
                    continue

    def reply(self, query: bytes, server: str) -> bytes | None:
        """The answer to one query (None for what is not a query), noting what it refused."""
        if len(query) < _HEADER.size:
            return None
        ident, flags, questions, _, _, _ = _HEADER.unpack_from(query)
        if flags & 0x8000:
            return None  # an answer, not a query
        parsed = _question(query) if questions >= 1 else None
        if parsed is None:
            return _HEADER.pack(ident, 0x8000 | (flags & 0x0100) | _FORMERR, 0, 0, 0, 0)
        name, shown, end, kind, klass = parsed
        question = query[_HEADER.size : end]
        address = self._names.get(name)
        head = 0x8400 | (flags & 0x0100) | 0x0080  # an answer, authoritative, RD copied, RA
        if address is None:
            if len(self._stopped) < MAX_REPORTS:
                self._stopped[f"a DNS lookup of {shown} (UDP to {server})"] = None
            return _HEADER.pack(ident, head | _NXDOMAIN, 1, 0, 0, 0) + question
        if (kind, klass) != (_TYPE_A, _CLASS_IN):
            return _HEADER.pack(ident, head, 1, 0, 0, 0) + question  # the name, no such record
        record = struct.pack("!HHHIH", 0xC00C, _TYPE_A, _CLASS_IN, _TTL, 4)
        return _HEADER.pack(ident, head, 1, 1, 0, 0) + question + record + socket.inet_aton(address)

    def stopped(self) -> tuple[str, ...]:
        return tuple(self._stopped)


def queried_name(query: bytes) -> str | None:
    """The first question's name of a DNS query, shown safely; None if it is not a query."""
    if len(query) < _HEADER.size or query[2] & 0x80 or query[4:6] == b"\0\0":
        return None
    parsed = _question(query)
    return None if parsed is None else parsed[1]


def _question(query: bytes) -> tuple[str, str, int, int, int] | None:
    """(name in lower case, name shown safely, end offset, type, class) of the first
    question; None when it is malformed or compressed."""
    labels: list[bytes] = []
    position = _HEADER.size
    while position < len(query):
        length = query[position]
        if length == 0:
            end = position + 5
            if end > len(query):
                return None
            kind, klass = struct.unpack_from("!HH", query, position + 1)
            raw = b".".join(labels)
            name = raw.decode("ascii", "replace").lower()
            return name, _show_name(labels), end, kind, klass
        if length > 63 or len(labels) >= 127:
            return None
        labels.append(query[position + 1 : position + 1 + length])
        position += 1 + length
    return None


def _show_name(labels: list[bytes]) -> str:
    """A queried name as text that cannot carry a terminal's control sequence."""
    if not labels:
        return "."
    return ".".join("".join(_visible(byte) for byte in label) for label in labels)


def _visible(byte: int) -> str:
    character = chr(byte)
    if character.isascii() and (character.isalnum() or character in "-_*"):
        return character
    return f"\\x{byte:02x}"


def _format(address: tuple[str, int] | tuple[str, int, int, int]) -> str:
    host, port = address[0], address[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
