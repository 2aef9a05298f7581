"""``openprogram exec`` for any program: a Python one activated in each of its processes, any
other through a recording proxy of its own.

:func:`exec_command` resolves the plan (``--record``, ``--replay`` or the configured mode)
and :func:`run_command` runs the command one of two ways:

* **in-process**, for a Python interpreter or a script whose ``#!`` line names one
  (:mod:`openprogram.activation.exec_run`): every request its Python processes send through
  a captured client library is recorded or replayed, whatever its URL;
* **through the proxy**, for anything else (``node``, ``npx vitest``, a Go binary, a shell
  script) or with ``--proxy``: a server (:mod:`~openprogram.serving.running`) on a free
  loopback port for the length of the command, with its own recording the plan's, and the
  variables the clients read their base URL from (``OPENAI_BASE_URL``,
  ``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL``, and the older names some read)
  pointed at it, and ``OPENPROGRAM_SERVE_TOKEN`` set to the server's token (what a test
  runner's setup sends to name a recording or a session). The upstream of each vendor is
  the one the command's environment had configured (its public API when none was). Only
  requests sent to those base URLs are recorded or replayed: a program that writes its URL
  in its code is not captured this way.

**Isolation** (Linux). Under replay, and when blocked, the command runs by default in a
network namespace of its own with loopback only, as the user's own uid and gid, so that
nothing it does — a child binary, a C extension's socket, a datagram — reaches a live
server; ``--isolate`` asks for that under record too, ``--no-isolate`` turns it off. Either
way the command runs as it would without (a Python one in-process, its base URLs its own;
any other through the proxy). What reaches outside is what
:mod:`~openprogram.serving.exec_isolation` bridges through an
:class:`openprogram.isolation.Relay`: the allowed and passthrough hosts, and the proxy's
port. The connections the namespace stopped are a problem of the run. Where no namespace
can be made, an explicit ``--isolate`` is refused before anything runs; the default runs
the command without, and the caller is told why (``on_unisolated``).

Under replay, and when blocked, the key variables the SDKs need are set to a placeholder
where unset, as for Python. What the command did is reported as for Python: the calls
recorded or replayed, the mismatches and the calls never requested
(:class:`~openprogram.activation.exec_run.ExecOutcome`), and a failed ``--record`` is put
back unless ``--keep-partial``."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from openprogram.activation.boundaries import set_placeholder_keys
from openprogram.activation.configured import exec_plan
from openprogram.activation.exec_environment import runs_python
from openprogram.activation.exec_run import ExecOutcome, run_process, run_with_plan
from openprogram.activation.plan import RecordReplayPlan
from openprogram.config import paths
from openprogram.config.models import RecordReplaySettings
from openprogram.config.settings import load_config
from openprogram.deterministic_sources import RecordingSources
from openprogram.errors import (
    ExecSetupError,
    OpenProgramError,
    RecordReplayBlockedError,
    ServeSetupError,
)
from openprogram.isolation import Endpoint, Relay
from openprogram.isolation.connect_watch import ConnectWatch, not_seen_by_python, note_in_recording
from openprogram.serving.exec_isolation import (
    bridged_endpoints,
    isolation_for,
    refuse_where_unavailable,
    stopped_problem,
    vendor_endpoints,
)
from openprogram.serving.routes import VENDORS, check_upstream
from openprogram.serving.trust import TOKEN_VARIABLE
from openprogram.store.names import resolve_recording

__all__ = [
    "SERVE_URL_VARIABLE",
    "exec_command",
    "proxied_environment",
    "run_command",
    "upstreams_of",
]

SERVE_URL_VARIABLE = "OPENPROGRAM_SERVE_URL"
"""Where the command finds the server exec runs for it (its control API: a test runner's
setup opens a session per test there)."""
SERVE_DIR_VARIABLE = "OPENPROGRAM_SERVE_DIR"
"""Where the sessions of that server are recordings, as the setup files read it (default:
the store)."""
MISSING_AIOHTTP = (
    "{what} runs through the recording proxy, which needs aiohttp: "
    "pip install 'openprogram[serve]' (nothing was run)"
)


def exec_command(
    command: Sequence[str],
    *,
    record: str | None = None,
    replay: str | None = None,
    keep_partial: bool = False,
    proxy: bool | None = None,
    isolate: bool | None = None,
    on_start: Callable[[RecordReplayPlan], None] | None = None,
    on_unisolated: Callable[[str], None] | None = None,
    sources: RecordingSources | None = None,
) -> ExecOutcome:
    """Run ``command`` under ``--record``, ``--replay`` or the configured mode, in-process or
    through the proxy (``proxy``: None decides by the command, see the module's docstring), in a
    loopback-only network namespace or not (``isolate``: ``--isolate``, ``--no-isolate``, None: by
    the plan); ``on_start`` is called with the plan just before the command starts, once everything
    was checked (not when record/replay is off), after ``on_unisolated`` with the reason when the
    namespace the plan asked for cannot be made here; ``sources`` (``--seed``, ``--clock-start``)
    are what the Python processes' ``now()`` and ``random()`` draw from while recording, and a clock
    runs them in UTC. Raises :class:`ExecSetupError` (and, for a flag's recording,
    ``RecordingNameError`` / ``RecordingFileError``) for what is wrong before it runs."""
    if not command:
        raise ExecSetupError("no command given: openprogram exec -- python agent.py")
    if isolate:
        refuse_where_unavailable()  # before a new recording is made
    new = record is not None and not _names_a_file(record)
    plan = exec_plan(record=record, replay=replay)  # creates a new recording, with its header
    if sources is not None and plan is not None and plan.mode != "blocked":
        plan = dataclasses.replace(plan, sources=sources)
    discard = record is not None and not keep_partial
    return run_command(
        command,
        plan,
        discard_failed=discard,
        recording_is_new=new,
        proxy=proxy,
        isolate=isolate,
        on_start=on_start,
        on_unisolated=on_unisolated,
    )


def run_command(
    command: Sequence[str],
    plan: RecordReplayPlan | None,
    environ: Mapping[str, str] | None = None,
    *,
    discard_failed: bool = False,
    recording_is_new: bool = False,
    proxy: bool | None = None,
    isolate: bool | None = False,
    on_start: Callable[[RecordReplayPlan], None] | None = None,
    on_unisolated: Callable[[str], None] | None = None,
) -> ExecOutcome:
    """Run ``command`` with ``plan`` (None: as it is) in ``environ`` (default: this process's),
    in-process or through the proxy as ``proxy`` says (None: by the command), isolated as
    ``isolate`` says (None: by the plan; the default, False, is never); see :func:`exec_command`."""
    base = dict(os.environ if environ is None else environ)
    if not command:
        raise ExecSetupError("no command given: openprogram exec -- python agent.py")
    python = runs_python(command, base)  # and ExecSetupError for a command not found
    through_proxy = proxy if proxy is not None else not python
    if plan is None:
        if isolate:
            raise ExecSetupError(
                "--isolate holds a recording or a replay, and record/replay is off here (no "
                "--record or --replay, and the configured mode is off): add --replay NAME or "
                "--record NAME (nothing was run)"
            )
        return run_with_plan(command, None, base)
    isolated, unisolated = isolation_for(isolate, plan.mode)
    starting = _starting(on_start, on_unisolated, unisolated)
    prior = None if recording_is_new else _size_of(plan.path)
    if through_proxy:
        outcome = _run_through_proxy(
            tuple(command), plan, base, isolated=isolated, on_start=starting
        )
    elif isolated:
        upstreams = vendor_endpoints(base) if plan.mode == "record" else ()
        with Relay(bridged_endpoints(_hosts(plan), also=upstreams)) as relay:
            outcome = run_with_plan(command, plan, base, on_start=starting, wrap=relay.wrap)
            outcome = _with_stopped(outcome, relay.stopped())
    else:
        outcome = run_with_plan(command, plan, base, on_start=starting)
    if discard_failed and outcome.status != 0 and plan.mode == "record" and plan.path:
        _put_back(plan.path, prior)
        return dataclasses.replace(outcome, calls=0, discarded=outcome.calls, put_back=True)
    return outcome


def _starting(
    on_start: Callable[[RecordReplayPlan], None] | None,
    on_unisolated: Callable[[str], None] | None,
    reason: str | None,
) -> Callable[[RecordReplayPlan], None]:
    """What is called just before the command starts: ``on_unisolated`` with ``reason``,
    then ``on_start``."""

    def starting(plan: RecordReplayPlan) -> None:
        if on_unisolated is not None and reason is not None:
            on_unisolated(reason)
        if on_start is not None:
            on_start(plan)

    return starting


def _hosts(plan: RecordReplayPlan) -> frozenset[str]:
    """The host-list entries the plan lets through: bridged into an isolated command."""
    return plan.allowed_hosts | plan.passthrough_hosts


def _with_stopped(outcome: ExecOutcome, stopped: Sequence[str]) -> ExecOutcome:
    """``outcome`` with the connections its namespace stopped among its problems."""
    assert outcome.plan is not None
    problem = stopped_problem(stopped, mode=outcome.plan.mode)
    if problem is None:
        return outcome
    return dataclasses.replace(outcome, problems=(*outcome.problems, problem))


def _names_a_file(argument: str) -> bool:
    """Whether the recording ``--record`` names is a file already."""
    try:
        return resolve_recording(argument, paths.recordings_dir()).path.exists()
    except (OSError, OpenProgramError):
        return False  # exec_plan says what is wrong with it


def _size_of(path: Path | None) -> int | None:
    """The size of the file at ``path`` (None: there is none)."""
    try:
        return None if path is None else os.stat(path).st_size
    except OSError:
        return None


def _put_back(path: Path, size: int | None) -> None:
    """Make the recording at ``path`` what it was (``size`` bytes; None: absent): a command
    that fails under ``--record`` leaves no recording behind (a session cut short would
    replay as more calls than the recording holds)."""
    with contextlib.suppress(OSError):
        if size is None:
            path.unlink()
        else:
            os.truncate(path, size)


def _run_through_proxy(
    command: tuple[str, ...],
    plan: RecordReplayPlan,
    base: dict[str, str],
    *,
    isolated: bool,
    on_start: Callable[[RecordReplayPlan], None],
) -> ExecOutcome:
    try:
        from openprogram.serving.running import BackgroundServer, ServeOptions, open_sessions
    except ImportError:
        raise ExecSetupError(MISSING_AIOHTTP.format(what=os.path.basename(command[0]))) from None

    options = ServeOptions(port=0, upstreams=upstreams_of(base))
    # the sessions a test runner's setup opens on this server: where its setup keeps them,
    # with the configured settings
    folder_of_sessions = base.get(SERVE_DIR_VARIABLE) or None
    loaded = load_config()
    settings = loaded.settings.record_replay if loaded.settings else RecordReplaySettings()
    # the command is one run: a recording is replayed once, as for a Python command
    sessions = open_sessions(
        plan, None if folder_of_sessions is None else Path(folder_of_sessions), settings, once=True
    )
    server = BackgroundServer(sessions, options)
    try:
        listening = server.start()
    except ServeSetupError as error:
        raise ExecSetupError(f"cannot start the recording proxy: {error}") from None
    stopped: tuple[str, ...] = ()
    watch: ConnectWatch | None = None  # record: every connection of the command's processes
    try:
        environ = proxied_environment(
            base, listening.url, token=listening.token, replay=plan.mode != "record"
        )
        with contextlib.ExitStack() as stack:
            argv: Sequence[str] = command
            if isolated:
                proxy_port = Endpoint(listening.host, listening.port)
                relay = stack.enter_context(
                    Relay(bridged_endpoints(_hosts(plan), also=(proxy_port,)))
                )
                argv = relay.wrap(command)
            on_start(plan)
            if plan.mode == "record" and not isolated:  # isolated: the bridge names what it stops
                watch = stack.enter_context(ConnectWatch())
            before_exec = watch.before_exec if watch is not None else None
            status = run_process(tuple(argv), environ, before_exec=before_exec)
            if isolated:
                stopped = relay.stopped()
    finally:
        accounts = server.stop().accounts
    own = accounts[0]
    if plan.mode == "blocked":
        problems = [str(RecordReplayBlockedError(plan.blocked_reason or ""))]
    else:
        problems = list(own.problems)
    outcome = ExecOutcome(command, status, plan, 0, own.calls, tuple(problems))
    if watch is not None:
        outcome = _with_outside(outcome, watch, plan, proxy=(listening.host, listening.port))
    return _with_stopped(outcome, stopped)


def _with_outside(
    outcome: ExecOutcome, watch: ConnectWatch, plan: RecordReplayPlan, *, proxy: tuple[str, int]
) -> ExecOutcome:
    """record: ``outcome`` with the connections the command's processes opened elsewhere than
    to exec's ``proxy`` (:mod:`openprogram.isolation.connect_watch`) as not recorded."""
    allowed = (*plan.passthrough_hosts, *plan.allowed_hosts)
    outside = not_seen_by_python(watch.connections, None, allowed=allowed, skip=(proxy,))
    note_in_recording(plan.path, outside)
    return dataclasses.replace(
        outcome,
        not_recorded=tuple(str(connection) for connection in outside),
        unwatched=watch.unwatched,
    )


def upstreams_of(environ: Mapping[str, str]) -> dict[str, str]:
    """The upstream each vendor's clients in ``environ`` would reach: the origin (and the
    path before the SDK's own) of the first of its base URL variables that is set, else
    none (its public API)."""
    upstreams: dict[str, str] = {}
    for vendor in VENDORS:
        configured = _configured_base(vendor.base_url_variables, environ)
        if configured is not None:
            parts = urlsplit(configured)
            path = parts.path.rstrip("/")
            prefix = (
                path[: -len(vendor.base_path)]
                if vendor.base_path and path.endswith(vendor.base_path)
                else path
            )
            upstreams[vendor.name] = check_upstream(f"{parts.scheme}://{parts.netloc}{prefix}")
    return upstreams


def _configured_base(variables: Sequence[str], environ: Mapping[str, str]) -> str | None:
    for name in variables:
        value = environ.get(name, "").strip()
        if value:
            try:
                check_upstream(value)
            except ValueError as error:
                raise ExecSetupError(f"{name}: {error} (nothing was run)") from None
            return value
    return None


def proxied_environment(
    environ: Mapping[str, str], url: str, *, token: str, replay: bool
) -> dict[str, str]:
    """``environ`` for a command run through the server at ``url``: each vendor's base URL
    variables pointed at its prefix (keeping the path the command's own had after its
    upstream), ``OPENPROGRAM_SERVE_URL`` at the server and ``OPENPROGRAM_SERVE_TOKEN`` its
    ``token`` (a test runner's setup names its sessions with it), and under ``replay`` (also
    when blocked: the server refuses every call) the placeholder keys where unset."""
    child = dict(environ)
    child[SERVE_URL_VARIABLE] = url
    child[TOKEN_VARIABLE] = token
    for vendor in VENDORS:
        configured = _configured_base(vendor.base_url_variables, environ)
        path = vendor.base_path
        if configured is not None:
            own = urlsplit(configured).path.rstrip("/")
            path = vendor.base_path if own.endswith(vendor.base_path) else ""
        for name in vendor.base_url_variables:
            child[name] = f"{url}/{vendor.name}{path}"
    if replay:
        set_placeholder_keys(child)
    return child
