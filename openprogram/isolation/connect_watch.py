"""Seeing every connection a command's processes open under ``openprogram exec --record``,
below Python too: grpcio's C core, uvloop, ctypes, and programs that are not Python at all
(``curl``, ``sh -c curl``, ``os.system``).

The command needs the real network under record, so it does not run in a namespace; and
reading its processes' sockets from ``/proc`` now and then misses a connection that opens
and closes between two looks. The kernel tells instead: before the command starts, its
process installs a seccomp filter (:mod:`~openprogram.isolation.seccomp_notify`) that turns
each ``connect``, and each ``sendto``/``sendmsg``/``sendmmsg`` that names a destination,
into a notification to exec. :class:`ConnectWatch` receives each one on a thread of its
own, reads the destination from the caller's memory (``/proc/<pid>/mem``, checked against
the notification still being valid), notes it with the pid and the process's name, and lets
the call through at once: nothing is ever refused, and the cost is one round trip to exec
per ``connect`` (``send`` on a connected socket is not stopped at all).

The listener reaches exec without a socket (sending a descriptor is a ``sendmsg``, which
the filter would stop before anyone could answer it): the command's process tells exec its
pid and the listener's number on a pipe, and exec takes a copy with ``pidfd_getfd`` — after
checking first, on another descriptor, that it may (a kernel that forbids tracing one's own
children refuses; the command then runs unwatched). A keeper process holds a second copy and
takes over the answers when exec stops watching or dies, for as long as a process of the
command lives (the kernel would fail their calls once no one holds the listener).

Where the kernel cannot notify (not Linux, another architecture, a kernel before 5.6, a
process tree already watched by another listener), the command runs as before and
:attr:`ConnectWatch.unwatched` says why. Setting ``no_new_privs`` (what an unprivileged
filter requires) means a set-user-id program the command starts (``sudo``) runs without its
privileges. Not seen: 32-bit programs, and ``io_uring``'s connects."""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import os
import select
import socket
import struct
import sys
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from openprogram.activation.connection_guard import (
    Connection,
    is_name_lookup,
    note_not_recorded,
    python_saw,
)
from openprogram.config.hosts import is_allowed, normalized_hosts
from openprogram.isolation.seccomp_notify import (
    Architecture,
    Listener,
    Notification,
    check_available,
    filter_program,
    install_filter,
    take_descriptor,
    this_architecture,
)
from openprogram.quiet_threads import start_quiet
from openprogram.recording.writer import writer_for

__all__ = [
    "ConnectWatch",
    "WatchedConnection",
    "call_addresses",
    "destination",
    "not_seen_by_python",
    "note_in_recording",
    "unwatched_message",
]

KEEPER = Path(__file__).with_name("seccomp_notify.py")
"""The keeper's script (see the module's docstring)."""

_KEEPERS: list[int] = []
"""The keepers this process started that it has not reaped yet."""
_KEEPERS_LOCK = threading.Lock()

_SOCKADDR_LIMIT = 128
"""The most of a socket address read (``struct sockaddr_storage``)."""
_MESSAGES_LIMIT = 64
"""The most of ``sendmmsg``'s messages read for their destinations."""
_MSGHDR = struct.Struct("=QI")
"""The start of ``struct msghdr``: ``msg_name``, ``msg_namelen``."""
_MMSGHDR_SIZE = 64
"""``struct mmsghdr`` on a 64-bit machine: a ``msghdr`` (56 bytes) and its length, padded."""


@dataclass(frozen=True)
class WatchedConnection:
    """A destination one process of the command connected or sent to."""

    pid: int
    host: str
    port: int
    process: str
    """The process's name (``/proc/<pid>/comm``: ``curl``, ``python3``), when it connected."""


def destination(address: bytes) -> tuple[str, int] | None:
    """The host and port of an internet socket address as the kernel takes it (``struct
    sockaddr_in`` or ``sockaddr_in6``); None for another family (``AF_UNIX``, netlink,
    ``AF_UNSPEC``) or an address too short to be one."""
    if len(address) < 2:
        return None
    family = int.from_bytes(address[:2], sys.byteorder)
    if family == socket.AF_INET and len(address) >= 8:
        port = int.from_bytes(address[2:4], "big")
        return str(ipaddress.IPv4Address(address[4:8])), port
    if family == socket.AF_INET6 and len(address) >= 24:
        port = int.from_bytes(address[2:4], "big")
        host = ipaddress.IPv6Address(address[8:24])
        return str(host.ipv4_mapped or host), port  # a mapped address reaches IPv4
    return None


class ConnectWatch:
    """Watches the connections of one command's processes (see the module's docstring).

    Use it around the command's run: ``with ConnectWatch() as watch: run_process(argv, env,
    before_exec=watch.before_exec)``; then :attr:`connections` holds what its processes
    connected and sent to (each pid, host and port once, in order) and :attr:`unwatched`
    why nothing was watched, if so."""

    def __init__(self) -> None:
        self.unwatched: str | None = None
        self._arch = this_architecture()
        self._program = b""
        self._lock = threading.Lock()
        self._seen: dict[tuple[int, str, int], WatchedConnection] = {}
        self._processes: dict[int, int] = {}
        """The process of each thread that called (grpcio connects from a thread of its own)."""
        self._ready = self._go = (-1, -1)
        self._wake = (-1, -1)
        self._standby = -1
        self._thread: threading.Thread | None = None
        self._stopping = False
        if self._arch is None:
            machine = os.uname().machine if hasattr(os, "uname") else "?"
            self.unwatched = (
                "seccomp notification is Linux's, on x86_64 or aarch64 "
                f"(this is {sys.platform} on {machine})"
            )
        else:
            try:
                check_available(self._arch)
            except OSError as error:
                self.unwatched = str(error.strerror or error)
            self._program = filter_program(self._arch)

    @property
    def connections(self) -> tuple[WatchedConnection, ...]:
        with self._lock:
            return tuple(self._seen.values())

    def __enter__(self) -> ConnectWatch:
        if self.unwatched is None:
            self._ready, self._go, self._wake = os.pipe(), os.pipe(), os.pipe()
            self._thread = threading.Thread(
                target=self._run, name="openprogram-connect-watch", daemon=True
            )
            # every signal to exec's main thread, whose wait for the command it must wake
            start_quiet(self._thread)
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def before_exec(self) -> None:
        """In the command's process, after fork, before it starts: install the filter and hand its
        listener over (see the module's docstring). Does nothing where the watch is unavailable."""
        if self._thread is None or self._arch is None:
            return
        ready, go = self._ready[1], self._go[0]
        os.write(ready, b"pid %d" % os.getpid())
        if os.read(go, 16) != b"go":
            return
        try:
            listener = install_filter(self._arch, self._program)
        except OSError as error:
            os.write(ready, b"error %d" % (error.errno or 0))
            return
        os.write(ready, b"fd %d" % listener)
        taken = os.read(go, 16)
        os.close(listener)
        if taken != b"ok":
            # exec could not take it: no one will answer this process's connections
            raise OSError(f"exec could not take the connection watch's listener: {taken!r}")

    def stop(self) -> None:
        """Stop watching (the keeper answers from now on); idempotent."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stopping = True
        for fd in (self._ready[1], self._go[1], self._wake[1]):
            with contextlib.suppress(OSError):
                os.close(fd)  # wakes the thread wherever it waits
        thread.join()
        for fd in (self._ready[0], self._go[0], self._wake[0]):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._reap_keeper()

    # --- the watch's thread --------------------------------------------------------------

    def _run(self) -> None:
        listener_fd = self._take_listener()
        if listener_fd is None:
            return
        try:
            self._answer(Listener(listener_fd))
        finally:
            with contextlib.suppress(OSError):
                os.close(self._standby)  # the keeper answers from now on
            os.close(listener_fd)

    def _take_listener(self) -> int | None:
        """The handshake with :meth:`before_exec`: the listener's copy, or None (and
        :attr:`unwatched` says why)."""
        assert self._arch is not None
        said = os.read(self._ready[0], 64)
        if not said.startswith(b"pid "):
            return None  # the command never started
        pid = int(said[4:])
        try:
            pidfd = os.pidfd_open(pid)
        except OSError as error:
            self.unwatched = f"pidfd_open: {error.strerror}"
            os.write(self._go[1], b"no")
            return None
        try:
            try:  # may exec take the command's descriptors? (one it does not need)
                os.close(take_descriptor(self._arch, pidfd, self._ready[1]))
            except OSError as error:
                self.unwatched = (
                    f"the kernel does not let exec take its command's descriptors ({error}; "
                    "is tracing restricted here, kernel.yama.ptrace_scope?)"
                )
                os.write(self._go[1], b"no")
                return None
            os.write(self._go[1], b"go")
            said = os.read(self._ready[0], 256)
            if not said.startswith(b"fd "):
                self.unwatched = _not_installed(said)
                return None
            try:
                listener = take_descriptor(self._arch, pidfd, int(said[3:]))
            except OSError as error:
                os.write(self._go[1], b"no: %s" % str(error).encode())
                self.unwatched = f"exec could not take the listener ({error})"
                return None
            os.write(self._go[1], b"ok")  # the command starts now
            self._start_keeper(listener)
            return listener
        finally:
            os.close(pidfd)

    def _start_keeper(self, listener: int) -> None:
        """Start the process that answers in exec's stead (see the module's docstring)."""
        standby, self._standby = os.pipe()
        try:
            keeper = os.posix_spawn(
                sys.executable,
                [sys.executable, "-I", "-S", str(KEEPER), "3", "4"],
                {},
                file_actions=[
                    (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
                    (os.POSIX_SPAWN_DUP2, listener, 3),
                    (os.POSIX_SPAWN_DUP2, standby, 4),
                ],
                setsid=True,
                setsigmask=(),  # not the watch thread's, which blocks every signal
            )
        except OSError:
            pass  # exec answers alone: a command that outlives exec's watch then fails
        else:
            with _KEEPERS_LOCK:
                _KEEPERS.append(keeper)
        finally:
            os.close(standby)

    @staticmethod
    def _reap_keeper() -> None:
        """Reap the keepers (of this watch and earlier ones) that have ended; one still
        answering is reaped by a later watch, or by nobody when exec ends first."""
        with _KEEPERS_LOCK:
            for keeper in list(_KEEPERS):
                try:
                    done, _ = os.waitpid(keeper, os.WNOHANG)
                except ChildProcessError:
                    done = keeper
                if done == keeper:
                    _KEEPERS.remove(keeper)

    def _answer(self, listener: Listener) -> None:
        poller = select.poll()
        poller.register(listener.fd, select.POLLIN)
        poller.register(self._wake[0], select.POLLIN)
        while not self._stopping:
            for fd, events in poller.poll():
                if fd == self._wake[0]:
                    return
                if events & select.POLLIN:
                    self._one(listener)
                elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                    return  # no process of the command is left

    def _one(self, listener: Listener) -> None:
        notification = listener.receive()
        if notification is None:
            return
        try:
            self._note(listener, notification)
        except Exception:  # whatever went wrong, the call goes on
            pass
        finally:
            listener.let_through(notification)

    def _note(self, listener: Listener, notification: Notification) -> None:
        """Note where the waiting call connects or sends to, read from its process's memory
        (each process, host and port once, with the process's name then)."""
        assert self._arch is not None
        thread = notification.pid  # the calling thread (a process's first thread: its pid)
        try:
            memory = os.open(f"/proc/{thread}/mem", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not listener.still_waiting(notification):
                return  # the pid may be another process's by now
            addresses = call_addresses(self._arch, notification, memory)
            places = [where for where in map(destination, addresses) if where is not None]
            if not places or not listener.still_waiting(notification):
                return
            pid = self._process_of(thread)
            new = [(host, port) for host, port in places if (pid, host, port) not in self._seen]
            if not new:
                return
            name = _process_name(pid)
        finally:
            os.close(memory)
        with self._lock:
            for host, port in new:
                self._seen.setdefault((pid, host, port), WatchedConnection(pid, host, port, name))

    def _process_of(self, thread: int) -> int:
        """The process (thread group) ``thread`` belongs to, while it waits in the call."""
        pid = self._processes.get(thread)
        if pid is None:
            pid = _thread_group(thread)
            self._processes[thread] = pid
        return pid


def unwatched_message(reason: str) -> str:
    """What exec says at the end of a record run the kernel could not watch."""
    return f"connections opened outside Python were not watched here: {reason}"


def not_seen_by_python(
    connections: Iterable[WatchedConnection],
    folder: Path | None,
    *,
    allowed: Iterable[str] = (),
    skip: Iterable[tuple[str, int]] = (),
    listed: Iterable[str] = (),
) -> list[Connection]:
    """The connections of ``connections`` no Python hook saw, each host and port once, as a
    ``not_recorded`` row lists them, their library saying who opened them: ``opened outside Python,
    pid 12 python3`` for a Python process of the command (it wrote its handshake or what it saw in
    the exchange ``folder``), ``curl, a process that is not Python`` for another; with no ``folder``
    (a command run through exec's proxy, whose processes have no Python hook), ``node, not through
    exec's proxy``. Left out: what a Python process's hook saw (``seen-<pid>.jsonl`` in ``folder``),
    a name lookup (port 53 of a system resolver), the ``allowed`` hosts, the ``skip`` endpoints
    (exec's own proxy) and a host and port one of the ``listed`` lines names already (a Python
    process's own report of a connection no boundary captured)."""
    saw = python_saw(folder) if folder is not None else {}
    pythons = set(saw) | (_handshakes(folder) if folder is not None else set())
    hosts = normalized_hosts(allowed)
    skipped = {(_spelling(host), port) for host, port in skip}
    named = tuple(listed)
    found: dict[tuple[str, int], Connection] = {}
    for connection in connections:
        host, port = connection.host, connection.port
        if (host, port) in found or (_spelling(host), port) in skipped:
            continue
        if any(
            line.startswith(f"{host}:{port} (") or f"({host}):{port} (" in line for line in named
        ):
            continue
        if is_name_lookup(host, port) or is_allowed(hosts, host, port, None):
            continue
        if _python_saw(saw.get(connection.pid, set()), host, port):
            continue
        if folder is None:
            who = f"{connection.process}, not through exec's proxy"
        elif connection.pid in pythons:
            who = f"opened outside Python, pid {connection.pid} {connection.process}"
        elif connection.process.startswith("python"):
            who = f"{connection.process}, a Python process record/replay is not active in"
        else:
            who = f"{connection.process}, a process that is not Python"
        found[(host, port)] = Connection(host, port, None, who)
    return list(found.values())


def note_in_recording(path: Path | None, connections: Sequence[Connection]) -> None:
    """Add ``connections`` (what :func:`not_seen_by_python` found) to the recording at
    ``path`` as a ``not_recorded`` row, so that ``status`` and ``show`` name them too."""
    if path is not None and connections:
        note_not_recorded(writer_for(path), connections)


def _python_saw(endpoints: set[tuple[str, int | None]], host: str, port: int) -> bool:
    """Whether a Python hook saw ``host``:``port`` (an address) among ``endpoints`` (hosts as
    given to ``connect``: a name given there — resolved by Python beneath the hook — matches
    any address at its port)."""
    address = _address(host)
    for seen, seen_port in endpoints:
        if seen_port != port:
            continue
        try:
            if _address(seen) == address:
                return True
        except ValueError:
            return True  # a name: the address it was resolved to is not known here
    return False


def _address(host: str) -> str:
    """``host``, an address, in one spelling (an IPv4-mapped IPv6 address as the IPv4
    address, a zone dropped); raises ValueError for a name."""
    address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


def _spelling(host: str) -> str:
    """``host`` in one spelling: an address as :func:`_address` gives it, a name in lower case."""
    try:
        return _address(host)
    except ValueError:
        return host.lower()


def _handshakes(folder: Path) -> set[int]:
    """The pids of the Python processes that activated record/replay (``process-<pid>``)."""
    found = set()
    for path in folder.glob("process-*.json"):
        with contextlib.suppress(ValueError):
            found.add(int(path.stem.removeprefix("process-")))
    return found


def _not_installed(said: bytes) -> str:
    """Why the command's process could not install the filter, from what it said."""
    try:
        number = int(said.removeprefix(b"error "))
    except ValueError:
        return "the command's process ended before it installed the filter"
    if number == errno.EBUSY:
        return (
            "its processes are watched by another seccomp listener already (an enclosing "
            "openprogram exec --record, or a container's own)"
        )
    return f"the command's process could not install the filter ({os.strerror(number)})"


def call_addresses(arch: Architecture, notification: Notification, memory: int) -> list[bytes]:
    """The socket addresses a notified call names (none for a ``sendmsg`` on a connected socket)."""
    arguments = notification.arguments
    number = notification.number

    def read(address: int, size: int) -> bytes:
        if address == 0 or size <= 0:
            return b""
        return os.pread(memory, min(size, _SOCKADDR_LIMIT), address)

    if number == arch.connect:
        return [read(arguments[1], arguments[2])]
    if number == arch.sendto:
        return [read(arguments[4], arguments[5])]
    if number == arch.sendmsg:
        name, length = _MSGHDR.unpack(os.pread(memory, _MSGHDR.size, arguments[1]))
        return [read(name, length)]
    if number == arch.sendmmsg:
        count = min(arguments[2], _MESSAGES_LIMIT)
        block = os.pread(memory, count * _MMSGHDR_SIZE, arguments[1])
        found = []
        for start in range(0, len(block) - _MSGHDR.size + 1, _MMSGHDR_SIZE):
            name, length = _MSGHDR.unpack_from(block, start)
            found.append(read(name, length))
        return found
    return []


def _thread_group(thread: int) -> int:
    """The pid of the process ``thread`` is a thread of (``Tgid`` in its status)."""
    try:
        with open(f"/proc/{thread}/status", "rb") as file:
            status = file.read(4096)
    except OSError:
        return thread
    for line in status.splitlines():
        if line.startswith(b"Tgid:"):
            with contextlib.suppress(ValueError):
                return int(line.split()[1])
    return thread


def _process_name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", "rb") as file:
            return file.read(64).decode("utf-8", "replace").strip() or f"pid {pid}"
    except OSError:
        return f"pid {pid}"
