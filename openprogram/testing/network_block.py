"""``--openprogram-block-network``: a test that opens a network connection fails, saying where.

:class:`NetworkBlock` is a check on the process's one socket hook
(:mod:`openprogram.activation.connection_guard`), for the whole run: every thread, every
library — httpx, the official SDKs, asyncio, a database driver — ends there. A connection of
an internet socket (``AF_INET``, ``AF_INET6``) to a host that is not this machine and not
allowed is refused *before* the real ``connect`` runs: nothing is sent, and
:class:`NetworkBlockedError` — one line naming the test, the host and the port — is raised
inside a :class:`~openprogram.recording.mismatch.RecordReplayEscape`, so no SDK retry loop
catches it, retries with back-off and rewraps it. The plugin also remembers every refusal
and fails the test with the first one however the code under test handled it.

Always allowed: loopback (``127.0.0.0/8``, ``::1``, ``localhost``) and sockets that are not
internet sockets (``AF_UNIX``). ``allowed_hosts`` are host names or addresses, compared
case-insensitively with the host given to ``connect``; a host name a program resolves first
(``socket.getaddrinfo``, as ``socket.create_connection``, httpx and asyncio do) allows the
addresses it resolved to as well. Nothing else is changed: a lookup is never refused.

:meth:`NetworkBlock.lifted` lifts the block for a block of code (the fixture, for a test that
records or runs live); :meth:`NetworkBlock.allowing` lets a few more hosts through for one
(the ``drift`` check, to the hosts of the calls it sends live)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from openprogram.activation.connection_guard import INTERNET_FAMILIES, SOCKET_HOOK, is_loopback_host
from openprogram.config.hosts import is_allowed, normalized_hosts
from openprogram.errors import NetworkBlockedError
from openprogram.recording.mismatch import RecordReplayEscape

__all__ = ["NetworkBlock", "is_loopback_host"]


class NetworkBlock:
    """Refuses connections to hosts other than this machine and ``allowed_hosts`` while
    installed (see the module's docstring)."""

    def __init__(self, allowed_hosts: Iterable[str] = ()) -> None:
        self.allowed_hosts = normalized_hosts(allowed_hosts)
        self.test: str | None = None
        """The node id of the test running now, named in the refusal."""
        self.refusals: list[NetworkBlockedError] = []
        """Every refusal since the test started (the plugin fails the test with the first)."""
        self._lifted = 0
        self._also_allowed: tuple[frozenset[str], ...] = ()
        self._lock = threading.Lock()
        self._remove: Callable[[], None] | None = None

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

    @contextmanager
    def allowing(self, hosts: Iterable[str]) -> Iterator[None]:
        """Connections to ``hosts`` (``host`` or ``host:port``) go through too inside the block."""
        allowed = normalized_hosts(hosts)
        with self._lock:
            self._also_allowed = (*self._also_allowed, allowed)
        try:
            yield
        finally:
            with self._lock:
                others = list(self._also_allowed)
                others.remove(allowed)
                self._also_allowed = tuple(others)

    def check(self, family: int, address: object) -> None:
        """Raise (inside a ``RecordReplayEscape``) if a socket of ``family`` may not connect
        to ``address``; remember the refusal."""
        if family not in INTERNET_FAMILIES or not isinstance(address, tuple) or not address:
            return
        host, port = address[0], address[1] if len(address) > 1 else None
        if isinstance(host, str):
            self._check(host, port if isinstance(port, int) else None, None)

    def _learn(self, host: object, found: object) -> None:
        SOCKET_HOOK.learn(host, found)

    def _check(self, host: str, port: int | None, name: str | None) -> None:
        if name is None:
            name = SOCKET_HOOK.resolved_name(host)
        if self._lifted or is_loopback_host(host):
            return
        if is_allowed(self.allowed_hosts, host, port, name):
            return
        if any(is_allowed(hosts, host, port, name) for hosts in self._also_allowed):
            return
        error = NetworkBlockedError(self.test, host, port, name)
        self.refusals.append(error)
        raise RecordReplayEscape(error)

    def install(self) -> None:
        """Check every connection of the process from now on; :meth:`uninstall` stops."""
        if self._remove is None:
            self._remove = SOCKET_HOOK.add(self._check)

    def uninstall(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None
