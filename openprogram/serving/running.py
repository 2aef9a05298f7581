"""A server's life: opened on its port, run until it is told to stop, then stopped so that
nothing recorded is lost, and its sessions' accounts given back.

:func:`open_sessions` decides what the server serves — its own recording (the plan ``exec_plan``
makes of ``--record``, ``--replay`` or the configured mode) and the configuration the sessions of
its control API record and replay with. :class:`Listening` is a started server on its event loop;
:func:`serve_until_stopped` runs one in the foreground until SIGINT or SIGTERM (``openprogram
serve``), :class:`BackgroundServer` in a thread of its own for as long as a command runs
(``openprogram exec`` for a program that is not Python).

**Stopping.** The server stops listening, then waits up to ``grace`` seconds for the
requests in flight to finish; the ones still running are cancelled (their calls end
``cancelled`` in the recording), then every session ends: a recording recorded anew replaces
the one it was recorded for. Every line was written whole as it happened, so a server killed
outright (SIGKILL) loses only the calls in flight, and keeps a session recorded anew beside
its recording (``NAME.jsonl.recording``)."""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import logging
import os
import signal
import stat
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError

from openprogram.activation.configured import exec_plan
from openprogram.activation.plan import RecordReplayPlan
from openprogram.config import paths
from openprogram.config.models import RecordReplaySettings
from openprogram.config.settings import load_config
from openprogram.errors import RecordReplayBlockedError, ServeSetupError
from openprogram.quiet_threads import start_quiet
from openprogram.serving.forwarding import Upstreams
from openprogram.serving.server import DEFAULT_MAX_REQUEST_SIZE, ProxyServer, finish_in_flight
from openprogram.serving.sessions import ProxySession, SessionAccount, SessionTable
from openprogram.serving.trust import (
    TrustRules,
    host_in_url,
    new_token,
    remove_token_file,
    write_token_file,
)

__all__ = [
    "DEFAULT_PORT",
    "BackgroundServer",
    "Listening",
    "ServeOptions",
    "ServeOutcome",
    "open_sessions",
    "serve_until_stopped",
]

DEFAULT_PORT = 7878


@dataclass(frozen=True)
class ServeOptions:
    """How a server listens and forwards."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    """0: a free port."""
    upstreams: Mapping[str, str] = field(default_factory=dict)
    """Each vendor's upstream other than its public API."""
    folder: Path | None = None
    """Where session names are recordings (None: the store)."""
    read_timeout: float = 600.0
    """The longest wait for the upstream's next bytes, in seconds."""
    max_request_size: int = DEFAULT_MAX_REQUEST_SIZE
    grace: float = 10.0
    """At the stop, how long the requests in flight may take to finish."""
    unix_socket: Path | None = None
    """A Unix socket to listen on besides the port (the bridge into an isolated command)."""
    token: str = field(default_factory=new_token, repr=False)
    """What a request that names a recording or a session carries (a new one per server)."""
    token_file: Path | None = None
    """Where the token is written (``0600``) while the server runs."""
    allowed_origins: tuple[str, ...] = ()
    """The browser pages whose requests are answered (``--allow-origin``)."""


@dataclass(frozen=True)
class ServeOutcome:
    """How a server's run went: every session's account, its own first."""

    accounts: tuple[SessionAccount, ...]

    @property
    def problems(self) -> list[str]:
        return [problem for account in self.accounts for problem in account.problems]

    @property
    def exit_status(self) -> int:
        return 1 if self.problems else 0


def check_host(host: str) -> str:
    """``host`` if it is a loopback address (or ``localhost``); ``ServeSetupError`` else."""
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise ServeSetupError(
            f"--host {host}: the server listens on loopback only (127.0.0.1, ::1, localhost), "
            "since anyone who reaches it may record through it and read what it replays"
        )
    return host


def open_sessions(
    plan: RecordReplayPlan | None,
    folder: Path | None,
    settings: RecordReplaySettings,
    *,
    once: bool = False,
) -> SessionTable:
    """The sessions of a server whose own recording is ``plan``'s (None: it has none), naming
    recordings under ``folder`` (None: the store); ``ServeSetupError`` for a folder that is
    a link or not a folder. A recording it replays for as long as it runs (its own, one a
    header names) is replayed again for each run of the program, unless ``once``
    (:mod:`~openprogram.serving.replay_passes`)."""
    if folder is not None:
        check_folder(folder)
    own = None if plan is None else ProxySession(_own_name(plan), plan, again=not once)
    return SessionTable(
        own, folder=folder or paths.recordings_dir(), settings=settings, again=not once
    )


def check_folder(folder: Path) -> None:
    """Refuse a folder of recordings (``--dir``) that is a symbolic link or something other
    than a folder (``ServeSetupError``): the server names recordings under a folder of its
    own and follows no link there, so a link is refused rather than followed — give the
    folder it points to. A folder not made yet is fine (the first recording makes it)."""
    try:
        found = os.lstat(folder)
    except FileNotFoundError:
        return
    except OSError as error:
        raise ServeSetupError(f"{folder}: {error.strerror or error}") from None
    if stat.S_ISLNK(found.st_mode):
        raise ServeSetupError(
            f"the folder of recordings {folder} is a symbolic link (to {os.readlink(folder)}): "
            "the server names recordings under a folder of its own, never through a link; "
            "give the folder itself"
        )
    if not stat.S_ISDIR(found.st_mode):
        raise ServeSetupError(
            f"the folder of recordings {folder} is not a folder: give a folder (or a path "
            "where one may be made)"
        )


def _own_name(plan: RecordReplayPlan) -> str:
    return "(blocked)" if plan.path is None else plan.path.stem


def server_plan(
    *, record: str | None, replay: str | None
) -> tuple[RecordReplayPlan | None, RecordReplaySettings]:
    """The server's own recording (``--record``, ``--replay`` or the configured mode), and
    the settings its sessions use. Raises what ``exec_plan`` raises, and
    ``RecordReplayBlockedError`` when the configured state is broken."""
    loaded = load_config()
    plan = exec_plan(record=record, replay=replay, loaded=loaded)
    if plan is not None and plan.mode == "blocked":
        raise RecordReplayBlockedError(plan.blocked_reason or "")
    settings = loaded.settings.record_replay if loaded.settings is not None else None
    return plan, settings or RecordReplaySettings()


class Listening:
    """A server listening on its port (and socket), on the running event loop."""

    def __init__(
        self, server: ProxyServer, runner: web.AppRunner, address: tuple[str, int]
    ) -> None:
        self.server = server
        self.runner = runner
        self.host, self.port = address
        """The address it listens on (the first, for a name that has several)."""

    @classmethod
    async def start(cls, table: SessionTable, options: ServeOptions) -> Listening:
        """Listen as ``options`` say; ``ServeSetupError`` when the port is taken, the socket
        cannot be made or the token file cannot be written."""
        check_host(options.host)
        upstreams = Upstreams(options.upstreams, read_timeout=options.read_timeout)
        trust = TrustRules.closed(options.token)
        server = ProxyServer(
            table, upstreams, trust=trust, max_request_size=options.max_request_size
        )
        runner = web.AppRunner(
            server.application(),
            access_log=None,
            shutdown_timeout=options.grace,
            logger=_SERVER_LOG,
        )
        await runner.setup()
        site = web.TCPSite(runner, options.host, options.port)
        try:
            await site.start()
            if options.unix_socket is not None:
                await web.UnixSite(runner, str(options.unix_socket)).start()
            addresses = [a for a in runner.addresses if isinstance(a, tuple) and len(a) >= 2]
            host, port = str(addresses[0][0]), int(addresses[0][1])
            hosts = [str(address[0]) for address in addresses]
            server.trust = TrustRules.listening(options.token, hosts, port, options.allowed_origins)
            if options.token_file is not None:
                write_token_file(options.token_file, options.token)
        except (OSError, ServeSetupError) as error:
            await runner.cleanup()
            await upstreams.aclose()
            if isinstance(error, ServeSetupError):
                raise
            raise ServeSetupError(_listen_problem(options, error)) from None
        return cls(server, runner, (host, port))

    @property
    def url(self) -> str:
        """The URL it listens at (an IPv6 address in brackets)."""
        return f"http://{host_in_url(self.host)}:{self.port}"

    @property
    def token(self) -> str:
        return self.server.trust.token

    async def stop(self, grace: float, *, token_file: Path | None = None) -> ServeOutcome:
        """Stop listening, let the requests in flight finish (up to ``grace`` seconds, then cancel
        them), end every session, remove the ``token_file`` it wrote; the sessions' accounts."""
        await finish_in_flight(self.server, grace)
        await self.runner.cleanup()
        await self.server.upstreams.aclose()
        if token_file is not None:
            remove_token_file(token_file, self.token)
        return ServeOutcome(tuple(self.server.table.end_all()))


class _OneLineServerLog(logging.Filter):
    """aiohttp's log of a malformed request (which it answers 400) as one line, without the
    parser's traceback: nothing a client sends makes the server print one."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            args = record.args if isinstance(record.args, tuple) else ()
            client = args[0] if args else "a client"
            what = " ".join(str(error.message).split()) or type(error).__name__
            record.msg = "a malformed request from %s was answered %d: %s"
            record.args = (client, error.code, what[:_MOST_SHOWN])
            record.exc_info = None
            record.exc_text = None
        return True


_MOST_SHOWN = 200
"""The most characters of a malformed request's problem logged (it quotes the request)."""
_SERVER_LOG = logging.getLogger("openprogram.serve.http")
"""aiohttp's server log (a request it could not read or answer): a child of the server's
log, one line for a malformed request."""
_SERVER_LOG.addFilter(_OneLineServerLog())


def _listen_problem(options: ServeOptions, error: OSError) -> str:
    where = f"{options.host}:{options.port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {where}: the port is in use (another server, or an "
            "earlier one still running); choose another with --port, or --port 0 for a free one"
        )
    return f"cannot listen on {where}: {error.strerror or error}"


def serve_until_stopped(
    table: SessionTable, options: ServeOptions, *, ready: Callable[[Listening], None]
) -> ServeOutcome:
    """Run a server in the foreground until SIGINT or SIGTERM; ``ready`` is called once it
    listens. Raises ``ServeSetupError`` when it cannot listen."""

    async def main() -> ServeOutcome:
        listening = await Listening.start(table, options)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        try:
            ready(listening)
            await stop.wait()
        finally:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
        return await listening.stop(options.grace, token_file=options.token_file)

    return asyncio.run(main())


class BackgroundServer:
    """A server on an event loop of its own, in a thread, for as long as the caller needs
    it: :meth:`start` returns once it listens, :meth:`stop` once it has stopped."""

    def __init__(self, table: SessionTable, options: ServeOptions) -> None:
        self.table = table
        self.options = options
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True,
                                        name="openprogram-serve")  # fmt: skip
        self._listening: Listening | None = None

    def start(self) -> Listening:
        start_quiet(self._thread)  # a signal sent to exec must wake exec's wait for the command
        future = asyncio.run_coroutine_threadsafe(
            Listening.start(self.table, self.options), self._loop
        )
        try:
            self._listening = future.result()
        except BaseException:
            self._close_loop()
            raise
        return self._listening

    def stop(self) -> ServeOutcome:
        listening = self._listening
        assert listening is not None, "stop() before start()"
        stopping = listening.stop(self.options.grace, token_file=self.options.token_file)
        future = asyncio.run_coroutine_threadsafe(stopping, self._loop)
        try:
            return future.result()
        finally:
            self._close_loop()

    def _close_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
