"""Making a loopback-only network namespace in which the user keeps their own uid and gid.

:func:`enter_isolated_namespace` moves the calling process (it must still have one thread)
into a new user namespace and a new network namespace, both its own:

* ``unshare(CLONE_NEWUSER | CLONE_NEWNET)`` through the C library (``os.unshare`` exists
  only from Python 3.12);
* ``/proc/self/setgroups`` ``deny``, then ``uid_map`` and ``gid_map`` mapping the real uid and
  gid to themselves, so the command runs as the user it was started by, not as root (a
  program that refuses root — Chromium, ``initdb`` — runs; and it holds no capability once it
  has exec'd, because its uid in the namespace is not 0);
* ``lo`` up (a new network namespace starts with it down, and with no other interface);
* a ``local`` default route for IPv4 and for IPv6 (type ``RTN_LOCAL``, scope host, through
  ``lo``), sent over rtnetlink: every address is then this host's own, so a connection to
  any address is refused at once by the namespace's own kernel — and can be seen on
  ``lo`` — instead of failing with "network unreachable" before a packet exists.

Nothing leaves: the namespace has no interface but ``lo``. What the process does next
(listen, watch ``lo``, start a command) it must do itself, before it execs, while it still
holds the namespace's capabilities.

When the namespace cannot be made, :class:`NamespaceUnavailable` carries one line saying why
in the terms of the machine's own settings (``kernel.apparmor_restrict_unprivileged_userns``,
``user.max_user_namespaces``, ...). Only the standard library is used: this runs in the
bridge, which must start fast."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct

__all__ = [
    "NamespaceUnavailable",
    "add_local_default_route",
    "bring_loopback_up",
    "enter_isolated_namespace",
]

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = struct.Struct("16sH22x")
"""``struct ifreq`` with its flags member (40 bytes on Linux)."""

_NETLINK_ROUTE = 0
_RTM_NEWROUTE = 24
_NLMSG_ERROR = 2
_NLM_F_REQUEST = 0x1
_NLM_F_ACK = 0x4
_NLM_F_EXCL = 0x200
_NLM_F_CREATE = 0x400
_RT_TABLE_LOCAL = 255
_RTPROT_BOOT = 3
_RT_SCOPE_HOST = 254
_RTN_LOCAL = 2
_RTA_OIF = 4
_NLMSGHDR = struct.Struct("=IHHII")
_RTMSG = struct.Struct("=BBBBBBBBI")
_RTATTR_OIF = struct.Struct("=HHi")

_SETTINGS = {
    "apparmor": "/proc/sys/kernel/apparmor_restrict_unprivileged_userns",
    "clone": "/proc/sys/kernel/unprivileged_userns_clone",
    "max": "/proc/sys/user/max_user_namespaces",
}


class NamespaceUnavailable(Exception):
    """The namespace cannot be made here; ``reason`` is one line saying why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def enter_isolated_namespace() -> None:
    """Move this (single-threaded) process into a loopback-only namespace as its own user.

    Raises :class:`NamespaceUnavailable` when a step is refused."""
    uid, gid = os.getuid(), os.getgid()
    _unshare(CLONE_NEWUSER | CLONE_NEWNET)
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {uid} 1")
        _write("/proc/self/gid_map", f"{gid} {gid} 1")
    except OSError as error:
        raise NamespaceUnavailable(_refused("mapping the user's own uid and gid", error)) from None
    try:
        bring_loopback_up()
    except OSError as error:
        raise NamespaceUnavailable(_refused("bringing loopback up", error)) from None
    try:
        add_local_default_route(socket.AF_INET)
    except OSError as error:
        raise NamespaceUnavailable(_refused("adding the local IPv4 route", error)) from None
    try:
        add_local_default_route(socket.AF_INET6)
    except OSError as error:
        if error.errno not in (errno.EAFNOSUPPORT, errno.EOPNOTSUPP, errno.EACCES):
            raise NamespaceUnavailable(_refused("adding the local IPv6 route", error)) from None
        # No IPv6 in this kernel (or it is disabled): nothing reaches anywhere over it.


def bring_loopback_up() -> None:
    """Set the namespace's ``lo`` up (a new network namespace starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = _IFREQ.pack(b"lo", 0)
        _, flags = _IFREQ.unpack(fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request))
        fcntl.ioctl(probe.fileno(), _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))


def add_local_default_route(family: int) -> None:
    """``ip route add local default dev lo`` for ``family``, through rtnetlink.

    Every address of the family is then local: a connection to one with nothing listening
    is refused by this kernel (a TCP reset, an ICMP port unreachable) instead of leaving."""
    oif = socket.if_nametoindex("lo")
    body = _RTMSG.pack(
        family, 0, 0, 0, _RT_TABLE_LOCAL, _RTPROT_BOOT, _RT_SCOPE_HOST, _RTN_LOCAL, 0
    ) + _RTATTR_OIF.pack(_RTATTR_OIF.size, _RTA_OIF, oif)
    flags = _NLM_F_REQUEST | _NLM_F_ACK | _NLM_F_CREATE | _NLM_F_EXCL
    message = _NLMSGHDR.pack(_NLMSGHDR.size + len(body), _RTM_NEWROUTE, flags, 1, 0) + body
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, _NETLINK_ROUTE) as netlink:
        netlink.settimeout(5)
        netlink.bind((0, 0))
        netlink.sendto(message, (0, 0))
        answer = netlink.recv(4096)
    if len(answer) < _NLMSGHDR.size + 4:
        raise OSError(errno.EIO, "a short answer from rtnetlink")
    _, kind, _, _, _ = _NLMSGHDR.unpack_from(answer)
    if kind != _NLMSG_ERROR:
        raise OSError(errno.EIO, f"rtnetlink answered message type {kind}, not an ack")
    (code,) = struct.unpack_from("=i", answer, _NLMSGHDR.size)
    if code != 0:
        raise OSError(-code, os.strerror(-code))


def _unshare(flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(ctypes.c_int(flags)) == 0:
        return
    code = ctypes.get_errno()
    raise NamespaceUnavailable(_unshare_refused(code))


def _unshare_refused(code: int) -> str:
    what = f"unshare(CLONE_NEWUSER|CLONE_NEWNET) failed ({errno.errorcode.get(code, code)})"
    if _setting("max") == "0":
        return f"user namespaces are disabled (user.max_user_namespaces=0): {what}"
    if _setting("clone") == "0":
        return (
            "unprivileged user namespaces are disabled "
            f"(kernel.unprivileged_userns_clone=0): {what}"
        )
    if code == errno.EPERM and _setting("apparmor") == "1":
        return (
            "unprivileged user namespaces are restricted "
            f"(kernel.apparmor_restrict_unprivileged_userns=1): {what}"
        )
    if code == errno.EPERM and _unmapped():
        return f"this process is in a user namespace that maps no uid or gid: {what}"
    if code == errno.ENOSPC:
        return f"the limit of user namespaces (user.max_user_namespaces) is reached: {what}"
    if code in (errno.EPERM, errno.ENOSYS):
        return f"unshare is forbidden here (a container's seccomp profile or policy): {what}"
    if code == errno.EINVAL:
        return f"this kernel has no user or network namespaces: {what}"
    return what


def _refused(step: str, error: OSError) -> str:
    name = errno.errorcode.get(error.errno or 0, str(error.errno))
    what = f"{step} in the new namespace failed ({name}: {error.strerror})"
    if _setting("apparmor") == "1":
        return (
            "unprivileged user namespaces are restricted "
            f"(kernel.apparmor_restrict_unprivileged_userns=1): {what}"
        )
    return what


def _write(path: str, text: str) -> None:
    descriptor = os.open(path, os.O_WRONLY)
    try:
        os.write(descriptor, text.encode())
    finally:
        os.close(descriptor)


def _unmapped() -> bool:
    """Whether this process's own user namespace maps no uid (``unshare --user`` alone)."""
    try:
        with open("/proc/self/uid_map", encoding="ascii") as file:
            return not file.read(4096).strip()
    except OSError:
        return False


def _setting(name: str) -> str | None:
    try:
        with open(_SETTINGS[name], encoding="ascii") as file:
            return file.read(32).strip()
    except OSError:
        return None
