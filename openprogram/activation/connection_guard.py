"""The backstop beneath every boundary: connections a replay may not make are refused at the
socket, before they are made — and datagrams before they are sent.

The boundaries capture what they know (the provider registry, httpx, httpx2, urllib3 — so
``requests`` and botocore — aiohttp, and ``http.client`` — so ``urllib.request``); a program may
also open connections through anything else — a database driver, a request written on an
``http.client`` connection by hand, a raw socket, a UDP client (statsd, syslog, a game server's
protocol). Under replay none of those may reach a live server, loopback included (a local model
server, a proxy, is loopback), or a replay that passes proves nothing. So every connection made and
every datagram sent through Python's ``socket`` module goes through one hook:

* :data:`SOCKET_HOOK` patches ``socket.socket.connect`` and ``connect_ex``, and the two ways
  to send without connecting, ``sendto`` (both signatures, ``(data, address)`` and ``(data,
  flags, address)``) and ``sendmsg`` given an address, once for the process (every thread,
  every library; asyncio's ``sock_connect`` and ``sock_sendto``, and its datagram endpoints,
  whose transports call the socket's ``sendto``, or ``connect`` for a ``remote_addr``, too).
  It runs the checks registered on it before the real call, and a check sees a datagram as
  a connection to where it is sent: one ``(host, port)``. A datagram socket given its peer
  by ``connect`` is checked there, so its ``send`` has nothing left to check;
  ``socket.sendfile`` needs a connected stream socket; ``sendto`` with ``MSG_FASTOPEN``,
  which connects a TCP socket as it sends, is checked as a send. The hook also watches
  ``socket.getaddrinfo``, so a check knows which host name an address was resolved from.
  Only internet sockets (``AF_INET``, ``AF_INET6``) are checked: ``AF_UNIX`` is not network
  (asyncio's self-pipe is a ``socketpair``).
* A name lookup is never refused, nor seen. The system resolver's queries
  (``socket.getaddrinfo`` and all built on it) are sent from C, beneath the hook; a DNS
  library written in Python — dnspython, the resolvers of eventlet and Twisted — sends its
  queries as datagrams to port 53 of the resolver, and retries an answer too long for one
  over TCP to the same port. Traffic to port :data:`DNS_PORT` of one of the system's name
  servers (:func:`system_resolvers`, the ``nameserver`` lines of ``/etc/resolv.conf``) is
  let through unchecked, so that a lookup works the same whichever library makes it
  (pymongo asks dnspython for the servers of a ``mongodb+srv://`` cluster, then connects to
  them by name), and it is not reported as a connection no boundary captured. Port 53 of
  any other host is checked like any port: a server that listens there is a server, not the
  machine's resolver. A lookup reaches the resolver, not a server a recording stands in
  for, and the connection made to the address it answered is checked (by that address:
  only ``getaddrinfo``'s answers tell the hook the name an address came from).
* :data:`REPLAY_GUARD` is the replay's check. While at least one replay is active (entered
  with :meth:`ReplayGuard.enter` by every way in: ``record_replay(mode="replay")``, the
  pytest fixture, ``openprogram exec --replay``, the configured replay mode), a connection
  or a datagram to a host that is not allowed raises
  :class:`~openprogram.errors.ReplayConnectionRefusedError` — one line naming the host, the
  port and the client library — inside a
  :class:`~openprogram.recording.mismatch.RecordReplayEscape`, so no retry loop catches it,
  and the refusal is remembered (:attr:`ReplayGuard.refusals`) so the command or the test
  fails even when the program swallowed the error (asyncio's datagram transport does: it
  closes itself on a write error that is not an ``OSError``).

Allowed hosts are written ``host`` (any port) or ``host:port`` (``[::1]:8080`` for an IPv6
address), compared case-insensitively with the host given to ``connect`` or ``sendto`` and
with the name it was resolved from: the ``allowed_hosts`` setting and the
``http_passthrough_hosts`` (live in record and replay alike).

Under record nothing is refused; a :class:`ConnectionWatch` notes every connection and every
destination of a datagram instead (each once), so that the ones no boundary captured — a
database driver, a raw socket, a metrics client's datagrams — are reported at the end
rather than missed in silence. Given an exchange folder (``openprogram exec --record``), it
also writes every endpoint it saw, captured or not, to ``seen-<pid>.jsonl`` there as it
sees it (:func:`python_saw`), so that exec can tell the connections its kernel-level watch
saw that no Python hook did (:mod:`openprogram.isolation.connect_watch`).

What the hook cannot see: sockets that C or Rust extensions open themselves (uvloop's own
transports, grpc's core, a driver written in C, c-ares), a socket that connected before the
replay began, and processes that are not Python. (Under ``openprogram exec --record`` the
kernel shows exec those too: :mod:`openprogram.isolation.connect_watch`.)"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprogram.config.hosts import is_allowed, normalized_hosts
from openprogram.errors import RecordingFileError, ReplayConnectionRefusedError
from openprogram.http_boundary.boundary import ACTIVATIONS
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.not_recorded import (
    NOT_RECORDED_FEATURE,
    connection_text,
    not_recorded_row,
)
from openprogram.recording.writer import RecordingWriter

__all__ = [
    "DNS_PORT",
    "REPLAY_GUARD",
    "SOCKET_HOOK",
    "Connection",
    "ConnectionWatch",
    "ReplayGuard",
    "SocketCheck",
    "SocketHook",
    "is_loopback_host",
    "is_name_lookup",
    "not_recorded_message",
    "note_not_recorded",
    "python_saw",
    "system_resolvers",
]

INTERNET_FAMILIES = (socket.AF_INET, socket.AF_INET6)

DNS_PORT = 53
"""Where a DNS library sends its queries: traffic to this port of a system name server is a
name lookup, never checked (see the module's docstring)."""

RESOLV_CONF = Path("/etc/resolv.conf")
"""Where the system resolver's name servers are listed."""

_RESOLV_CONF_LIMIT = 64 * 1024
"""The most of :data:`RESOLV_CONF` read: a name server list is a few lines."""


@functools.cache
def system_resolvers() -> frozenset[str]:
    """The addresses of the name servers the system resolver asks (``nameserver`` lines of
    :data:`RESOLV_CONF`, read once per process), normalised; empty where there is none."""
    try:
        with RESOLV_CONF.open("rb") as file:
            text = file.read(_RESOLV_CONF_LIMIT).decode("utf-8", "replace")
    except OSError:
        return frozenset()
    found = set()
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "nameserver":
            found.add(_normalised_address(words[1]))
    return frozenset(found)


def _normalised_address(host: str) -> str:
    """``host`` as one spelling of its address (``::1`` and ``0:0::1`` alike, the zone of a
    link-local address dropped), or lower-cased where it is not an address."""
    try:
        return str(ipaddress.ip_address(host.split("%", 1)[0]))
    except ValueError:
        return host.lower()


def is_name_lookup(host: str, port: int | None) -> bool:
    """Whether traffic to ``host``:``port`` is a DNS query to one of the system's name servers."""
    return port == DNS_PORT and _normalised_address(host) in system_resolvers()


PATCHED_METHODS = ("connect", "connect_ex", "sendto", "sendmsg")
"""The methods of ``socket.socket`` the hook runs its checks in (``sendmsg`` where the
platform has it)."""

SocketCheck = Callable[[str, int | None, str | None], None]
"""``(host as given to connect or sendto, port, the name it was resolved from or None)``:
raises to refuse the connection or the datagram."""

_LIBRARIES = (
    "urllib3",
    "aiohttp",
    "httpcore",
    "httpcore2",
    "httpx",
    "httpx2",
    "botocore",
    "requests",
    "websockets",
    "http.client",
)
"""Client libraries a refusal names, looked for from the innermost frame out."""


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (as given to ``connect``) is this machine. Stricter than the URL rule replay
    compares by (``openprogram.recording.url_comparison.is_loopback_host``): a connection is let
    through on it, so of names only ``localhost`` counts (a ``*.localhost`` name resolves wherever
    the resolver says), and an IPv4-mapped address counts by the address it maps."""
    name = host.lower().strip("[]")
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name.partition("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


class SocketHook:
    """One patch of ``socket`` for the process, running every registered check before an
    internet socket connects or sends a datagram (see the module's docstring). It is in
    place while a check is registered, and ``socket`` is put back as it found it when the
    last one goes; a patch that something else replaced meanwhile (a test harness restoring
    ``socket``) is put back when the next check is added."""

    def __init__(self) -> None:
        self._checks: tuple[SocketCheck, ...] = ()
        self._resolved: dict[str, str] = {}
        self._lock = threading.Lock()
        self._patched: tuple[Any, ...] | None = None
        self._found: tuple[Any, ...] | None = None

    def add(self, check: SocketCheck) -> Callable[[], None]:
        """Run ``check`` before every connection and datagram from now on; returns what
        removes it."""
        with self._lock:
            self._checks = (*self._checks, check)
            self._install()

        def remove() -> None:
            with self._lock:
                checks = list(self._checks)
                if check in checks:
                    checks.remove(check)
                self._checks = tuple(checks)
                if not checks:
                    self._uninstall()

        return remove

    def resolved_name(self, address: str) -> str | None:
        """The host name ``address`` was resolved from in this process, if it was."""
        with self._lock:
            return self._resolved.get(address.lower())

    def check_connect(self, sock: socket.socket, address: Any) -> None:
        """Run the checks for ``sock`` connecting to ``address``; ``sock`` is closed when one
        refuses (the refusal is no ``OSError``, so ``socket.create_connection`` and its like
        would leave it open)."""
        try:
            self._run_checks(sock, address)
        except BaseException:
            sock.close()
            raise

    def check_send(self, sock: socket.socket, address: Any) -> None:
        """Run the checks for ``sock`` sending to ``address`` (``sendto``, ``sendmsg``);
        ``sock`` stays open when one refuses: it is its owner's, who may still use it (a
        server replying to its clients) and will close it."""
        self._run_checks(sock, address)

    def _run_checks(self, sock: socket.socket, address: Any) -> None:
        checks = self._checks
        if not checks or sock.family not in INTERNET_FAMILIES:
            return
        if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
            return  # not an address an internet socket would take
        host = address[0]
        port = address[1] if len(address) > 1 and isinstance(address[1], int) else None
        if is_name_lookup(host, port):
            return  # a name lookup (see the module's docstring)
        name = self.resolved_name(host)
        for check in checks:
            check(host, port, name)

    def learn(self, host: Any, found: Any) -> None:
        """Remember the host name each address in ``found`` (``getaddrinfo``'s answer for
        ``host``) was resolved from."""
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        if not isinstance(host, str) or not isinstance(found, list):
            return
        with self._lock:
            for entry in found:
                try:
                    address = str(entry[4][0]).lower()
                except (IndexError, TypeError):
                    continue
                if address != host.lower():
                    self._resolved.setdefault(address, host)

    def _current(self) -> tuple[Any, ...]:
        """What the patch replaces, as it is now: the socket methods of
        :data:`PATCHED_METHODS` (None for one this platform lacks), then ``getaddrinfo``."""
        methods = (getattr(socket.socket, method, None) for method in PATCHED_METHODS)
        return (*methods, socket.getaddrinfo)

    def _install(self) -> None:
        if self._patched is not None and self._current() == self._patched:
            return
        hook = self
        found = self._current()
        real_connect, real_connect_ex, real_sendto, real_sendmsg, real_getaddrinfo = found

        def connect(self: socket.socket, address: Any) -> None:
            hook.check_connect(self, address)
            real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            hook.check_connect(self, address)
            code: int = real_connect_ex(self, address)
            return code

        def sendto(self: socket.socket, data: Any, *flags_and_address: Any) -> int:
            if len(flags_and_address) in (1, 2):  # (address) or (flags, address)
                hook.check_send(self, flags_and_address[-1])
            sent: int = real_sendto(self, data, *flags_and_address)
            return sent

        def sendmsg(self: socket.socket, buffers: Any, *rest: Any) -> int:
            if len(rest) == 3 and rest[2] is not None:  # (ancdata, flags, address)
                hook.check_send(self, rest[2])
            sent: int = real_sendmsg(self, buffers, *rest)
            return sent

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            answer = real_getaddrinfo(host, *args, **kwargs)
            hook.learn(host, answer)
            return answer

        patched = (
            connect,
            connect_ex,
            sendto,
            sendmsg if real_sendmsg is not None else None,
            getaddrinfo,
        )
        self._put(patched)
        self._found, self._patched = found, patched

    def _uninstall(self) -> None:
        if (
            self._patched is not None
            and self._found is not None
            and self._current() == self._patched
        ):
            self._put(self._found)
        self._patched = self._found = None
        self._resolved.clear()  # names are learned while a check is registered

    @staticmethod
    def _put(methods: tuple[Any, ...]) -> None:
        """Set what :meth:`_current` reads to ``methods`` (a method that is None, missing on
        this platform, is left missing)."""
        *socket_methods, getaddrinfo = methods
        for method, function in zip(PATCHED_METHODS, socket_methods, strict=True):
            if function is not None:
                setattr(socket.socket, method, function)
        socket.getaddrinfo = getaddrinfo


SOCKET_HOOK = SocketHook()


class ReplayGuard:
    """Refuses every connection and datagram not allowed while a replay is active (see the
    module's docstring)."""

    def __init__(self, hook: SocketHook = SOCKET_HOOK) -> None:
        self._hook = hook
        self._active: list[tuple[frozenset[str], str | None]] = []
        """Each active replay: the hosts it allows, and what it is (``openprogram exec
        --replay of …``), said when a recording inside it is refused a connection."""
        self._lock = threading.Lock()
        self._remove: Callable[[], None] | None = None
        self.refusals: list[ReplayConnectionRefusedError] = []
        """Every connection and datagram refused since the process started."""
        self.on_refusal: list[Callable[[], None]] = []
        """Called after each refusal is remembered (an exec process reports it at once: a process
        that ends with ``os._exit``, as a forkserver's worker does, runs no exit handler)."""

    @property
    def active(self) -> bool:
        return bool(self._active)

    def enter(
        self, allowed_hosts: Iterable[str] = (), *, by: str | None = None
    ) -> Callable[[], None]:
        """Refuse connections and datagrams from now on, except to ``allowed_hosts``, until
        the returned function is called (replays nest: a connection is allowed when every
        active replay allows it). ``by`` says which replay this is, for a refusal to name it
        when a block that records inside it is refused."""
        allowed = (normalized_hosts(allowed_hosts), by)
        with self._lock:
            self._active.append(allowed)
            if self._remove is None:
                self._remove = self._hook.add(self._check)
        left = False

        def leave() -> None:
            nonlocal left
            with self._lock:
                if left:
                    return
                left = True
                self._active.remove(allowed)
                if not self._active and self._remove is not None:
                    self._remove()
                    self._remove = None

        return leave

    def refusals_since(self, count: int) -> list[ReplayConnectionRefusedError]:
        with self._lock:
            return self.refusals[count:]

    def _check(self, host: str, port: int | None, name: str | None) -> None:
        with self._lock:
            active = list(self._active)
        refusing = [by for allowed, by in active if not is_allowed(allowed, host, port, name)]
        if not refusing:
            return
        error = ReplayConnectionRefusedError(
            host, port, _library(), name, conflict=_conflict(refusing[0])
        )
        with self._lock:
            self.refusals.append(error)
        for listener in list(self.on_refusal):
            listener()
        raise RecordReplayEscape(error)


REPLAY_GUARD = ReplayGuard()


def _conflict(replay: str | None) -> str | None:
    """When the innermost HTTP boundary records (a ``record_replay(mode="record")`` block, the
    fixture recording) inside the replay that refused: both of them, named."""
    inner = ACTIVATIONS.current
    if inner is None or not inner.records or inner.writer is None:
        return None
    outer = replay or "a replay"
    return (
        f"the recording into {inner.writer.path} runs inside {outer}, which refuses every "
        "connection its recording does not serve: record outside that replay"
    )


@dataclass(frozen=True)
class Connection:
    """One connection a process opened: where, resolved from which name, by which library."""

    host: str
    port: int | None
    name: str | None
    library: str

    def __str__(self) -> str:
        return connection_text(self.as_json())

    def as_json(self) -> dict[str, Any]:
        """The connection as a ``not_recorded`` row lists it."""
        entry: dict[str, Any] = {"host": self.host, "port": self.port, "library": self.library}
        if self.name and self.name != self.host:
            entry["name"] = self.name
        return entry


class ConnectionWatch:
    """Notes every internet connection the process opens, and every destination it sends a
    datagram to, between :meth:`start` and :meth:`stop` (threads and tasks included), each
    host, port and name once (a metrics client sends thousands); refuses none."""

    def __init__(self, hook: SocketHook = SOCKET_HOOK, *, seen_into: Path | None = None) -> None:
        self._hook = hook
        self._lock = threading.Lock()
        self._remove: Callable[[], None] | None = None
        self._noted: set[tuple[str, int | None, str | None]] = set()
        self.connections: list[Connection] = []
        self._seen_into = seen_into
        """The exchange folder each endpoint is written to as it is seen (None: nowhere)."""
        self._written: set[tuple[int, str, int | None]] = set()

    def start(self) -> None:
        if self._remove is None:
            self._remove = self._hook.add(self._note)

    def stop(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None

    def not_among(
        self, destinations: set[tuple[str, int]], allowed: Iterable[str] = ()
    ) -> list[Connection]:
        """The connections (one per host and port) to none of ``destinations`` (``(host, port)`` of
        the requests a boundary saw; a host name or its address) and not ``allowed``."""
        hosts = normalized_hosts(allowed)
        found: dict[tuple[str, int | None], Connection] = {}
        with self._lock:
            connections = list(self.connections)
        for connection in connections:
            names = {connection.host.lower(), (connection.name or "").lower()}
            if any((name, connection.port) in destinations for name in names if name):
                continue
            if is_allowed(hosts, connection.host, connection.port, connection.name):
                continue
            found.setdefault((connection.host, connection.port), connection)
        return list(found.values())

    def _note(self, host: str, port: int | None, name: str | None) -> None:
        if self._seen_into is not None:
            self._write_seen(host, port)
        with self._lock:
            if (host, port, name) in self._noted:
                return
            self._noted.add((host, port, name))
        connection = Connection(host, port, name, _library())
        with self._lock:
            self.connections.append(connection)

    def _write_seen(self, host: str, port: int | None) -> None:
        """Add ``host``:``port`` to this process's ``seen-<pid>.jsonl``, once per process (a
        forked child writes its own); one line, appended whole."""
        key = (os.getpid(), host, port)
        with self._lock:
            if key in self._written:
                return
            self._written.add(key)
        assert self._seen_into is not None
        line = json.dumps({"host": host, "port": port}).encode() + b"\n"
        try:
            fd = os.open(
                self._seen_into / f"{SEEN_PREFIX}{key[0]}.jsonl",
                os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC,
                0o600,
            )
        except OSError:
            return  # exec has gone, or its folder with it: nobody is left to tell
        try:
            os.write(fd, line)
        except OSError:
            pass
        finally:
            os.close(fd)


SEEN_PREFIX = "seen-"
"""The files a :class:`ConnectionWatch` writes the endpoints it saw to, ``seen-<pid>.jsonl``."""

_SEEN_LIMIT = 4 * 1024 * 1024
"""The most of one ``seen-<pid>.jsonl`` read (each line names one endpoint)."""


def python_saw(folder: Path) -> dict[int, set[tuple[str, int | None]]]:
    """The endpoints (host as given to ``connect``, port) each Python process of a command saw, by
    pid, from the ``seen-<pid>.jsonl`` files in ``folder`` (a damaged line or file is skipped)."""
    found: dict[int, set[tuple[str, int | None]]] = {}
    for path in sorted(folder.glob(f"{SEEN_PREFIX}*.jsonl")):
        try:
            pid = int(path.name.removeprefix(SEEN_PREFIX).removesuffix(".jsonl"))
            with path.open("rb") as file:
                text = file.read(_SEEN_LIMIT)
        except (OSError, ValueError):
            continue
        endpoints = found.setdefault(pid, set())
        for line in text.splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            port = entry.get("port") if isinstance(entry, dict) else None
            if isinstance(entry, dict) and isinstance(entry.get("host"), str):
                endpoints.add((entry["host"], port if type(port) is int else None))
    return found


def note_not_recorded(writer: RecordingWriter, connections: Iterable[Connection]) -> None:
    """Append a ``not_recorded`` row listing ``connections`` to ``writer``'s recording, so
    that ``status`` and ``show`` can name them; a recording whose header does not announce
    the row (an older openprogram created it) is left as it is."""
    row = not_recorded_row(connection.as_json() for connection in connections)
    if not row["connections"]:
        return
    try:
        writer.write_feature_row(row, NOT_RECORDED_FEATURE)
    except RecordingFileError:
        return  # the run's own report (stderr, the log, the pytest summary) still names them


def not_recorded_message(connections: Iterable[Connection | str]) -> str:
    """``2 connections were not recorded: …`` for ``connections``."""
    listed = [str(connection) for connection in connections]
    were = "1 connection was" if len(listed) == 1 else f"{len(listed)} connections were"
    return (
        f"{were} not recorded: {', '.join(listed)} — no boundary captures that client "
        "library, so a replay of this recording will refuse it (list the host in "
        "record_replay.allowed_hosts if it may stay live)"
    )


def _library() -> str:
    """The client library whose code is connecting, from the innermost frame out."""
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if not module.startswith(("openprogram.", "socket")):
            for library in _LIBRARIES:
                if module == library or module.startswith(library + "."):
                    return library
        frame = frame.f_back  # type: ignore[assignment]
    return "raw socket"
