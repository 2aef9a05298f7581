"""``openprogram serve``: a recording proxy for the OpenAI, Anthropic and Gemini APIs on
loopback, for programs in any language.

The server's addresses go to stdout once it listens (``OPENPROGRAM_SERVE_URL=…`` and
``OPENPROGRAM_SERVE_TOKEN=…`` first, lines a test runner's setup can read, then the base URLs to
give the clients and, when it replays, the placeholder keys ``exec --replay`` gives a program: the
lines are all a client needs); what it does — a line per request, every pass that begins, every
mismatch, every refusal — goes to stderr as it happens. At SIGINT or SIGTERM it finishes its
recordings, says what each session did (in how many passes), and exits 1 when a request differed
from its recording or recorded calls were never asked for, else 0; 2 when it cannot start."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path

import typer

from openprogram.body_limit import MAX_BODY_SIZE_MB, MEBIBYTE
from openprogram.cli.exec import RECORD, REPLAY
from openprogram.cli.output import EXIT_USAGE, abort, plural, reporting_errors, say, warn
from openprogram.errors import (
    ExecSetupError,
    RecordingFileError,
    RecordingNameError,
    ServeSetupError,
)

MISSING_AIOHTTP = (
    "openprogram serve needs aiohttp, which is not installed: pip install 'openprogram[serve]'"
)

MORE_UPSTREAMS = typer.Argument(
    None,
    metavar="VENDOR=URL",
    show_default=False,
    help="More upstreams, as --upstream takes them: --upstream openai=URL anthropic=URL.",
)
UPSTREAM = typer.Option(
    [],
    "--upstream",
    metavar="VENDOR=URL",
    help="Forward a vendor (openai, anthropic, gemini) to this URL instead of its public "
    "API: a litellm proxy, a local vLLM. Several may follow one --upstream.",
)
TOKEN_FILE = typer.Option(
    None,
    "--token-file",
    metavar="PATH",
    help="Also write the server's token to this file (0600) while it runs.",
)
ALLOW_ORIGIN = typer.Option(
    [],
    "--allow-origin",
    metavar="ORIGIN",
    help="Answer requests from the browser page at this origin (http://localhost:3000); "
    "repeatable. Any other page is refused.",
)
ONCE = typer.Option(
    False,
    "--once",
    help="Replay each recording once per server start: a run after the whole recording was "
    "served is a mismatch (default: each run of the program that starts again from the "
    "first recorded call gets the recording again, a new pass).",
)
FOLDER = typer.Option(
    None,
    "--dir",
    metavar="DIR",
    help="Where the recordings that requests and sessions name are (default: the store).",
)


def serve_command(
    more_upstreams: list[str] | None = MORE_UPSTREAMS,
    record: str | None = RECORD,
    replay: str | None = REPLAY,
    host: str = typer.Option(
        "127.0.0.1", "--host", metavar="HOST", help="The loopback address to listen on."
    ),
    port: int = typer.Option(
        7878, "--port", metavar="PORT", help="The port to listen on (0: a free one)."
    ),
    upstream: list[str] = UPSTREAM,
    folder: Path | None = FOLDER,
    timeout: float = typer.Option(
        600.0, "--timeout", metavar="SECONDS", help="The longest wait for the upstream's bytes."
    ),
    max_request_size: int = typer.Option(
        MAX_BODY_SIZE_MB,
        "--max-request-size",
        metavar="MB",
        help="The largest request body accepted.",
    ),
    grace: float = typer.Option(
        10.0,
        "--grace",
        metavar="SECONDS",
        help="At a stop, how long requests in flight may take to finish.",
    ),
    quiet: bool = typer.Option(
        False, "--quiet", help="Log nothing while serving: only what each session did, at the end."
    ),
    token_file: Path | None = TOKEN_FILE,
    allow_origin: list[str] = ALLOW_ORIGIN,
    once: bool = ONCE,
) -> None:
    """Serve the OpenAI, Anthropic and Gemini APIs on loopback, recording or replaying.

    Point a program in any language at it by base URL (OPENAI_BASE_URL, ANTHROPIC_BASE_URL,
    GOOGLE_GEMINI_BASE_URL): under record each request is forwarded to its vendor and the exchange
    recorded, the response streamed through as it arrives; under replay it is answered from the
    recording and nothing is sent, again for each run of the program (--once: one run per server
    start). Without --record or --replay, the configured mode applies. Tests can name their own
    recording per request (the header x-openprogram-recording) or open sessions (POST
    /__openprogram/sessions), sending the token the server prints (x-openprogram-token). Stops at
    Ctrl-C or SIGTERM, finishing the recordings; exits 1 if a request differed from the recording or
    recorded calls were never requested."""
    if importlib.util.find_spec("aiohttp") is None:
        abort(MISSING_AIOHTTP, EXIT_USAGE)
    from openprogram.serving.routes import parse_upstreams
    from openprogram.serving.running import (
        ServeOptions,
        check_host,
        open_sessions,
        serve_until_stopped,
        server_plan,
    )
    from openprogram.serving.trust import parse_origin

    usage = (ServeSetupError, ExecSetupError, RecordingNameError, RecordingFileError)
    with reporting_errors(usage_errors=usage):
        try:
            upstreams = parse_upstreams([*upstream, *(more_upstreams or ())])
            origins = tuple(parse_origin(origin) for origin in allow_origin)
        except ValueError as error:
            raise ServeSetupError(str(error)) from None
        if port < 0 or port > 65535 or timeout <= 0 or max_request_size <= 0 or grace < 0:
            raise ServeSetupError(
                "--port is 0 to 65535, --timeout and --max-request-size above 0, --grace 0 or more"
            )
        check_host(host)
        options = ServeOptions(
            host=host,
            port=port,
            upstreams=upstreams,
            folder=folder,
            read_timeout=timeout,
            max_request_size=max_request_size * MEBIBYTE,
            grace=grace,
            token_file=token_file,
            allowed_origins=origins,
        )
        plan, settings = server_plan(record=record, replay=replay)
        table = open_sessions(plan, folder, settings, once=once)
        _log_to_stderr(quiet)
        outcome = serve_until_stopped(table, options, ready=_announce)
    _report(outcome, own=table.own is not None)
    raise typer.Exit(outcome.exit_status)


def _report(outcome: object, *, own: bool) -> None:
    """What each session did: the server's own recording in a line, the sessions of tests
    in one (a suite opens hundreds), then every problem, naming its session."""
    from openprogram.serving.running import ServeOutcome

    assert isinstance(outcome, ServeOutcome)
    accounts = list(outcome.accounts)
    if own:
        mine = accounts.pop(0)
        served = plural(mine.calls, "call")
        if mine.mode == "record":
            say(f"recorded {served} into {mine.path}")
        elif mine.passes > 1 and mine.ok:
            say(f"{served} replayed from {mine.path} in {mine.passes} passes, all matched")
        elif mine.passes > 1:
            matched = mine.passes - mine.passes_with_problems
            say(
                f"{served} replayed from {mine.path} in {mine.passes} passes: {matched} "
                f"matched, {mine.passes_with_problems} with problems"
            )
        elif mine.ok:
            say(f"{served} replayed from {mine.path} and matched")
    if accounts:
        recorded = [a for a in accounts if a.mode == "record"]
        replayed = [a for a in accounts if a.mode == "replay"]
        calls = sum(a.calls for a in recorded)
        say(
            f"{plural(len(accounts), 'session')}: {len(recorded)} recorded "
            f"({plural(calls, 'call')}), {len(replayed)} replayed, "
            f"{sum(not a.ok for a in accounts)} with problems"
        )
    for account in outcome.accounts:
        for problem in account.problems:
            warn(f"{account.name}: {problem}")


def _announce(listening: object) -> None:
    from openprogram.activation.boundaries import set_placeholder_keys
    from openprogram.serving.routes import VENDORS
    from openprogram.serving.running import Listening

    assert isinstance(listening, Listening)
    own = listening.server.table.own
    if own is None:
        what = "no recording of its own: each request or session names one"
    elif own.mode == "record":
        what = f"recording into {own.path}"
    else:
        what = f"replaying {own.path}"
    say(f"openprogram serve: {what}")
    say(f"  OPENPROGRAM_SERVE_URL={listening.url}")
    say(f"  OPENPROGRAM_SERVE_TOKEN={listening.token}")
    for vendor in VENDORS:
        say(f"  {vendor.base_url_variables[0]}={listening.url}/{vendor.name}{vendor.base_path}")
    if own is not None and own.mode == "replay":
        # the keys exec --replay gives its command, where unset: the SDKs refuse to start
        # without one, though nothing is sent
        keys: dict[str, str] = {}
        set_placeholder_keys(keys)
        for name, value in keys.items():
            say(f"  {name}={value}")
    say("Ctrl-C stops it (its recordings are finished first).")
    sys.stdout.flush()


def _log_to_stderr(quiet: bool) -> None:
    from openprogram.serving.server import logger

    for handler in [h for h in logger.handlers if getattr(h, "_openprogram_cli", False)]:
        logger.removeHandler(handler)  # an earlier run's (the tests run the CLI in-process)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("openprogram serve: %(message)s"))
    handler._openprogram_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    logger.setLevel(logging.CRITICAL if quiet else logging.INFO)
    logger.propagate = False


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_command)
