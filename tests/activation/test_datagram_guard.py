"""Under replay a datagram is refused like a connection, before it is sent — ``sendto`` in
both its signatures, ``sendmsg`` given an address, ``connect`` then ``send``, asyncio's
datagram endpoints, IPv6 — loopback included, except to the allowed hosts; under record
each place datagrams went that no boundary captured is reported once. A DNS query (to port
53 of a system name server) is a name lookup: never refused, never reported; port 53 of any
other host is a port like any other. Unix datagram sockets are not network.

Every listener here is a UDP socket on loopback: a guard that let a datagram through reaches
this machine only, and the test sees it arrive. What a test sends to another machine or to
port 53 leaves nothing: the fixture :func:`underneath` puts methods that only note their
address beneath the hook (which wraps what it finds), so the test sees what the hook let
through and nothing is sent."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.activation import connection_guard
from openprogram.activation.connection_guard import REPLAY_GUARD, ConnectionWatch
from openprogram.errors import NetworkBlockedError, ReplayConnectionRefusedError
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.reader import read_recording
from openprogram.testing.network_block import NetworkBlock
from tests.support.exec_replays import ONE_CALL, replay_program

Address = tuple[Any, ...]

MARKER = b"-- the test's marker --"


class Listener:
    """A UDP socket on loopback that tells what reached it."""

    def __init__(self, family: socket.AddressFamily, host: str) -> None:
        self.sock = socket.socket(family, socket.SOCK_DGRAM)
        self.sock.bind((host, 0))
        self.sock.settimeout(60)  # only a test that failed waits for it
        self.address: Address = self.sock.getsockname()
        self.port: int = self.address[1]

    def received(self) -> list[bytes]:
        """The datagrams that reached the listener until now: those before a marker sent
        now, from outside any replay (from one host on loopback they arrive in order)."""
        with socket.socket(self.sock.family, socket.SOCK_DGRAM) as marker:
            marker.sendto(MARKER, self.address)
        datagrams = []
        while (datagram := self.sock.recv(65536)) != MARKER:
            datagrams.append(datagram)
        return datagrams


@pytest.fixture
def listener() -> Iterator[Listener]:
    listening = Listener(socket.AF_INET, "127.0.0.1")
    with listening.sock:
        yield listening


@pytest.fixture
def listener6() -> Iterator[Listener]:
    try:
        listening = Listener(socket.AF_INET6, "::1")
    except OSError as error:
        pytest.skip(f"this machine has no IPv6 loopback ({error})")
    with listening.sock:
        yield listening


@pytest.fixture
def underneath(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Address]]:
    """``socket.socket``'s ``sendto``, ``sendmsg`` and ``connect_ex`` replaced by ones that
    only note where they would send, and send nothing; the hook, installed after, wraps
    them, so what it lets through is noted here."""
    noted: list[tuple[str, Address]] = []

    def sendto(self: socket.socket, data: bytes, *flags_and_address: Any) -> int:
        noted.append(("sendto", flags_and_address[-1]))
        return len(data)

    def sendmsg(self: socket.socket, buffers: list[bytes], *rest: Any) -> int:
        noted.append(("sendmsg", rest[2]))
        return sum(len(buffer) for buffer in buffers)

    def connect_ex(self: socket.socket, address: Address) -> int:
        noted.append(("connect_ex", address))
        return 0

    monkeypatch.setattr(socket.socket, "sendto", sendto)
    monkeypatch.setattr(socket.socket, "sendmsg", sendmsg)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return noted


SENDS: dict[str, Callable[[socket.socket, Address], object]] = {
    "sendto(data, address)": lambda sock, address: sock.sendto(b"live", address),
    "sendto(data, flags, address)": lambda sock, address: sock.sendto(b"live", 0, address),
    "sendmsg(buffers, ancdata, flags, address)": lambda sock, address: sock.sendmsg(
        [b"li", b"ve"], [], 0, address
    ),
}


@pytest.mark.parametrize("send", SENDS.values(), ids=SENDS.keys())
def test_a_datagram_is_refused_under_replay_before_it_is_sent(
    listener: Listener, empty: Path, send: Callable[[socket.socket, Address], object]
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with (
            pytest.raises(ReplayConnectionRefusedError) as refused,
            openprogram.record_replay(empty, mode="replay"),
        ):
            with pytest.raises(RecordReplayEscape) as escape:
                send(sock, listener.address)
            assert escape.value.error in REPLAY_GUARD.refusals
        assert listener.received() == []
        send(sock, listener.address)  # the socket is still the program's; the replay is over
    assert listener.received() == [b"live"]
    assert str(refused.value).startswith(
        f"replay refused a connection to 127.0.0.1:{listener.port} (raw socket) "
        "that no recording serves: "
    )
    assert (refused.value.host, refused.value.port) == ("127.0.0.1", listener.port)


def test_connect_then_send_on_a_datagram_socket_is_refused_at_connect(
    listener: Listener, empty: Path
) -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with (
        pytest.raises(ReplayConnectionRefusedError, match=f"127.0.0.1:{listener.port} "),
        openprogram.record_replay(empty, mode="replay"),
    ):
        sock.connect(listener.address)
        sock.send(b"live")
    assert sock.fileno() == -1  # closed when connect was refused, as a stream socket is
    assert listener.received() == []


def test_an_ipv6_datagram_is_refused(listener6: Listener, empty: Path) -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sock:
        for send in SENDS.values():
            with (
                pytest.raises(ReplayConnectionRefusedError) as refused,
                openprogram.record_replay(empty, mode="replay"),
            ):
                send(sock, listener6.address)
            assert (refused.value.host, refused.value.port) == ("::1", listener6.port)
    assert listener6.received() == []


class Watching(asyncio.DatagramProtocol):
    """A datagram protocol that tells how its transport ended."""

    def __init__(self) -> None:
        self.lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost.set_result(exc)


async def ended(transport: asyncio.DatagramTransport, protocol: Watching) -> object:
    """How ``transport`` ended once closed: a refusal of its ``sendto`` closed it already (a
    transport closes itself on a write error that is not an ``OSError``, telling its
    protocol and the loop's exception handler, not the caller), else None."""
    transport.close()
    return await protocol.lost


async def transport_sendto(address: Address) -> object:
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(Watching, family=socket.AF_INET)
    transport.sendto(b"live", address)
    return await ended(transport, protocol)


async def remote_addr(address: Address) -> object:
    loop = asyncio.get_running_loop()
    try:
        transport, protocol = await loop.create_datagram_endpoint(Watching, remote_addr=address)
    except RecordReplayEscape as escape:
        return escape
    transport.sendto(b"live")
    return await ended(transport, protocol)


async def remote_addr_with_broadcast(address: Address) -> object:
    # Allowed to broadcast, the endpoint does not connect: each datagram is a sendto.
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(
        Watching, remote_addr=address, allow_broadcast=True
    )
    transport.sendto(b"live")
    return await ended(transport, protocol)


async def sock_sendto(address: Address) -> object:
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.setblocking(False)
        try:
            await loop.sock_sendto(sock, b"live", address)
        except RecordReplayEscape as escape:
            return escape
    return None


ASYNCIO_SENDS: dict[str, Callable[[Address], Awaitable[object]]] = {
    "transport.sendto(data, addr)": transport_sendto,
    "create_datagram_endpoint(remote_addr=...)": remote_addr,
    "create_datagram_endpoint(remote_addr=..., allow_broadcast=True)": remote_addr_with_broadcast,
    "loop.sock_sendto": sock_sendto,
}


@pytest.mark.parametrize("send", ASYNCIO_SENDS.values(), ids=ASYNCIO_SENDS.keys())
def test_asyncio_datagrams_are_refused_under_replay(
    listener: Listener, empty: Path, send: Callable[[Address], Awaitable[object]]
) -> None:
    handled: list[dict[str, Any]] = []

    async def sending() -> object:
        asyncio.get_running_loop().set_exception_handler(lambda _, context: handled.append(context))
        return await send(listener.address)

    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(empty, mode="replay"),
    ):
        escape = asyncio.run(sending())
        assert isinstance(escape, RecordReplayEscape)
        assert escape.error in REPLAY_GUARD.refusals
    assert (refused.value.host, refused.value.port) == ("127.0.0.1", listener.port)
    assert [context["exception"] for context in handled] in ([], [escape])
    assert listener.received() == []


@pytest.mark.skipif(not hasattr(socket, "MSG_FASTOPEN"), reason="no TCP Fast Open here")
def test_a_tcp_fast_open_sendto_is_refused_like_a_connect(empty: Path) -> None:
    # sendto(..., MSG_FASTOPEN, address) connects a stream socket as it sends.
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        with (
            socket.socket() as sock,
            pytest.raises(ReplayConnectionRefusedError),
            openprogram.record_replay(empty, mode="replay"),
        ):
            sock.sendto(b"GET / HTTP/1.0\r\n\r\n", socket.MSG_FASTOPEN, server.getsockname())
        with pytest.raises(BlockingIOError):
            server.accept()  # nothing ever connected


def test_allowed_and_passthrough_hosts_get_their_datagrams(listener: Listener, empty: Path) -> None:
    port = listener.port
    other_port = port + 1 if port < 65535 else 1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with openprogram.record_replay(empty, mode="replay", allowed_hosts=["127.0.0.1"]):
            sock.sendto(b"allowed", listener.address)
        with openprogram.record_replay(empty, mode="replay", allowed_hosts=["localhost"]):
            sock.sendto(b"by name", 0, ("localhost", port))
        with openprogram.record_replay(
            empty, mode="replay", passthrough_hosts=[f"127.0.0.1:{port}"]
        ):
            sock.sendmsg([b"passthrough"], [], 0, listener.address)
        with (
            pytest.raises(ReplayConnectionRefusedError),
            openprogram.record_replay(
                empty, mode="replay", allowed_hosts=[f"127.0.0.1:{other_port}"]
            ),
        ):
            sock.sendto(b"to another port", listener.address)  # the host on another port only
    assert listener.received() == [b"allowed", b"by name", b"passthrough"]


def test_unix_datagram_sockets_are_not_network(empty: Path, tmp_path: Path) -> None:
    path = str(tmp_path / "d.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as server:
        server.bind(path)
        server.settimeout(60)
        with openprogram.record_replay(empty, mode="replay"):
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
                sock.sendto(b"sendto", path)
                sock.sendmsg([b"sendmsg"], [], 0, path)
                sock.connect(path)
                sock.send(b"send")
            left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
            with left, right:
                left.send(b"pair")
                assert right.recv(16) == b"pair"
        assert [server.recv(16) for _ in range(3)] == [b"sendto", b"sendmsg", b"send"]


def test_record_reports_where_datagrams_went_once_and_refuses_nothing(
    listener: Listener, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "rec.jsonl"
    with (
        openprogram.record_replay(path, mode="record") as active,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock,
    ):
        for number in range(3):
            sock.sendto(b"%d" % number, listener.address)
    assert listener.received() == [b"0", b"1", b"2"]
    assert [str(missed) for missed in active.not_recorded] == [
        f"127.0.0.1:{listener.port} (raw socket)"
    ]
    assert f"1 connection was not recorded: 127.0.0.1:{listener.port} (raw socket)" in caplog.text
    assert [(entry["host"], entry["port"]) for entry in read_recording(path).not_recorded] == [
        ("127.0.0.1", listener.port)
    ]


def test_a_watch_notes_each_destination_once(listener: Listener) -> None:
    watch = ConnectionWatch()
    watch.start()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for _ in range(100):
                sock.sendto(b"metric:1|c", listener.address)
    finally:
        watch.stop()
    assert [(seen.host, seen.port) for seen in watch.connections] == [("127.0.0.1", listener.port)]
    assert len(listener.received()) == 100


QUERY = b"\x00\x01" + b"\x00" * 10
"""A DNS message header asking no question: what a lookup library sends first, without a
name any resolver could forward."""


@pytest.fixture
def resolvers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The system's name servers, as a resolv.conf lists them: 192.0.2.53 and 127.0.0.53."""
    conf = tmp_path / "resolv.conf"
    conf.write_text(
        "# written by a test\nsearch example\nnameserver 192.0.2.53\nnameserver 127.0.0.53\n"
    )
    monkeypatch.setattr(connection_guard, "RESOLV_CONF", conf)
    connection_guard.system_resolvers.cache_clear()
    yield
    connection_guard.system_resolvers.cache_clear()


def test_the_system_name_servers_are_read_from_resolv_conf(resolvers: None) -> None:
    assert connection_guard.system_resolvers() == {"192.0.2.53", "127.0.0.53"}
    assert connection_guard.is_name_lookup("192.0.2.53", 53)
    assert not connection_guard.is_name_lookup("192.0.2.53", 5353)
    assert not connection_guard.is_name_lookup("192.0.2.99", 53)


@pytest.mark.parametrize("send", ["sendto", "connect_ex"])
def test_port_53_of_a_host_that_is_no_name_server_is_refused(
    resolvers: None, empty: Path, underneath: list[tuple[str, Address]], send: str
) -> None:
    # A server listening on port 53 is a server like any other, not the machine's resolver.
    kind = socket.SOCK_DGRAM if send == "sendto" else socket.SOCK_STREAM
    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(empty, mode="replay"),
        socket.socket(socket.AF_INET, kind) as sock,
    ):
        if send == "sendto":
            sock.sendto(QUERY, ("192.0.2.99", 53))
        else:
            sock.connect_ex(("192.0.2.99", 53))
    assert (refused.value.host, refused.value.port) == ("192.0.2.99", 53)
    assert underneath == []


def test_a_dns_query_is_a_lookup_never_refused_nor_reported(
    resolvers: None, empty: Path, tmp_path: Path, underneath: list[tuple[str, Address]]
) -> None:
    # dnspython asks the resolver over UDP, and again over TCP when the answer was too long.
    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(empty, mode="replay"),
    ):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(QUERY, ("192.0.2.53", 53))
            udp.sendmsg([QUERY], [], 0, ("127.0.0.53", 53))
        with socket.socket() as tcp:
            tcp.connect_ex(("192.0.2.53", 53))
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.sendto(QUERY, ("192.0.2.53", 5353))  # not a lookup: refused
    assert (refused.value.host, refused.value.port) == ("192.0.2.53", 5353)
    with (
        openprogram.record_replay(tmp_path / "rec.jsonl", mode="record") as active,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
    ):
        udp.sendto(QUERY, ("192.0.2.53", 53))
        udp.sendto(QUERY, ("192.0.2.53", 5353))
    assert [str(missed) for missed in active.not_recorded] == ["192.0.2.53:5353 (raw socket)"]
    assert underneath == [
        ("sendto", ("192.0.2.53", 53)),
        ("sendmsg", ("127.0.0.53", 53)),
        ("connect_ex", ("192.0.2.53", 53)),
        ("sendto", ("192.0.2.53", 53)),
        ("sendto", ("192.0.2.53", 5353)),
    ]


def test_the_network_block_stops_a_datagram_to_another_machine(
    resolvers: None, underneath: list[tuple[str, Address]]
) -> None:
    block = NetworkBlock()
    block.install()
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            with pytest.raises(RecordReplayEscape) as escape:
                sock.sendto(b"live", ("192.0.2.1", 9))
            with pytest.raises(RecordReplayEscape):
                sock.sendmsg([b"live"], [], 0, ("192.0.2.1", 9))
            sock.sendto(b"this machine", ("127.0.0.2", 9))
            sock.sendto(QUERY, ("192.0.2.53", 53))
            with pytest.raises(RecordReplayEscape):
                sock.sendto(QUERY, ("192.0.2.1", 53))  # no name server: a server
    finally:
        block.uninstall()
    assert isinstance(escape.value.error, NetworkBlockedError)
    assert "blocked a connection to 192.0.2.1 port 9 " in str(escape.value.error)
    assert underneath == [("sendto", ("127.0.0.2", 9)), ("sendto", ("192.0.2.53", 53))]


SENDING = (
    ONE_CALL
    + """
import socket, sys
address = ("127.0.0.1", int(sys.argv[1]))
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for send in (
    lambda: sock.sendto(b"sendto", address),
    lambda: sock.sendmsg([b"sendmsg"], [], 0, address),
    lambda: (sock.connect(address), sock.send(b"connect")),
):
    try:
        send()
    except BaseException as error:
        print("refused", type(error).__name__)
"""
)


def test_exec_replay_refuses_datagrams_and_fails_with_one_line(
    listener: Listener, tmp_path: Path
) -> None:
    result = replay_program(SENDING, tmp_path, str(listener.port))
    assert result.stdout == "refused RecordReplayEscape\n" * 3
    assert result.returncode == 1, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith(
        f"openprogram: replay refused a connection to 127.0.0.1:{listener.port} (raw socket) "
        "that no recording serves: "
    )
    assert listener.received() == []
