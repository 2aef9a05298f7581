"""``--openprogram-block-network``: a test that opens a network connection fails, saying where.

:class:`NetworkBlock` patches ``socket.socket.connect`` and ``connect_ex`` for the whole run
(every thread, every library: httpx, the official SDKs, asyncio, a database driver all end
there). A connection of an internet socket (``AF_INET``, ``AF_INET6``) to a host that is not
this machine and not allowed is refused *before* the real ``connect`` runs: nothing is sent,
and :class:`NetworkBlockedError` — one line naming the test, the host and the port — is raised
inside a :class:`~openprogram.recording.mismatch.RecordReplayEscape`, so no SDK retry loop
catches it, retries with back-off and rewraps it. The plugin also remembers every refusal and
fails the test with the first one however the code under test handled it.

Always allowed: loopback (``127.0.0.0/8``, ``::1``, ``localhost``) and sockets that are not
internet sockets (``AF_UNIX``). ``allowed_hosts`` are host names or addresses, compared
case-insensitively with the host given to ``connect``; a host name a program resolves first
(``socket.getaddrinfo``, as ``socket.create_connection``, httpx and asyncio do) allows the
addresses it resolved to as well. Nothing else is changed: a lookup is never refused.

:meth:`NetworkBlock.lifted` lifts the block for a block of code (the fixture, for a test that
records or runs live).
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from openprogram.errors import NetworkBlockedError
from openprogram.recording.mismatch import RecordReplayEscape

__all__ = ["NetworkBlock", "is_loopback_host"]

_INTERNET = (socket.AF_INET, socket.AF_INET6)


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` (as given to ``connect``) is this machine."""
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


class NetworkBlock:
    """Refuses connections to hosts other than this machine and ``allowed_hosts`` while
    installed (see the module's docstring)."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed_hosts = frozenset(host.strip().lower() for host in allowed_hosts if host)
        self.test: str | None = None
        """The node id of the test running now, named in the refusal."""
        self.refusals: list[NetworkBlockedError] = []
        """Every refusal since the test started (the plugin fails the test with the first)."""
        self._allowed_addresses: set[str] = set()
        self._resolved_names: dict[str, str] = {}
        self._lifted = 0
        self._lock = threading.Lock()
        self._restore: list[Callable[[], None]] = []

    @contextmanager
    def lifted(self) -> Iterator[None]:
        """Connections go through unchecked inside the block."""
        with self._lock:
            self._lifted += 1
        try:
            yield
        finally:
            with self._lock:
                self._lifted -= 1

    def check(self, family: int, address: Any) -> None:
        """Raise (inside a ``RecordReplayEscape``) if a socket of ``family`` may not connect
        to ``address``; remember the refusal."""
        if self._lifted or family not in _INTERNET:
            return
        if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
            return  # not an address connect() would take for an internet socket
        host = address[0]
        name = host.lower()
        if is_loopback_host(name) or name in self.allowed_hosts:
            return
        with self._lock:
            if name in self._allowed_addresses:
                return
            resolved_from = self._resolved_names.get(name)
        port = address[1] if len(address) > 1 else None
        error = NetworkBlockedError(self.test, host, port, resolved_from)
        self.refusals.append(error)

        raise RecordReplayEscape(error)

    def check_socket(self, sock: socket.socket, address: Any) -> None:
        """:meth:`check` for ``sock``, which is closed when refused: the refusal is not an
        ``OSError``, so ``socket.create_connection`` and its like would leave it open."""
        try:
            self.check(sock.family, address)
        except BaseException:
            sock.close()
            raise

    def install(self) -> None:
        """Patch ``socket`` for the whole process; :meth:`uninstall` puts it back."""
        if self._restore:
            return
        block = self
        real_connect = socket.socket.connect
        real_connect_ex = socket.socket.connect_ex
        real_getaddrinfo = socket.getaddrinfo

        def connect(self: socket.socket, address: Any) -> None:
            block.check_socket(self, address)
            real_connect(self, address)

        def connect_ex(self: socket.socket, address: Any) -> int:
            block.check_socket(self, address)
            return real_connect_ex(self, address)

        def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            found = real_getaddrinfo(host, *args, **kwargs)
            block._learn(host, found)
            return found

        socket.socket.connect = connect  # type: ignore[method-assign, assignment]
        socket.socket.connect_ex = connect_ex  # type: ignore[method-assign, assignment]
        socket.getaddrinfo = getaddrinfo

        def restore() -> None:
            socket.socket.connect = real_connect  # type: ignore[method-assign]
            socket.socket.connect_ex = real_connect_ex  # type: ignore[method-assign]
            socket.getaddrinfo = real_getaddrinfo

        self._restore.append(restore)

    def uninstall(self) -> None:
        while self._restore:
            self._restore.pop()()

    def _learn(self, host: Any, found: Any) -> None:
        """Remember what a host name resolved to: an allowed name allows its addresses, and a
        refusal names the host a program asked for."""
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        if not isinstance(host, str) or not isinstance(found, list):
            return
        name = host.lower()
        allowed = name in self.allowed_hosts
        with self._lock:
            for entry in found:
                try:
                    address = str(entry[4][0]).lower()
                except (IndexError, TypeError):
                    continue
                if address == name:
                    continue
                if allowed:
                    self._allowed_addresses.add(address)
                self._resolved_names.setdefault(address, host)
