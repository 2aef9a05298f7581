"""The bridge ``openprogram exec --isolate`` runs inside the command's network namespace.

``python -m openprogram.serving.namespace_bridge --socket PATH --port P -- COMMAND...``,
started by ``unshare --user --map-root-user --net``: a namespace whose only interface is
loopback, down. The bridge brings loopback up, listens on ``127.0.0.1:P`` (and ``[::1]:P``
where IPv6 is there), passes the bytes of each connection both ways to the recording
proxy's Unix socket outside (a socket file crosses network namespaces; a TCP port does
not), runs the command, passes SIGINT and SIGTERM on to it, and exits with its status. It
reads no byte of what it passes: HTTP is the proxy's business.

Only the Python standard library is used here: the bridge starts fast and needs nothing the
command's environment might lack.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import signal
import socket
import struct
import sys
from collections.abc import Sequence

__all__ = ["bring_loopback_up", "main"]

_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ = struct.Struct("16sH22x")
"""``struct ifreq`` with its flags member (40 bytes on Linux)."""
_CHUNK = 64 * 1024


def bring_loopback_up() -> None:
    """Set the namespace's ``lo`` up (a new network namespace starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = _IFREQ.pack(b"lo", 0)
        _, flags = _IFREQ.unpack(fcntl.ioctl(probe.fileno(), _SIOCGIFFLAGS, request))
        fcntl.ioctl(probe.fileno(), _SIOCSIFFLAGS, _IFREQ.pack(b"lo", flags | _IFF_UP))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(_CHUNK):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.transport.abort()


async def _bridge(path: str, client: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
    try:
        server_reader, server_writer = await asyncio.open_unix_connection(path)
    except OSError:
        back.transport.abort()
        return
    await asyncio.gather(_pipe(client, server_writer), _pipe(server_reader, back))
    for writer in (server_writer, back):
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def _run(path: str, port: int, command: Sequence[str]) -> int:
    servers = [
        await asyncio.start_server(
            lambda r, w: _bridge(path, r, w), "127.0.0.1", port, reuse_address=True
        )
    ]
    with contextlib.suppress(OSError):  # no IPv6 in the namespace
        servers.append(await asyncio.start_server(lambda r, w: _bridge(path, r, w), "::1", port))
    process = await asyncio.create_subprocess_exec(*command)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, process.send_signal, signum)
    status = await process.wait()
    for server in servers:
        server.close()
    return 128 - status if status < 0 else status


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="openprogram-namespace-bridge")
    parser.add_argument("--socket", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    arguments = parser.parse_args(argv)
    command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
    if not command:
        parser.error("no command given")
    try:
        bring_loopback_up()
    except OSError as error:
        sys.stderr.write(f"openprogram exec --isolate: cannot bring loopback up: {error}\n")
        return 2
    try:
        return asyncio.run(_run(arguments.socket, arguments.port, command))
    except FileNotFoundError as error:
        sys.stderr.write(f"openprogram exec --isolate: {command[0]}: {error.strerror}\n")
        return 127


if __name__ == "__main__":
    sys.exit(main())
