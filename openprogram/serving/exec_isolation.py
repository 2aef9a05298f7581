"""Whether ``openprogram exec`` runs its command in a loopback-only network namespace, and
what it bridges into it (:mod:`openprogram.isolation` makes the namespace and the bridge).

**When.** ``--isolate`` always (refused before anything runs where no namespace can be
made); ``--no-isolate`` never; otherwise under replay, and when blocked, wherever
:func:`openprogram.isolation.unavailable_reason` says a namespace can be made — elsewhere
the command runs as it would without, and :func:`isolation_for` returns the reason so that
exec says in one line that replay is enforced for Python only there. Under record a
command is isolated only when asked: recording needs the network.

**What is bridged** (:func:`bridged_endpoints`): each ``allowed_hosts`` and
``http_passthrough_hosts`` entry of the plan, and the recording proxy's port when the command runs
through it. An entry with a port (``127.0.0.1:5432``, ``db.internal:5432``) is that endpoint. A bare
loopback host (``localhost``, ``127.0.0.1``, ``::1``) stands for every TCP port listening at start
on that address or on every address (read from ``/proc/net/tcp`` and ``/proc/net/tcp6``): a service
started later, or on another port, must be listed with its port. A bare host that is not loopback
stands for its web ports, 443 and 80. Nothing else gets out of the namespace.

**When it is known** (:func:`probe_early`): whether a namespace can be made here is asked
once per process by running the bridge (tens of milliseconds); exec asks in a thread as it
starts, while it imports what runs the command, so that the answer costs no time of its own.

**What was stopped** (:func:`stopped_problem`): the connections the namespace refused
— a child binary's, a C extension's, a datagram — become a problem of the run, so that a
command that exited 0 makes exec exit 1."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from openprogram import isolation
from openprogram.errors import ExecSetupError
from openprogram.isolation import Endpoint
from openprogram.serving.routes import VENDORS

if TYPE_CHECKING:
    from openprogram.activation.plan import PlanMode

__all__ = [
    "WEB_PORTS",
    "bridged_endpoints",
    "isolation_for",
    "listening_ports",
    "probe_early",
    "refuse_where_unavailable",
    "stopped_problem",
]

WEB_PORTS = (443, 80)
"""What a bare host that is not loopback stands for: its HTTPS and HTTP ports."""
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
_LISTEN = "0A"
"""The state of a listening socket in ``/proc/net/tcp``."""
_PROC_TCP = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


_early: list[threading.Thread] = []


def probe_early() -> None:
    """Start asking whether a namespace can be made here, in a thread: the answer is then
    waited for where it is needed. (Light to import: the CLI calls it first.)"""
    if not _early:
        thread = threading.Thread(
            target=isolation.unavailable_reason, name="openprogram-isolation-probe", daemon=True
        )
        _early.append(thread)
        thread.start()


def _unavailable_reason() -> str | None:
    for thread in _early:
        thread.join()  # the early answer, rather than a second probe beside it
    return isolation.unavailable_reason()


def isolation_for(isolate: bool | None, mode: PlanMode) -> tuple[bool, str | None]:
    """Whether a command under a plan of ``mode`` runs isolated, as ``isolate`` (the
    ``--isolate`` / ``--no-isolate`` flags; None: neither) says, and why replay is not
    enforced below Python when it is not (None: it is, or nothing was to be enforced).
    Raises :class:`ExecSetupError` for ``--isolate`` where no namespace can be made."""
    if isolate is False:
        return False, None
    if isolate is None and mode == "record":
        return False, None
    if isolate:
        refuse_where_unavailable()
        return True, None
    reason = _unavailable_reason()
    return reason is None, reason


def refuse_where_unavailable() -> None:
    """Refuse ``--isolate`` (:class:`ExecSetupError`) where no namespace can be made."""
    reason = _unavailable_reason()
    if reason is not None:
        raise ExecSetupError(
            f"--isolate cannot make a network namespace here ({reason}); nothing was run, "
            "and exec does not run the command unisolated instead: run without --isolate"
        )


def bridged_endpoints(
    hosts: Iterable[str], *, also: Sequence[Endpoint] = (), proc: Sequence[Path] = _PROC_TCP
) -> tuple[Endpoint, ...]:
    """The endpoints the namespace reaches through the bridge: each host-list entry of
    ``hosts`` as the module's docstring says, then ``also``; each once, in a stable order.
    ``proc`` is where the listening sockets are read (tests give files of their own).
    Raises :class:`ExecSetupError` for an entry whose port is out of range."""
    found: list[Endpoint] = []
    listening: list[tuple[str, int]] | None = None
    for entry in sorted(set(hosts)):
        host, port = _split_entry(entry)
        if not host:
            continue
        if port is not None:
            if not 0 < port < 65536:
                raise ExecSetupError(
                    f"{entry!r} in record_replay.allowed_hosts or http_passthrough_hosts names "
                    "no port (1 to 65535): correct it in the configuration (nothing was run)"
                )
            found.append(Endpoint(host, port))
        elif _is_loopback(host):
            if listening is None:
                listening = listening_ports(proc)
            found.extend(Endpoint(host, p) for p in _ports_for(host, listening))
        else:
            found.extend(Endpoint(host, p) for p in WEB_PORTS)
    found.extend(also)
    return tuple(dict.fromkeys(found))


def vendor_endpoints(environ: Mapping[str, str]) -> tuple[Endpoint, ...]:
    """The vendors' APIs a recording run reaches: where each vendor's base URL variable in
    ``environ`` points (``OPENAI_BASE_URL=http://127.0.0.1:8000/v1``), else its official
    API's host on 443 (``api.openai.com:443``) — what an isolated record run bridges in."""
    found: list[Endpoint] = []
    for vendor in VENDORS:
        urls = [environ.get(variable, "").strip() for variable in vendor.base_url_variables]
        for url in [url for url in urls if url][:1] or [vendor.upstream]:
            parts = urlsplit(url)
            if parts.hostname:
                port = parts.port or (443 if parts.scheme == "https" else 80)
                found.append(Endpoint(parts.hostname, port))
    return tuple(dict.fromkeys(found))


def listening_ports(proc: Sequence[Path] = _PROC_TCP) -> list[tuple[str, int]]:
    """The (address, port) of every listening TCP socket the files of ``proc`` list (this
    network namespace's, by default); a file that cannot be read lists none."""
    found: list[tuple[str, int]] = []
    for path in proc:
        try:
            lines = path.read_text(encoding="ascii").splitlines()[1:]
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] != _LISTEN:
                continue
            address, _, port = fields[1].partition(":")
            try:
                found.append((_proc_address(address), int(port, 16)))
            except ValueError:
                continue
    return found


def stopped_problem(stopped: Sequence[str], *, mode: PlanMode) -> str | None:
    """The run's problem for the connections its namespace stopped (None: none was)."""
    if not stopped:
        return None
    count = len(stopped)
    what = "the isolated recording" if mode == "record" else "the isolated replay"
    return (
        f"{count} connection{'' if count == 1 else 's'} "
        f"{'was' if count == 1 else 'were'} stopped by {what}: {', '.join(stopped)}; "
        "a host:port that may stay live goes in record_replay.allowed_hosts"
    )


def _split_entry(entry: str) -> tuple[str, int | None]:
    """A host-list entry's host and port (None: no port). The configuration keeps an IPv6
    address without its brackets, so ``::1:5432`` is ``::1`` on port 5432 when ``::1`` is a
    loopback address and the rest a port, and otherwise the address it spells."""
    text = entry.strip().lower()
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
        return host, int(port) if port.isdigit() else None
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, int(port) if port.isdigit() else None
    if ":" in text:
        head, _, tail = text.rpartition(":")
        if tail.isdigit() and _is_loopback(head) and len(tail) <= 5:
            return head, int(tail)
    return text, None


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ports_for(host: str, listening: Iterable[tuple[str, int]]) -> list[int]:
    """The ports listening on ``host`` (a loopback host; a name: any loopback address) or
    on every address it is one of (every IPv6 address takes IPv4 too, unless v6-only)."""
    own = None if host in _LOOPBACK_NAMES else ipaddress.ip_address(host)
    ports = set()
    for address, port in listening:
        parsed = ipaddress.ip_address(address)
        if own is None:
            found = parsed.is_loopback or parsed.is_unspecified
        elif parsed.is_unspecified:
            found = parsed.version in (own.version, 6)
        else:
            found = parsed == own
        if found:
            ports.add(port)
    return sorted(ports)


def _proc_address(hexadecimal: str) -> str:
    """An address as ``/proc/net/tcp{,6}`` writes it: host-order 32-bit words in hex."""
    raw = bytes.fromhex(hexadecimal)
    if len(raw) not in (4, 16):
        raise ValueError(hexadecimal)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(words))
