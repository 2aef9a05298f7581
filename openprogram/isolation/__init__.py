"""Commands held by the operating system: a loopback-only network namespace, as the user.

On Linux, where unprivileged user namespaces are allowed, a command runs in a network
namespace of its own whose only interface is loopback: nothing it starts — a child binary, a
C extension's socket, UDP — has a route out. The endpoints the user allows are bridged in
through a :class:`Relay` outside, which connects only to those; what the namespace stopped
is seen on its loopback and reported.

    unavailable_reason()  None where the namespace can be made here, else one line why
    Endpoint              a bridged ``host:port``
    Relay                 outside: bridges the allowed endpoints, ``wrap(argv)``, ``stopped()``

    namespace       making the namespace (unshare, the uid/gid maps, lo up, local routes)
    bridge          the process inside: listens, passes connections, starts the command
    packets         what the namespace stopped, read from the packets on its loopback
    names           DNS inside: the bridged names resolve, nothing else does
    wire            what a bridge and its relay say to each other
    relay           the relay outside, and the bridged endpoints
    launch          the bridge's command line, and the check that it works here
    connect_watch   under record, every connection a command's processes open (no namespace)
    seccomp_notify  the kernel's half of that watch: seccomp user notification

``docs/architecture.md`` ("Isolation") says what each platform enforces.
"""

from __future__ import annotations

from openprogram.isolation.launch import unavailable_reason
from openprogram.isolation.relay import Endpoint, Relay

__all__ = ["Endpoint", "Relay", "unavailable_reason"]
