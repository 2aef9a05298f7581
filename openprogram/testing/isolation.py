"""``pytest --openprogram-isolate``: the whole test session in a loopback-only network
namespace, from its start.

With the option (or the ini option ``openprogram_isolate = true``), the first thing the
plugin does — before any ``conftest.py`` is imported — is to run the same pytest command
again, in the same folder and environment, inside a new user and network namespace made by
:mod:`openprogram.isolation` (the user keeps their own uid and gid), and to exit with its
status. Inside, loopback works as usual (a test's own servers, pytest-xdist's workers, which
are started inside and inherit it), and nothing else has a route out: a C extension's socket
(grpcio's), a ``curl`` child, ctypes, UDP — not only what Python's own guard sees.

**What is bridged in** (reachable from inside through a relay openprogram runs outside, which
connects to nothing else): each ``--openprogram-allowed-hosts`` / ``openprogram_allowed_hosts``
entry and each ``openprogram_http_passthrough_hosts`` entry, read as ``exec`` reads its
``allowed_hosts`` (``host:port`` is that endpoint; a bare loopback host, every port listening on it
when the run starts; a bare name, its ports 443 and 80); and when the run's record mode records or
calls live (``once``, ``new_episodes``, ``all``, ``rewrite``, ``live``, ``drift``), each vendor's
API: where its base URL variable points (``OPENAI_BASE_URL=http://127.0.0.1:8000/v1``…), or its
official API (``api.openai.com:443``, ``api.anthropic.com:443``,
``generativelanguage.googleapis.com:443``). A bridged name resolves inside, to an address of the
bridge's own. A marker's or ``openprogram_config``'s own ``allowed_hosts`` are per test, known only
once the session runs inside: they are not bridged.

**What was stopped** — every connection the namespace refused (a TCP connection to an address
and port nothing inside listens on, a datagram, a name lookup) — is printed when the run
ends, one line each, and a run whose tests passed exits 1.

**Where no namespace can be made** (not Linux, a container that forbids user namespaces,
Ubuntu's AppArmor restriction): the command-line option refuses to run — one line, exit 4,
pytest's usage error — because the user asked this run to be hermetic; the ini option (a
project's default, which may be read on a laptop that cannot isolate) runs the tests
unisolated and says so in one line when the run starts and again in the summary at its end.
Neither is ever silent. ``-o openprogram_isolate=false`` turns the ini option off for one run.

The command run again is this process's own command line (``sys.orig_argv``, with
``sys.executable``) when pytest was started from one, else ``python -m pytest`` with the
arguments ``pytest.main()`` was given; plugins given to ``pytest.main()`` as objects cannot
follow a new process, so that is refused. The environment variable :data:`INSIDE` tells the
run inside (and its xdist workers) that it is isolated already."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Generator, Sequence
from types import FrameType
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from openprogram.isolation import Endpoint

INSIDE = "_OPENPROGRAM_PYTEST_ISOLATED"
"""Set in the environment of the run inside the namespace, to what was bridged into it; that
run empties it, so that the sessions started under it (xdist's workers, a test's own pytest)
know they are inside without saying so again."""

OPTION = "--openprogram-isolate"
INI = "openprogram_isolate"

RECORDING_MODES = frozenset({"once", "new_episodes", "all", "rewrite", "live", "drift"})
"""The record modes in which a test may reach its upstream: theirs are bridged."""

_BRIDGED = pytest.StashKey[str]()
"""What was bridged into the namespace this run was started in by the outer pytest."""
_UNISOLATED = pytest.StashKey[str]()
"""Why the run is not isolated although the ini option asked for it."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("openprogram", "openprogram recordings")
    group.addoption(
        OPTION,
        action="store_true",
        default=None,
        help=(
            "run the whole test session in a loopback-only network namespace (Linux, user "
            "namespaces): nothing in any test, a child program or a C extension included, "
            "reaches another host; the allowed hosts are bridged in; a connection the "
            "namespace stopped fails the run. Refused (exit 4) where no namespace can be made"
        ),
    )
    parser.addini(
        INI,
        type="bool",
        help=(
            f"as {OPTION}; where no namespace can be made the tests run unisolated, said in "
            "one line at the start and in the summary"
        ),
        default=False,
    )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, args: list[str], parser: pytest.Parser
) -> Generator[None, None, None]:
    """Before any ``conftest.py`` is imported: run the session again inside a namespace
    and exit with its status, when asked to and not inside one already."""
    bridged = os.environ.get(INSIDE)
    if bridged:  # the run the outer pytest started: its header says so, no session under it
        early_config.stash[_BRIDGED] = bridged
        os.environ[INSIDE] = ""
    asked = _asked(early_config)
    if asked is not None and not _inside():
        from openprogram import isolation

        reason = isolation.unavailable_reason()
        if reason is None:
            raise SystemExit(run_isolated(early_config))
        if asked == "option":
            raise pytest.UsageError(
                f"{OPTION} cannot make a network namespace here ({reason}); no test was run, "
                "and the run is not made unisolated instead: run without the option"
            )
        line = unisolated_line(reason)
        sys.stderr.write(f"openprogram: {line}\n")
        early_config.stash[_UNISOLATED] = line
    return (yield)


def _asked(config: pytest.Config) -> str | None:
    """``"option"``, ``"ini"``, or None: whether, and how, the run asked to be isolated."""
    if getattr(config.known_args_namespace, "openprogram_isolate", None):
        return "option"
    try:
        return "ini" if config.getini(INI) else None
    except ValueError as error:  # not a boolean
        raise pytest.UsageError(f"{INI} in {config.inipath}: {error}") from None


def _inside() -> bool:
    """Whether this process is the isolated run, or a pytest-xdist worker (a worker is
    started by its controller, which decided already: it runs where the controller runs)."""
    if INSIDE in os.environ:
        return True
    # xdist sets the variable in the worker itself, which execnet started as `python -c`;
    # a pytest a test starts in a subprocess inherits the variable, but is no worker
    return "PYTEST_XDIST_WORKER" in os.environ and sys.argv[:1] == ["-c"]


def unisolated_line(reason: str) -> str:
    """What a run the ini option asked to isolate says where it cannot be."""
    return (
        f"{INI} is set, but this machine cannot make a network namespace ({reason}): the "
        "tests run unisolated, and only Python's own guard holds a replay"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    bridged = config.stash.get(_BRIDGED, None)
    if bridged is not None:
        return f"openprogram: isolated in a loopback-only network namespace; bridged: {bridged}"
    line = config.stash.get(_UNISOLATED, None)
    return None if line is None else f"openprogram: {line}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    line = terminalreporter.config.stash.get(_UNISOLATED, None)
    if line is not None:
        terminalreporter.write_line(f"openprogram: {line}", yellow=True, bold=True)


def run_isolated(config: pytest.Config) -> int:
    """Run this pytest command inside a new namespace; print what it stopped; its status
    (1 instead of 0 when something was stopped)."""
    from openprogram.isolation import Relay

    argv = rerun_argv(config)
    bridged = session_endpoints(config)
    said = ", ".join(_endpoint_text(endpoint) for endpoint in bridged) or "nothing"
    environ = {**os.environ, INSIDE: said}
    try:
        with Relay(bridged) as relay:
            status = _run(relay.wrap(argv), cwd=str(config.invocation_params.dir), env=environ)
            stopped = relay.stopped()
    except OSError as error:  # no temporary folder for the relay's socket, no process
        sys.stderr.write(
            f"openprogram: {OPTION} could not start the isolated session ({error}); "
            "no test was run\n"
        )
        return int(pytest.ExitCode.INTERNAL_ERROR)
    if stopped:
        count = len(stopped)
        sys.stderr.write(
            f"openprogram: {OPTION}: {count} connection{'' if count == 1 else 's'} "
            f"{'was' if count == 1 else 'were'} stopped by the test session's network "
            "namespace (list a host:port that may stay reachable in openprogram_allowed_hosts):\n"
        )
        for line in stopped:
            sys.stderr.write(f"  {line}\n")
        if status == 0:
            status = 1
    sys.stderr.flush()
    return status


def rerun_argv(config: pytest.Config) -> list[str]:
    """The command that runs this pytest session again."""
    params = config.invocation_params
    if params.plugins:
        raise pytest.UsageError(
            f"{OPTION} runs the session again in a new process, and plugins given to "
            "pytest.main() as objects cannot follow it: load them with -p NAME instead"
        )
    given = list(params.args)
    if sys.orig_argv and given == sys.argv[1:]:
        return [sys.executable, *sys.orig_argv[1:]]
    return [sys.executable, "-m", "pytest", *given]


def session_endpoints(config: pytest.Config) -> tuple[Endpoint, ...]:
    """What the namespace bridges in (the module's docstring says what and why)."""
    from openprogram.serving.exec_isolation import bridged_endpoints

    hosts = [*_ini_lines(config, "openprogram_allowed_hosts")]
    listed = getattr(config.known_args_namespace, "openprogram_allowed_hosts", None)
    if listed:  # the options are not parsed yet: the early parse of the command line has them
        hosts.extend(host.strip() for host in str(listed).split(","))
    hosts.extend(_ini_lines(config, "openprogram_http_passthrough_hosts"))
    return bridged_endpoints([host for host in hosts if host], also=_upstreams(config))


def _ini_lines(config: pytest.Config, name: str) -> list[str]:
    lines = config.getini(name) or []
    return [str(line).strip() for line in lines if str(line).strip()]


def _upstreams(config: pytest.Config) -> tuple[Endpoint, ...]:
    """The vendors' APIs, when the record mode may reach an upstream: where each vendor's
    base URL variable points, or its official API's host on 443 where none is set."""
    from openprogram.serving.exec_isolation import vendor_endpoints

    mode = getattr(config.known_args_namespace, "openprogram_record_mode", None)
    mode = mode or config.getini("openprogram_record_mode")
    if mode not in RECORDING_MODES:
        return ()
    return vendor_endpoints(os.environ)


def _endpoint_text(endpoint: Endpoint) -> str:
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    return f"{host}:{endpoint.port}"


def _run(argv: Sequence[str], *, cwd: str, env: dict[str, str]) -> int:
    """Run ``argv`` to its end: its exit status (128 + the signal that killed it). A
    SIGINT from the terminal reaches the run inside as well (the same process group): this
    process waits for it to end; a SIGTERM or SIGHUP sent to this process is passed on."""
    process = subprocess.Popen(argv, cwd=cwd, env=env)

    def pass_on(signum: int, frame: FrameType | None) -> None:
        process.send_signal(signal.SIGTERM)

    def wait_for_it(signum: int, frame: FrameType | None) -> None:
        """The run inside had the terminal's SIGINT too: it ends as pytest does."""

    handlers = ((signal.SIGTERM, pass_on), (signal.SIGHUP, pass_on), (signal.SIGINT, wait_for_it))
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = {n: signal.signal(n, h) for n, h in handlers} if in_main_thread else {}
    try:
        status = process.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return 128 - status if status < 0 else status
