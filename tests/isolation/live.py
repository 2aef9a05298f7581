"""The live side of the isolation tests: servers on loopback that count every hit, and the
clients that try to reach them in each way an escape from a replay could take.

Servers (each a context manager, serving in daemon threads from its creation, on
``127.0.0.1`` at a port the system picks):

* :class:`HitServer` — an HTTP server; ``hits`` counts the TCP connections it accepted (a
  client that connects and sends nothing is a hit too), ``paths`` the requests' paths;
* :class:`UdpCounter` — a UDP socket; ``hits`` counts the datagrams that reached it;
* :class:`GrpcEchoServer` — a grpcio server answering the unary method :data:`ECHO_METHOD`
  with ``echo:`` and the request's bytes, built with grpcio's generic handlers (no protoc,
  no generated code); ``hits`` counts the calls that reached it.

Clients, one per kind of escape issue 37 lists, each an argv to run (``python -c`` for the
ones written in Python) or the Python source itself (to ``exec`` in process, or to hand to a
child). Every client is bounded in time, never raises, and prints one line: ``reached: …``
when it got an answer, ``stopped: …`` when it did not. Loopback only: the gRPC client dials
``ipv4:127.0.0.1:PORT`` with grpcio's proxy support off (no name resolved, no proxy asked),
curl is told to use no proxy.

:data:`ESCAPES` names them all, each with the server it aims at, for tests that go through
every kind (``pytest.mark.parametrize("escape", ESCAPES, ids=str)``).
"""

from __future__ import annotations

import select
import shlex
import socket
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self

import grpc

HOST = "127.0.0.1"
"""The address every server here binds, and every client here aims at."""

CLIENT_TIMEOUT = 10
"""How long a client waits for an answer (seconds): only a client that would have failed
anyway waits this long."""

ECHO_METHOD = "/openprogram.test.Echo/Say"
"""The gRPC echo server's one unary method."""


class _Handler(BaseHTTPRequestHandler):
    server: _CountingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the counts are what a test reads."""

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(min(length, 1 << 20))
        self._answer()

    def _answer(self) -> None:
        with self.server.lock:
            self.server.paths.append(self.path)
        body = b"hit\n"
        self.send_response(200)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(body)))
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(body)


class _CountingHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__((HOST, 0), _Handler)
        self.lock = threading.Lock()
        self.connections = 0
        self.paths: list[str] = []

    def verify_request(self, request: Any, client_address: Any) -> bool:
        with self.lock:
            self.connections += 1
        return True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that connected and left is still a hit; no traceback on stderr."""


class HitServer:
    """An HTTP server on loopback that counts the connections it accepts."""

    def __init__(self) -> None:
        self._server = _CountingHTTPServer()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/escape"

    @property
    def hits(self) -> int:
        """The connections made so far, those the kernel has queued for the server's thread
        included: a client that connected and left before that thread took its connection
        has hit the server all the same."""
        self._settle()
        with self._server.lock:
            return self._server.connections

    def _settle(self) -> None:
        """Wait while connections are queued for the server's thread (it takes each one)."""
        listening = self._server.socket
        for _ in range(CLIENT_TIMEOUT * 100):
            if listening.fileno() < 0:
                return  # stopped: what was counted is all there is
            readable, _, _ = select.select([listening], [], [], 0)
            if not readable:
                return
            time.sleep(0.01)

    @property
    def paths(self) -> list[str]:
        with self._server.lock:
            return list(self._server.paths)

    def stop(self) -> None:
        self._settle()  # a connection made before the stop counts, taken or not
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=CLIENT_TIMEOUT)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class UdpCounter:
    """A UDP socket on loopback that counts the datagrams it receives.

    No thread: on loopback a datagram is in the receiving socket's buffer by the time
    ``sendto`` returns, so :attr:`hits` reads what is waiting there and is exact at once."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self._sock.bind((HOST, 0))
        self._sock.setblocking(False)
        self._lock = threading.Lock()
        self._hits = 0

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def hits(self) -> int:
        with self._lock:
            while True:
                try:
                    self._sock.recv(65536)
                except BlockingIOError:
                    return self._hits
                self._hits += 1

    def stop(self) -> None:
        self._sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class GrpcEchoServer:
    """A grpcio server on loopback answering :data:`ECHO_METHOD`; counts the calls."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._hits = 0
        service, method = ECHO_METHOD.strip("/").split("/")
        handler = grpc.method_handlers_generic_handler(
            service, {method: grpc.unary_unary_rpc_method_handler(self._say)}
        )
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=2), options=[("grpc.so_reuseport", 0)]
        )
        self._server.add_generic_rpc_handlers((handler,))
        self._port = self._server.add_insecure_port(f"{HOST}:0")
        self._server.start()

    def _say(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        with self._lock:
            self._hits += 1
        return b"echo:" + request

    @property
    def port(self) -> int:
        return self._port

    @property
    def target(self) -> str:
        """The channel target a client dials: an address, no name to resolve."""
        return f"ipv4:{HOST}:{self._port}"

    @property
    def hits(self) -> int:
        with self._lock:
            return self._hits

    def stop(self) -> None:
        self._server.stop(grace=None).wait(CLIENT_TIMEOUT)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


# --- the clients ---------------------------------------------------------------------------


def python_argv(source: str, *flags: str) -> list[str]:
    """``python [FLAGS] -c SOURCE`` with this interpreter."""
    return [sys.executable, *flags, "-c", source]


def curl(url: str) -> list[str]:
    """A ``curl`` child: prints ``reached: <body>`` or ``stopped: curl exit N``."""
    return ["sh", "-c", _curl_line(url)]


def _curl_line(url: str) -> str:
    command = f"curl -sS --noproxy '*' --max-time {CLIENT_TIMEOUT} {shlex.quote(url)}"
    return f'out=$({command}) && echo "reached: $out" || echo "stopped: curl exit $?"'


def curl_plain(url: str) -> list[str]:
    """``curl`` itself, no shell: its exit status (0 reached, 7 refused) and its output are
    curl's own."""
    return ["curl", "-sS", "--noproxy", "*", "--max-time", str(CLIENT_TIMEOUT), url]


def sh_curl(url: str) -> list[str]:
    """``sh -c 'curl …'``: a shell that starts curl."""
    return ["sh", "-c", f"sh -c {shlex.quote(_curl_line(url))}"]


def os_system_curl(url: str) -> str:
    """Python source: ``os.system('curl …')``."""
    return f"import os\nstatus = os.system({_curl_line(url)!r})\nprint('os.system exit', status)\n"


def urllib_get(url: str) -> str:
    """Python source: a plain ``urllib.request`` GET."""
    return (
        "import urllib.request\n"
        "try:\n"
        f"    with urllib.request.urlopen({url!r}, timeout={CLIENT_TIMEOUT}) as answer:\n"
        "        print('reached:', answer.read().decode().strip())\n"
        "except Exception as error:\n"
        "    print('stopped:', type(error).__name__, error)\n"
    )


def child_python_isolated(url: str) -> str:
    """Python source that starts a child ``python -I -c`` making a urllib GET (a child the
    start-up hook's environment does not reach)."""
    argv = python_argv(urllib_get(url), "-I")
    return (
        "import subprocess\n"
        f"done = subprocess.run({argv!r}, capture_output=True, text=True, "
        f"timeout={CLIENT_TIMEOUT * 2})\n"
        "print(done.stdout.strip() or 'stopped: child exit %d %s' % "
        "(done.returncode, done.stderr.strip()[-200:]))\n"
    )


def ctypes_connect(host: str, port: int) -> str:
    """Python source: a socket made in Python, connected by libc's ``connect`` through
    ctypes (below Python's ``socket.connect``), then an HTTP GET over it."""
    return (
        "import ctypes, ctypes.util, socket, struct\n"
        "libc = ctypes.CDLL(ctypes.util.find_library('c'), use_errno=True)\n"
        "sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\n"
        f"address = struct.pack('!HH4s8x', socket.AF_INET, {port}, "
        f"socket.inet_aton({host!r}))\n"
        "address = struct.pack('=H', socket.AF_INET) + address[2:]\n"
        "result = libc.connect(sock.fileno(), ctypes.c_char_p(address), len(address))\n"
        "if result != 0:\n"
        "    print('stopped: libc connect errno', ctypes.get_errno())\n"
        "else:\n"
        f"    sock.settimeout({CLIENT_TIMEOUT})\n"
        "    try:\n"
        f"        sock.sendall(b'GET /ctypes HTTP/1.1\\r\\nHost: {host}\\r\\n"
        "Connection: close\\r\\n\\r\\n')\n"
        "        print('reached:', sock.recv(64).split(b'\\r\\n')[0].decode())\n"
        "    except OSError as error:\n"
        "        print('stopped:', error)\n"
        "sock.close()\n"
    )


def python_socket(host: str, port: int) -> str:
    """Python source: a plain Python socket, as a database driver opens one (no HTTP client
    the boundary serves from a recording), then an HTTP GET written on it."""
    return (
        "import socket\n"
        "try:\n"
        f"    address = ({host!r}, {port})\n"
        f"    with socket.create_connection(address, timeout={CLIENT_TIMEOUT}) as sock:\n"
        f"        sock.sendall(b'GET /socket HTTP/1.1\\r\\nHost: {host}\\r\\n"
        "Connection: close\\r\\n\\r\\n')\n"
        "        print('reached:', sock.recv(64).split(b'\\r\\n')[0].decode())\n"
        "except OSError as error:\n"
        "    print('stopped:', type(error).__name__, error)\n"
    )


def udp_sendto(host: str, port: int) -> str:
    """Python source: one UDP datagram with ``sendto`` (no answer expected: the counter
    says whether it arrived)."""
    return (
        "import socket\n"
        "sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
        "try:\n"
        f"    sock.sendto(b'escape', ({host!r}, {port}))\n"
        "    print('reached: sent')\n"
        "except Exception as error:\n"
        "    print('stopped:', type(error).__name__, error)\n"
        "sock.close()\n"
    )


def grpc_unary(target: str) -> str:
    """Python source: a grpcio unary call of :data:`ECHO_METHOD` (grpcio's C core opens
    the connection, below Python's ``socket``)."""
    return (
        "import grpc\n"
        "options = [('grpc.enable_http_proxy', 0), ('grpc.dns_enable_srv_queries', 0)]\n"
        f"with grpc.insecure_channel({target!r}, options=options) as channel:\n"
        f"    say = channel.unary_unary({ECHO_METHOD!r})\n"
        "    try:\n"
        f"        print('reached: grpc', say(b'hi', timeout={CLIENT_TIMEOUT}).decode())\n"
        "    except grpc.RpcError as error:\n"
        "        print('stopped: grpc', error.code().name, error.details())\n"
    )


@dataclass
class LiveServers:
    """One of each server, for the tests that try every kind of escape."""

    http: HitServer
    udp: UdpCounter
    grpc: GrpcEchoServer

    def stop(self) -> None:
        self.http.stop()
        self.udp.stop()
        self.grpc.stop()

    @classmethod
    def started(cls) -> LiveServers:
        return cls(HitServer(), UdpCounter(), GrpcEchoServer())


@dataclass(frozen=True)
class Escape:
    """One kind of escape: its name, the server it aims at, and its argv given the servers."""

    name: str
    aims_at: Literal["http", "udp", "grpc"]
    argv: Callable[[LiveServers], list[str]]

    def hits(self, servers: LiveServers) -> int:
        """How many times it reached the server it aims at."""
        if self.aims_at == "http":
            return servers.http.hits
        if self.aims_at == "udp":
            return servers.udp.hits
        return servers.grpc.hits

    def __str__(self) -> str:
        return self.name


ESCAPES: tuple[Escape, ...] = (
    Escape("curl", "http", lambda s: curl_plain(s.http.url)),
    Escape("sh -c curl", "http", lambda s: sh_curl(s.http.url)),
    Escape("os.system curl", "http", lambda s: python_argv(os_system_curl(s.http.url))),
    Escape("python -I", "http", lambda s: python_argv(child_python_isolated(s.http.url))),
    Escape("ctypes connect", "http", lambda s: python_argv(ctypes_connect(HOST, s.http.port))),
    Escape("udp sendto", "udp", lambda s: python_argv(udp_sendto(HOST, s.udp.port))),
    Escape("grpc unary", "grpc", lambda s: python_argv(grpc_unary(s.grpc.target))),
)
"""Every kind of escape issue 37 lists, as a command run from outside openprogram's Python
(a child process): a test runs ``escape.argv(servers)`` and reads ``escape.hits(servers)``."""
