"""The bridge: runs a command in a loopback-only network namespace of its own.

``python -m openprogram.isolation.bridge [--relay SOCKET] [--bridge HOST:PORT ...]
[--report FILE] -- COMMAND...`` (``Relay.wrap`` builds this line, and starts it faster):

1. decides where each bridged endpoint is listened for inside: ``localhost`` at 127.0.0.1
   and ::1, an address at itself, a name at an address of its own that the bridge's DNS
   responder gives it (:mod:`~openprogram.isolation.names`; nothing is resolved here);
2. makes the namespace (:mod:`~openprogram.isolation.namespace`: its own user and network
   namespace, the user's own uid and gid, ``lo`` up, every address local) — or says in one
   line why it cannot and exits 2, never running the command unisolated;
3. opens the packet observer on ``lo`` (:mod:`~openprogram.isolation.packets`) and listens on
   each bridged endpoint at the same address inside: a connection accepted there is passed
   to the relay, which connects out (only to what it was told to bridge) and hands the
   connected socket back; the bridge passes the bytes both ways;
4. starts the command (it execs, holding no capability in the namespace: its uid there is
   not 0 — unless the user is root), passes SIGINT, SIGTERM and SIGHUP on (not those a
   terminal already sent to the whole foreground group), and waits for it;
5. reports what the namespace stopped — to the relay, to ``--report FILE``, or else on
   stderr — and exits with the command's status (128 + the signal that killed it; 127 when
   the command is not found, 126 when it cannot be run).

``--check`` makes the namespace, observer and listeners, then exits 0 (or 2 with the reason):
:func:`~openprogram.isolation.launch.unavailable_reason` runs it.

Only the standard library is used, and little of it (no asyncio, argparse or typing): the
bridge is on every isolated command's start-up path."""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading

from openprogram.isolation import wire
from openprogram.isolation.names import NameResponder, nameservers, synthetic_address
from openprogram.isolation.namespace import NamespaceUnavailable, enter_isolated_namespace
from openprogram.isolation.packets import StopObserver, open_loopback_packet_socket

TYPE_CHECKING = False  # typing itself is not loaded: it costs more than the bridge's work
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import NoReturn

__all__ = ["main", "run"]

_ListenOn = list[tuple[tuple[str, int], list[tuple[int, str]]]]
"""Each bridged endpoint, and the (family, address) pairs it is listened for at inside."""

_PREFIX = "openprogram isolation"
_USAGE = (
    f"{_PREFIX}: usage: python -m openprogram.isolation.bridge [--relay SOCKET] "
    "[--bridge HOST:PORT]... [--report FILE] [--check] -- COMMAND..."
)
_FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_SI_KERNEL = 0x80
_CHUNK = 64 * 1024
_RELAY_TIMEOUT = 30.0
_IP_FREEBIND = 15
_IPV6_FREEBIND = 78


class _Arguments:
    def __init__(self) -> None:
        self.relay: str | None = None
        self.report: str | None = None
        self.check = False
        self.bridged: list[tuple[str, int]] = []
        self.command: list[str] = []


class _UsageError(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    blocked = {*_FORWARDED, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, blocked)  # threads started below inherit it
    try:
        arguments = _parse(list(sys.argv[1:] if argv is None else argv))
    except _UsageError as error:
        sys.stderr.write(f"{_PREFIX}: {error}\n")
        return 2
    try:
        enter_isolated_namespace()
        observer = StopObserver(open_loopback_packet_socket())
        listen_on, names = _addresses(arguments.bridged)
        listeners = _listen(listen_on)
        responder = NameResponder(names) if names else None
        answering = responder.listen(nameservers()) if responder is not None else []
    except NamespaceUnavailable as error:
        sys.stderr.write(f"{_PREFIX}: cannot isolate the command: {error.reason}\n")
        return 2
    except OSError as error:
        sys.stderr.write(f"{_PREFIX}: cannot isolate the command: {error}\n")
        return 2
    if arguments.check:
        return 0
    network = _Network(observer, listeners, arguments.relay, (responder, answering))
    network.start()
    try:
        pid = os.posix_spawnp(
            arguments.command[0],
            arguments.command,
            os.environ,
            setsigmask=(),
            setsigdef=(signal.SIGPIPE, signal.SIGXFSZ, *_FORWARDED),
        )
    except FileNotFoundError:
        sys.stderr.write(f"{_PREFIX}: {arguments.command[0]}: command not found\n")
        return 127
    except OSError as error:
        sys.stderr.write(f"{_PREFIX}: {arguments.command[0]}: {error.strerror}\n")
        return 126
    status = _wait(pid, blocked)
    _report(network.finish(), arguments)
    return status


def _parse(words: list[str]) -> _Arguments:
    arguments = _Arguments()
    while words:
        word = words.pop(0)
        if word == "--":
            arguments.command = words
            break
        if word == "--check":
            arguments.check = True
            continue
        if word not in ("--relay", "--bridge", "--report") or not words:
            raise _UsageError(f"{word!r} is not understood here\n{_USAGE}")
        value = words.pop(0)
        if word == "--relay":
            arguments.relay = value
        elif word == "--report":
            arguments.report = value
        else:
            try:
                arguments.bridged.append(wire.parse_endpoint(value))
            except ValueError as error:
                raise _UsageError(f"--bridge {error}") from None
    if not arguments.command and not arguments.check:
        raise _UsageError(f"no command given\n{_USAGE}")
    return arguments


def _addresses(bridged: list[tuple[str, int]]) -> tuple[_ListenOn, dict[str, str]]:
    """Where each bridged endpoint is listened for inside, and the address of each name."""
    names: dict[str, str] = {}
    listen_on: _ListenOn = []
    for host, port in bridged:
        addresses: list[tuple[int, str]]
        if host == "localhost":
            addresses = [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")]
        elif (family := _literal_family(host)) is not None:
            addresses = [(family, host)]
        else:
            key = host.lower().rstrip(".")
            names.setdefault(key, synthetic_address(len(names)))
            addresses = [(socket.AF_INET, names[key])]
        listen_on.append(((host, port), addresses))
    return listen_on, names


def _literal_family(host: str) -> int | None:
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        return family
    return None


def _listen(listen_on: _ListenOn) -> dict[socket.socket, tuple[str, int]]:
    """A listening socket inside for each address of each bridged endpoint."""
    listeners: dict[socket.socket, tuple[str, int]] = {}
    taken: set[tuple[str, int]] = set()
    for endpoint, addresses in listen_on:
        for family, address in addresses:
            if (address, endpoint[1]) in taken:
                continue  # "localhost" and "127.0.0.1" at one port: the first one serves
            listener = socket.socket(family, socket.SOCK_STREAM)
            try:
                if family == socket.AF_INET6:
                    listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
                    listener.setsockopt(socket.IPPROTO_IPV6, _IPV6_FREEBIND, 1)
                else:
                    listener.setsockopt(socket.IPPROTO_IP, _IP_FREEBIND, 1)
                listener.bind((address, endpoint[1]))
                listener.listen(128)
                listener.setblocking(False)
            except OSError as error:
                listener.close()
                if family == socket.AF_INET6 and endpoint[0] == "localhost":
                    continue  # no IPv6 in this kernel: 127.0.0.1 serves localhost
                where = wire.format_endpoint(address, endpoint[1])
                raise OSError(
                    error.errno, f"cannot listen on {where} inside: {error.strerror}"
                ) from None
            taken.add((address, endpoint[1]))
            listeners[listener] = endpoint
    return listeners


class _Network:
    """One thread: accepts on the bridged endpoints and reads the packet observer."""

    def __init__(
        self,
        observer: StopObserver,
        listeners: dict[socket.socket, tuple[str, int]],
        relay: str | None,
        names: tuple[NameResponder | None, list[socket.socket]],
    ) -> None:
        self._observer = observer
        self._responder, self._answering = names
        self._listeners = listeners
        self._relay = relay
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="bridge-network", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def finish(self) -> tuple[str, ...]:
        """Read the packets still waiting, and say what the namespace stopped (the thread is
        left to end with the process: waiting for it to wake costs a busy machine ms)."""
        with self._lock:
            self._observer.read_available(limit=100_000)
            lookups = self._responder.stopped() if self._responder is not None else ()
            return tuple(dict.fromkeys((*self._observer.stopped(), *lookups)))

    def _run(self) -> None:
        # select.poll, not selectors: one module less on every isolated command's start
        poll = select.poll()
        for descriptor in (
            self._observer.fileno(),
            *(listener.fileno() for listener in self._listeners),
            *(answer.fileno() for answer in self._answering),
        ):
            poll.register(descriptor, select.POLLIN)
        answering = {answer.fileno(): answer for answer in self._answering}
        listeners = {listener.fileno(): listener for listener in self._listeners}
        while True:
            for descriptor, _ in poll.poll():
                if descriptor == self._observer.fileno():
                    with self._lock:
                        self._observer.read_available()
                elif descriptor in answering and self._responder is not None:
                    with self._lock:
                        self._responder.answer_waiting(answering[descriptor])
                elif descriptor in listeners:
                    self._accept(listeners[descriptor])

    def _accept(self, listener: socket.socket) -> None:
        try:
            inside, _ = listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        endpoint = self._listeners[listener]
        threading.Thread(
            target=_serve, args=(inside, endpoint, self._relay), name="bridge-pass", daemon=True
        ).start()


def _serve(inside: socket.socket, endpoint: tuple[str, int], relay: str | None) -> None:
    inside.setblocking(True)
    outside = _connect_through(relay, endpoint) if relay is not None else None
    if outside is None:
        inside.close()  # the relay refused, is gone, or there is none: the client sees EOF
        return
    for side in (inside, outside):  # pass each write on as it came, never hold it back
        try:
            side.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            continue
    back = threading.Thread(target=_pass, args=(outside, inside), daemon=True)
    back.start()
    _pass(inside, outside)
    back.join()
    inside.close()
    outside.close()


def _connect_through(relay: str, endpoint: tuple[str, int]) -> socket.socket | None:
    """The relay's connected socket for ``endpoint``, or None where it refused or failed."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as request:
            request.settimeout(_RELAY_TIMEOUT)
            request.connect(relay)
            request.sendall(f"CONNECT {endpoint[0]} {endpoint[1]}\n".encode("ascii"))
            answer, descriptors, _, _ = socket.recv_fds(request, wire.MAX_LINE, 1)
    except (OSError, UnicodeEncodeError):
        return None
    if not answer.startswith(b"OK") or not descriptors:
        for descriptor in descriptors:
            os.close(descriptor)
        return None
    outside = socket.socket(fileno=descriptors[0])
    outside.setblocking(True)
    return outside


def _pass(source: socket.socket, destination: socket.socket) -> None:
    buffer = bytearray(_CHUNK)
    try:
        while size := source.recv_into(buffer):
            destination.sendall(memoryview(buffer)[:size])
        destination.shutdown(socket.SHUT_WR)
    except OSError:
        for side in (source, destination):
            try:
                side.shutdown(socket.SHUT_RDWR)
            except OSError:
                continue


def _wait(pid: int, blocked: set[signal.Signals]) -> int:
    """Wait for the command, passing on the signals sent to the bridge alone."""
    while True:
        received = signal.sigwaitinfo(blocked)
        if received.si_signo != signal.SIGCHLD:
            if received.si_code != _SI_KERNEL:  # a terminal's signal reached the command too
                try:
                    os.kill(pid, received.si_signo)
                except ProcessLookupError:
                    continue  # it has just ended: its SIGCHLD is waiting
            continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            return 128 - code if code < 0 else code


def _report(stopped: tuple[str, ...], arguments: _Arguments) -> None:
    if not stopped:
        return
    if arguments.relay is not None and _send_report(arguments.relay, stopped):
        return
    if arguments.report is not None:
        try:
            with open(arguments.report, "a", encoding="utf-8") as file:
                file.writelines(f"{line}\n" for line in stopped)
        except OSError:
            pass
        else:
            return
    for line in stopped:
        sys.stderr.write(f"{_PREFIX}: stopped {line}\n")


def _send_report(relay: str, stopped: tuple[str, ...]) -> bool:
    lines = stopped[: wire.MAX_STOPPED]
    message = "".join([f"STOPPED {len(lines)}\n", *(f"{line}\n" for line in lines)])
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(5)
            connection.connect(relay)
            connection.sendall(message.encode("ascii", "backslashreplace"))
            return wire.read_line(connection) == "OK"
    except OSError:
        return False


def run() -> NoReturn:
    """Run :func:`main` and end the process at once with its status: nothing of the bridge's
    needs Python's orderly shutdown (its threads are daemons; its streams are flushed here)."""
    status = main()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            continue
    os._exit(status)


if __name__ == "__main__":
    run()
