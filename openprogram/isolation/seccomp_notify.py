"""Linux seccomp user notification, the kernel's half of watching connections: the filter a
command's process installs before it starts, and the listener exec answers it on.

The filter (:func:`filter_program`, classic BPF) lets every system call through except the
ones that can name a destination — ``connect``, ``sendto`` given an address (``send`` is a
``sendto`` without one, and is let through: a stream's every write would otherwise stop),
``sendmsg`` and ``sendmmsg`` — which it turns into a notification on the listener
(``SECCOMP_RET_USER_NOTIF``). It is inherited by every process the command starts, across
``fork`` and ``execve``, whatever language they are written in. A system call of another
architecture than the machine's own (a 32-bit program on x86_64) is let through unseen.

The one who holds the listener receives each notification (:meth:`Listener.receive`), may
read the caller's memory, and must answer it (:meth:`Listener.let_through`) before the call
goes on. When every copy of the listener is closed, the kernel fails each notifying call
with ``ENOSYS`` instead — a ``connect`` would fail — so the listener must stay answered for
as long as a process of the command lives. That is the keeper's job: run as a script
(``python -I -S seccomp_notify.py LISTENER STANDBY``, stdlib only, started by exec beside
the command), it holds a copy of the listener and waits while the ``STANDBY`` pipe is open;
when the pipe closes — exec stopped watching, or died — it answers every notification
(letting it through) until no process uses the filter any more, then exits.

Linux only, x86_64 and aarch64; ctypes only."""

from __future__ import annotations

import ctypes
import os
import platform
import select
import struct
import sys
from dataclasses import dataclass

__all__ = [
    "ARCHITECTURES",
    "Architecture",
    "Listener",
    "Notification",
    "filter_program",
    "install_filter",
    "keep_answering",
    "take_descriptor",
    "this_architecture",
]


@dataclass(frozen=True)
class Architecture:
    """What the filter compares: the audit architecture and the system call numbers."""

    audit: int
    connect: int
    sendto: int
    sendmsg: int
    sendmmsg: int
    seccomp: int
    pidfd_getfd: int = 438


ARCHITECTURES = {
    "x86_64": Architecture(
        0xC000003E, connect=42, sendto=44, sendmsg=46, sendmmsg=307, seccomp=317
    ),
    "aarch64": Architecture(
        0xC00000B7, connect=203, sendto=206, sendmsg=211, sendmmsg=269, seccomp=277
    ),
}

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_GET_NOTIF_SIZES = 3
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
SECCOMP_RET_USER_NOTIF = 0x7FC00000
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_USER_NOTIF_FLAG_CONTINUE = 1
PR_SET_NO_NEW_PRIVS = 38

_BPF_LD_W_ABS = 0x20
_BPF_JEQ_K = 0x15
_BPF_RET_K = 0x06

_NOTIF = struct.Struct("=QII iIQ 6Q")
"""``struct seccomp_notif``: id, pid, flags, then ``struct seccomp_data`` (nr, arch,
instruction pointer, six arguments)."""
_RESPONSE = struct.Struct("=QqiI")
"""``struct seccomp_notif_resp``: id, val, error, flags."""


def _iowr(number: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (ord("!") << 8) | number


NOTIF_RECV = _iowr(0, _NOTIF.size)
NOTIF_SEND = _iowr(1, _RESPONSE.size)
NOTIF_ID_VALID = (1 << 30) | (8 << 16) | (ord("!") << 8) | 2


def this_architecture() -> Architecture | None:
    """The machine's entry of :data:`ARCHITECTURES` (None: not Linux, or another one)."""
    if not sys.platform.startswith("linux") or sys.byteorder != "little":
        return None
    return ARCHITECTURES.get(platform.machine())


def filter_program(arch: Architecture) -> bytes:
    """The filter as ``struct sock_filter`` entries: notify ``connect``, ``sendmsg``,
    ``sendmmsg``, and ``sendto`` with a destination address (its fifth argument not NULL);
    allow everything else, and every call of another architecture."""
    address_low, address_high = 16 + 8 * 4, 16 + 8 * 4 + 4  # seccomp_data.args[4]
    # (code, true target, false target, k); targets are labels resolved below
    program: list[tuple[int, str | None, str | None, int]] = [
        (_BPF_LD_W_ABS, None, None, 4),  # arch
        (_BPF_JEQ_K, None, "allow", arch.audit),
        (_BPF_LD_W_ABS, None, None, 0),  # system call number
        (_BPF_JEQ_K, "notify", None, arch.connect),
        (_BPF_JEQ_K, "notify", None, arch.sendmsg),
        (_BPF_JEQ_K, "notify", None, arch.sendmmsg),
        (_BPF_JEQ_K, None, "allow", arch.sendto),
        (_BPF_LD_W_ABS, None, None, address_low),
        (_BPF_JEQ_K, None, "notify", 0),
        (_BPF_LD_W_ABS, None, None, address_high),
        (_BPF_JEQ_K, "allow", "notify", 0),
    ]
    labels = {"notify": len(program), "allow": len(program) + 1}
    program.append((_BPF_RET_K, None, None, SECCOMP_RET_USER_NOTIF))
    program.append((_BPF_RET_K, None, None, SECCOMP_RET_ALLOW))
    packed = b""
    for position, (code, true, false, k) in enumerate(program):
        jump_true = 0 if true is None else labels[true] - position - 1
        jump_false = 0 if false is None else labels[false] - position - 1
        packed += struct.pack("=HBBI", code, jump_true, jump_false, k)
    return packed


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _failed(what: str) -> OSError:
    number = ctypes.get_errno()
    return OSError(number, f"{what}: {os.strerror(number)}")


def check_available(arch: Architecture) -> None:
    """Raise :class:`OSError` when this kernel cannot notify (seccomp off, or older than
    Linux 5.5: no user notification, or no ``CONTINUE`` answer before 5.5)."""
    libc = _libc()
    sizes = (ctypes.c_uint16 * 3)()
    if libc.syscall(ctypes.c_long(arch.seccomp), SECCOMP_GET_NOTIF_SIZES, 0, sizes) != 0:
        raise _failed("seccomp user notification is not available")
    action = ctypes.c_uint32(SECCOMP_RET_USER_NOTIF)
    code = libc.syscall(
        ctypes.c_long(arch.seccomp), SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action)
    )
    if code != 0:
        raise _failed("seccomp user notification is not available")
    if sizes[0] > _NOTIF.size or sizes[1] > _RESPONSE.size:
        raise OSError(0, f"this kernel's seccomp notification is larger than known ({sizes[:]})")


def install_filter(arch: Architecture, program: bytes) -> int:
    """In the process to watch: forbid gaining privileges (what an unprivileged filter
    needs) and install ``program``; returns the listener's descriptor. Raises OSError."""
    libc = _libc()
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise _failed("prctl(PR_SET_NO_NEW_PRIVS)")
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.addressof(buffer))
    listener = libc.syscall(
        ctypes.c_long(arch.seccomp),
        SECCOMP_SET_MODE_FILTER,
        SECCOMP_FILTER_FLAG_NEW_LISTENER,
        ctypes.byref(fprog),
    )
    if listener < 0:
        raise _failed("seccomp(SECCOMP_SET_MODE_FILTER)")
    return int(listener)


def take_descriptor(arch: Architecture, pidfd: int, number: int) -> int:
    """A copy, in this process, of descriptor ``number`` of the process ``pidfd`` refers to
    (``pidfd_getfd``, Linux 5.6; it needs the right to trace that process). Raises OSError."""
    found = _libc().syscall(ctypes.c_long(arch.pidfd_getfd), pidfd, number, 0)
    if found < 0:
        raise _failed("pidfd_getfd")
    return int(found)


@dataclass(frozen=True)
class Notification:
    """One system call waiting for an answer."""

    id: int
    pid: int
    number: int
    arguments: tuple[int, ...]


class Listener:
    """exec's (or the keeper's) side of one filter: receive, check, answer."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._libc = _libc()
        self._receive = ctypes.create_string_buffer(_NOTIF.size)
        self._send = ctypes.create_string_buffer(_RESPONSE.size)
        self._id = ctypes.c_uint64()

    def receive(self) -> Notification | None:
        """The next notification (it blocks until one comes: poll first); None when the
        calling process was killed or interrupted meanwhile (there is nothing to answer)."""
        ctypes.memset(self._receive, 0, _NOTIF.size)
        if self._libc.ioctl(self.fd, ctypes.c_ulong(NOTIF_RECV), self._receive) != 0:
            return None
        id_, pid, _flags, number, _arch, _ip, *arguments = _NOTIF.unpack(self._receive.raw)
        return Notification(id_, pid, number, tuple(arguments))

    def still_waiting(self, notification: Notification) -> bool:
        """Whether the call is still blocked (so its process's pid and memory are its)."""
        self._id.value = notification.id
        request = ctypes.c_ulong(NOTIF_ID_VALID)
        code: int = self._libc.ioctl(self.fd, request, ctypes.byref(self._id))
        return code == 0

    def let_through(self, notification: Notification) -> None:
        """Answer: let the call go on as if no filter were there (an answer to a call whose
        process has gone meanwhile is dropped by the kernel)."""
        packed = _RESPONSE.pack(notification.id, 0, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE)
        ctypes.memmove(self._send, packed, _RESPONSE.size)
        self._libc.ioctl(self.fd, ctypes.c_ulong(NOTIF_SEND), self._send)


def keep_answering(listener: int, standby: int) -> None:
    """The keeper (see the module's docstring): wait while ``standby`` is open, then let
    every call through until no process uses the filter."""
    poller = select.poll()
    poller.register(listener, 0)  # only its hang-up: the filter has no process left
    poller.register(standby, select.POLLIN)
    answering = False
    answer = Listener(listener)
    while True:
        for fd, events in poller.poll():
            if fd == standby:
                if not os.read(standby, 64):  # closed: exec no longer answers
                    poller.unregister(standby)
                    poller.modify(listener, select.POLLIN)
                    answering = True
            elif answering and events & select.POLLIN:
                notification = answer.receive()
                if notification is not None:
                    answer.let_through(notification)
            elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                return


if __name__ == "__main__":
    keep_answering(int(sys.argv[1]), int(sys.argv[2]))
