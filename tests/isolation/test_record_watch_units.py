"""The pieces of the connection watch: the seccomp filter's BPF program (run through a small
classic-BPF interpreter), the reading of a call's socket addresses from a process's memory
(this process's own, through ``/proc/self/mem``), the sorting of what the kernel saw against
what Python's hooks saw, and — with a real child process — what happens when the watcher
stops while the command lives on: the keeper answers, and without it the kernel fails the
command's ``connect`` (which is why it exists)."""

from __future__ import annotations

import ctypes
import errno
import json
import os
import shlex
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.activation import connection_guard
from openprogram.activation.connection_guard import ConnectionWatch, SocketHook, python_saw
from openprogram.isolation import connect_watch
from openprogram.isolation.connect_watch import (
    ConnectWatch,
    WatchedConnection,
    call_addresses,
    destination,
    not_seen_by_python,
)
from openprogram.isolation.seccomp_notify import (
    ARCHITECTURES,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_USER_NOTIF,
    Architecture,
    Notification,
    filter_program,
)
from tests.isolation.live import HOST, HitServer, curl_plain

# --- the filter ----------------------------------------------------------------------------


def run_filter(program: bytes, number: int, arch: int, arguments: tuple[int, ...]) -> int:
    """What ``program`` returns for a system call (``struct seccomp_data``), interpreted as
    the kernel does the three kinds of instruction it holds."""
    data = struct.pack("=iIQ6Q", number, arch, 0, *arguments, *(0,) * (6 - len(arguments)))
    instructions = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    accumulator, position = 0, 0
    while True:
        code, jump_true, jump_false, k = instructions[position]
        position += 1
        if code == 0x20:  # BPF_LD | BPF_W | BPF_ABS
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif code == 0x15:  # BPF_JMP | BPF_JEQ | BPF_K
            position += jump_true if accumulator == k else jump_false
        elif code == 0x06:  # BPF_RET | BPF_K
            return k
        else:
            raise AssertionError(f"an instruction the filter should not hold: {code:#x}")


@pytest.mark.parametrize("name", sorted(ARCHITECTURES))
def test_the_filter_notifies_only_calls_that_name_a_destination(name: str) -> None:
    arch = ARCHITECTURES[name]
    program = filter_program(arch)
    assert len(program) % 8 == 0

    def verdict(number: int, *arguments: int, audit: int = arch.audit) -> int:
        return run_filter(program, number, audit, arguments)

    address = 0x7FFF_1234_5678
    assert verdict(arch.connect, 3, address, 16) == SECCOMP_RET_USER_NOTIF
    assert verdict(arch.sendmsg, 3, address, 0) == SECCOMP_RET_USER_NOTIF
    assert verdict(arch.sendmmsg, 3, address, 2, 0) == SECCOMP_RET_USER_NOTIF
    assert verdict(arch.sendto, 3, address, 10, 0, address, 16) == SECCOMP_RET_USER_NOTIF
    # an address whose low half is zero still names a destination
    assert verdict(arch.sendto, 3, address, 10, 0, 0x1_0000_0000, 16) == SECCOMP_RET_USER_NOTIF
    # send() is sendto() with no destination: a stream's writes go on unstopped
    assert verdict(arch.sendto, 3, address, 10, 0, 0, 0) == SECCOMP_RET_ALLOW
    for other in (0, 1, 2, 59, arch.seccomp, arch.connect + 1):
        assert verdict(other, 3, address, 16) == SECCOMP_RET_ALLOW
    # another architecture's call (a 32-bit program) is let through, whatever its number
    assert verdict(arch.connect, 3, address, 16, audit=0x40000003) == SECCOMP_RET_ALLOW


# --- socket addresses ----------------------------------------------------------------------


def inet(host: str, port: int) -> bytes:
    packed = struct.pack("!H4s8x", port, socket.inet_aton(host))
    return struct.pack("=H", socket.AF_INET) + packed


def inet6(host: str, port: int, scope: int = 0) -> bytes:
    packed = struct.pack("!HI16s", port, 0, socket.inet_pton(socket.AF_INET6, host))
    return struct.pack("=H", socket.AF_INET6) + packed + struct.pack("=I", scope)


def test_destination_reads_internet_socket_addresses() -> None:
    assert destination(inet("127.0.0.1", 8080)) == ("127.0.0.1", 8080)
    assert destination(inet("10.1.2.3", 53)) == ("10.1.2.3", 53)
    assert destination(inet6("::1", 443)) == ("::1", 443)
    assert destination(inet6("fe80::1", 9, scope=2)) == ("fe80::1", 9)
    assert destination(inet6("::ffff:127.0.0.2", 80)) == ("127.0.0.2", 80)
    unix = struct.pack("=H", socket.AF_UNIX) + b"/run/socket\0"
    assert destination(unix) is None
    assert destination(struct.pack("=H", socket.AF_UNSPEC) + bytes(14)) is None
    assert destination(inet6("::1", 443)[:20]) is None  # too short to be one
    assert destination(b"") is None
    assert destination(b"\x02") is None


X86 = ARCHITECTURES["x86_64"]


def notified(arch: Architecture, number: int, *arguments: int) -> Notification:
    return Notification(1, os.getpid(), number, (*arguments, *(0,) * (6 - len(arguments))))


@pytest.fixture
def memory() -> Iterator[int]:
    fd = os.open("/proc/self/mem", os.O_RDONLY)
    yield fd
    os.close(fd)


class MessageHeader(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.c_void_p),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class MultipleMessageHeader(ctypes.Structure):
    _fields_ = [("header", MessageHeader), ("length", ctypes.c_uint)]


def test_call_addresses_reads_each_call_from_the_callers_memory(memory: int) -> None:
    v4, v6 = inet("127.0.0.1", 8080), inet6("::1", 9)
    first, second = ctypes.create_string_buffer(v4), ctypes.create_string_buffer(v6)
    one, two = ctypes.addressof(first), ctypes.addressof(second)
    size = len(v4)

    assert call_addresses(X86, notified(X86, X86.connect, 3, one, size), memory) == [v4]
    assert call_addresses(X86, notified(X86, X86.sendto, 3, 0, 0, 0, two, 28), memory) == [v6]
    assert call_addresses(X86, notified(X86, X86.sendto, 3, 0, 0, 0, 0, 0), memory) == [b""]

    header = MessageHeader(name=one, namelen=size)
    assert ctypes.sizeof(MessageHeader) == 56
    sent = notified(X86, X86.sendmsg, 3, ctypes.addressof(header), 0)
    assert call_addresses(X86, sent, memory) == [v4]
    connected = MessageHeader()  # a connected socket's sendmsg names no one
    sent = notified(X86, X86.sendmsg, 3, ctypes.addressof(connected), 0)
    assert call_addresses(X86, sent, memory) == [b""]

    batch = (MultipleMessageHeader * 2)()
    assert ctypes.sizeof(MultipleMessageHeader) == 64
    batch[0].header = MessageHeader(name=one, namelen=size)
    batch[1].header = MessageHeader(name=two, namelen=28)
    sent = notified(X86, X86.sendmmsg, 3, ctypes.addressof(batch), 2, 0)
    assert [destination(found) for found in call_addresses(X86, sent, memory)] == [
        ("127.0.0.1", 8080),
        ("::1", 9),
    ]
    assert call_addresses(X86, notified(X86, 0, 3, one, size), memory) == []


# --- what no Python hook saw ---------------------------------------------------------------


def seen_by(pid: int, process: str, host: str, port: int) -> WatchedConnection:
    return WatchedConnection(pid, host, port, process)


def test_not_seen_by_python_lists_what_only_the_kernel_saw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection_guard, "system_resolvers", lambda: frozenset({"127.0.0.53"}))
    (tmp_path / "process-10.json").write_text("{}")
    (tmp_path / "seen-10.jsonl").write_text(
        "\n".join(
            json.dumps(entry)
            for entry in (
                {"host": "127.0.0.1", "port": 8000},  # the recorded call's connection
                {"host": "localhost", "port": 9000},  # a name: resolved beneath the hook
                {"host": "::ffff:127.0.0.1", "port": 7000},
            )
        )
        + "\nnot json\n"
    )
    (tmp_path / "seen-12.jsonl").write_text(json.dumps({"host": "127.0.0.1", "port": 1}) + "\n")
    kernel = [
        seen_by(10, "python3", "127.0.0.1", 8000),
        seen_by(10, "python3", "127.0.0.1", 9000),
        seen_by(10, "python3", "127.0.0.1", 7000),
        seen_by(10, "python3", "127.0.0.1", 50051),  # grpcio's C core
        seen_by(11, "curl", "127.0.0.1", 8080),
        seen_by(13, "curl", "127.0.0.1", 8080),  # the same endpoint again: once
        seen_by(12, "python3", "127.0.0.2", 5000),  # a forked child: it wrote what it saw
        seen_by(14, "python3.12", "::1", 6000),
        seen_by(11, "curl", "127.0.0.53", 53),  # a name lookup
        seen_by(11, "curl", "127.0.0.1", 4000),  # exec's own proxy
        seen_by(11, "curl", "127.0.0.3", 443),  # an allowed host
        seen_by(11, "curl", "127.0.0.1", 3000),  # listed already by a Python process
    ]
    found = not_seen_by_python(
        kernel,
        tmp_path,
        allowed=["127.0.0.3"],
        skip=[("127.0.0.1", 4000)],
        listed=["127.0.0.1:3000 (raw socket)"],
    )
    assert [str(connection) for connection in found] == [
        "127.0.0.1:50051 (opened outside Python, pid 10 python3)",
        "127.0.0.1:8080 (curl, a process that is not Python)",
        "127.0.0.2:5000 (opened outside Python, pid 12 python3)",
        "::1:6000 (python3.12, a Python process record/replay is not active in)",
    ]
    assert [connection.as_json() for connection in found][1] == {
        "host": "127.0.0.1",
        "port": 8080,
        "library": "curl, a process that is not Python",
    }
    assert [str(c) for c in not_seen_by_python(kernel[4:5], None)] == [
        "127.0.0.1:8080 (curl, not through exec's proxy)"
    ]


def test_a_connection_watch_writes_every_endpoint_it_sees_with_its_pid(tmp_path: Path) -> None:
    hook = SocketHook()
    watch = ConnectionWatch(hook, seen_into=tmp_path)
    watch.start()
    try:
        with socket.socket() as server:
            server.bind((HOST, 0))
            server.listen()
            port = server.getsockname()[1]
            for _ in range(2):  # the second is the same endpoint: written once
                with socket.create_connection((HOST, port)):
                    pass
    finally:
        watch.stop()
    assert python_saw(tmp_path) == {os.getpid(): {(HOST, port)}}
    assert (tmp_path / f"seen-{os.getpid()}.jsonl").stat().st_mode & 0o777 == 0o600


# --- a watcher that stops while the command lives on ---------------------------------------

UNWATCHED = ConnectWatch().unwatched
needs_watch = pytest.mark.skipif(
    UNWATCHED is not None, reason=f"no connection watch here: {UNWATCHED}"
)


def connect_after_the_watch_stops(then: str) -> subprocess.CompletedProcess[str]:
    """A command that waits on its standard input, then runs ``then`` (a shell line); the
    watch is stopped (its listener closed) before the command is let go."""
    read, write = os.pipe()
    with ConnectWatch() as watch:
        command = subprocess.Popen(
            ["sh", "-c", f"read line; {then}"],
            stdin=read,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=watch.before_exec,
        )
    os.close(read)
    assert watch.unwatched is None
    os.write(write, b"go\n")
    os.close(write)
    out, err = command.communicate()
    return subprocess.CompletedProcess(command.args, command.returncode, out, err)


@needs_watch
def test_a_watch_that_stops_leaves_the_command_connecting() -> None:
    with HitServer() as server:
        done = connect_after_the_watch_stops(" ".join(curl_plain(server.url)))
        assert (done.returncode, done.stdout, server.hits) == (0, "hit\n", 1)


@needs_watch
def test_with_no_one_answering_the_kernel_fails_the_connect(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Why the keeper exists: once no copy of the listener is open, the kernel fails each
    notifying call with ENOSYS (curl: could not connect)."""

    def no_keeper(self: ConnectWatch, listener: int) -> None:
        read, self._standby = os.pipe()
        os.close(read)

    monkeypatch.setattr(connect_watch.ConnectWatch, "_start_keeper", no_keeper)
    with HitServer() as server:
        connect = (
            "import socket\n"
            "try:\n"
            f"    socket.create_connection(({HOST!r}, {server.port}))\n"
            "except OSError as error:\n"
            "    print(error.errno)\n"
        )
        done = connect_after_the_watch_stops(shlex.join([sys.executable, "-c", connect]))
        assert (done.returncode, done.stdout) == (0, f"{errno.ENOSYS}\n"), done.stderr
        assert server.hits == 0


@needs_watch
def test_the_watch_thread_leaves_every_signal_to_exec_main_thread() -> None:
    """A signal the kernel gave the watch's thread would not wake exec's main thread from
    its wait for the command, so a SIGTERM exec must pass on would be lost (exec and its
    command then wait for ever): the thread blocks every signal, from its start."""
    with ConnectWatch() as watch:
        thread = watch._thread
        assert thread is not None
        assert thread.native_id is not None
        status = Path(f"/proc/self/task/{thread.native_id}/status").read_text()
    [blocked] = [line.split()[1] for line in status.splitlines() if line.startswith("SigBlk:")]
    mask = int(blocked, 16)
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        assert mask & (1 << (number - 1)), f"{signal.Signals(number).name} is not blocked"
