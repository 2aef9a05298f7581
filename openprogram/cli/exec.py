"""``openprogram exec [--record NAME | --replay NAME] [--proxy | --no-proxy] [--isolate |
--no-isolate] -- COMMAND [ARGS...]``: run a program with record/replay active — a Python one
in each of its Python processes from their first line, any other through a recording proxy
its base URLs point at; under replay, by default, in a network namespace with loopback only.

The command's standard streams are its own; what exec says — what was recorded or replayed, the
mismatch report, why the command ran without record/replay — goes to stderr after it has exited (and
why record/replay is blocked, before it starts too). exec exits with the command's status, or 1 when
the command exited 0 but replay found a problem or record/replay was blocked, or 2 when the command
could not be run with record/replay active (nothing ran) or ran without it."""

from __future__ import annotations

import typer

from openprogram.cli.output import EXIT_USAGE, abort, plural, reporting_errors, stderr, visible
from openprogram.cli.recording_sources import CLOCK_START, CLOCK_STEP, SEED, recording_sources
from openprogram.errors import ExecSetupError, RecordingFileError, RecordingNameError

CONTEXT = {"allow_interspersed_args": False, "ignore_unknown_options": True}

COMMAND = typer.Argument(
    ..., metavar="COMMAND", help="The program to run and its arguments, after --."
)
RECORD = typer.Option(
    None,
    "--record",
    metavar="NAME",
    help="Record into this recording (a name in the store, or a path); must hold no call.",
)
REPLAY = typer.Option(
    None, "--replay", metavar="NAME", help="Replay this recording (a name, or a path)."
)
"""exec's and serve's ``--record`` and ``--replay``: the same recordings, the same rules."""
PROXY = typer.Option(
    None,
    "--proxy/--no-proxy",
    help="Run the command through the recording proxy (by base URL), or activate it "
    "in-process (a shell script that starts Python); by default, by the command.",
    show_default=False,
)
ISOLATE = typer.Option(
    False,
    "--isolate",
    help="Linux: run the command in a network namespace with loopback only and the allowed "
    "hosts bridged in, under record too (the default under replay where it can be made); "
    "refused where it cannot.",
)
NO_ISOLATE = typer.Option(
    False,
    "--no-isolate",
    help="Run the command in this network, under replay too (Python's own connections are "
    "still refused).",
)
UNENFORCED = "replay is enforced for Python only here: {reason} (--no-isolate silences this)"
"""Said at start when the namespace a replay would run in cannot be made here."""


def exec_command(
    ctx: typer.Context,
    command: list[str] = COMMAND,
    record: str | None = RECORD,
    replay: str | None = REPLAY,
    keep_partial: bool = typer.Option(
        False,
        "--keep-partial",
        help="With --record: keep what a command that fails or is interrupted recorded.",
    ),
    proxy: bool | None = PROXY,
    isolate: bool = ISOLATE,
    no_isolate: bool = NO_ISOLATE,
    seed: int | None = SEED,
    clock_start: str | None = CLOCK_START,
    clock_step: int | None = CLOCK_STEP,
) -> None:
    """Run a program with record/replay on, from its first line.

    A Python program (python, or a script whose #! line names it) is recorded or replayed inside
    each of its Python processes: every call through openprogram's providers and every request
    through httpx, httpx2, requests/urllib3, aiohttp or urllib (the openai, anthropic, google-genai
    and boto3 SDKs). Any other program (node, a Go binary, a shell script), or one given --proxy,
    runs against a recording proxy that OPENAI_BASE_URL, ANTHROPIC_BASE_URL and
    GOOGLE_GEMINI_BASE_URL point at. Without --record or --replay, the configured mode applies.
    Under replay (and when blocked) the command runs, where Linux allows it, in a network namespace
    with loopback only, as your own user: nothing it starts reaches another server but the allowed
    hosts; --isolate asks for that under record too, --no-isolate turns it off. --seed,
    --clock-start and --clock-step drive openprogram.now() and random() in the Python processes
    while recording, so two recordings of one session hash alike; a clock also runs the command in
    UTC (give it with --replay too, for a time shown in the local zone). Exits with the command's
    status; 1 if it exited 0 but replay diverged, left calls unrequested, was blocked or had a
    connection stopped by the namespace; 2 if the command could not run with record/replay active.
    """
    from openprogram.serving.exec_isolation import probe_early

    _refuse_an_unknown_option(ctx, command[0])
    if not no_isolate and (isolate or record is None):
        probe_early()  # while what runs the command is imported
    from openprogram.serving.proxied_exec import exec_command as run

    sources = recording_sources(seed, clock_start, clock_step)
    if sources is not None and record is None and replay is None:
        abort(
            "--seed, --clock-start and --clock-step go with --record NAME (or --replay "
            "NAME): they drive the clock and randomness of the recording the command makes",
            EXIT_USAGE,
        )
    if isolate and no_isolate:
        abort("--isolate and --no-isolate contradict each other: give one of them", EXIT_USAGE)
    with reporting_errors(usage_errors=(ExecSetupError, RecordingNameError, RecordingFileError)):
        outcome = run(
            command,
            record=record,
            replay=replay,
            keep_partial=keep_partial,
            proxy=proxy,
            isolate=True if isolate else False if no_isolate else None,
            on_start=_tell_blocked,
            on_unisolated=_tell_unenforced,
            sources=sources,
        )
    _report(outcome)
    raise typer.Exit(outcome.exit_status)


EXEC_OPTIONS = (
    "--record",
    "--replay",
    "--keep-partial",
    "--proxy",
    "--no-proxy",
    "--isolate",
    "--no-isolate",
    "--seed",
    "--clock-start",
    "--clock-step",
    "--help",
    "-h",
)


def _refuse_an_unknown_option(ctx: typer.Context, first: str) -> None:
    """Options come before the command, as in every other command: a first word that looks
    like one (``--recrod``) is a misspelt option, not a program to run. The refusal is
    typer's own usage error (``Context.fail``, exit 2), worded here: typer either uses click
    or carries a copy of its own, whose exception types and wording differ by version."""
    if not first.startswith("-") or first == "-":
        return
    import difflib

    name = first.split("=", 1)[0]
    close = difflib.get_close_matches(name, EXEC_OPTIONS[:-2], n=1)
    suggestion = f" Did you mean '{close[0]}'?" if close else ""
    ctx.fail(f"No such option '{visible(name, keep_lines=False)}'.{suggestion}")


def _say(text: str, style: str = "") -> None:
    from rich.text import Text

    stderr().print(Text.assemble(("openprogram:", style or "bold"), " ", visible(text)))


def _tell_blocked(plan: object) -> None:
    """Before a blocked command starts: why, so that it is the first thing the user reads
    (before the program's own error for a refused call)."""
    from openprogram.activation.plan import RecordReplayPlan
    from openprogram.errors import RecordReplayBlockedError

    assert isinstance(plan, RecordReplayPlan)
    if plan.mode == "blocked":
        blocked = RecordReplayBlockedError(plan.blocked_reason or "")
        _say(f"{blocked}; the command runs with every call refused", "bold red")


def _tell_unenforced(reason: str) -> None:
    """Before a replay that runs without its namespace starts: why, in one line."""
    _say(UNENFORCED.format(reason=reason), "bold yellow")


def _report(outcome: object) -> None:
    from openprogram.activation.connection_guard import not_recorded_message
    from openprogram.activation.exec_run import ExecOutcome

    assert isinstance(outcome, ExecOutcome)
    line = _say
    plan = outcome.plan
    if plan is None:
        line("record/replay is off, so the command ran as it is (nothing recorded or replayed)")
        return
    for problem in outcome.problems:
        line(problem, "bold red")
    if plan.mode == "record" and outcome.discarded:
        line(
            f"the command exited with status {outcome.status}, so the "
            f"{plural(outcome.discarded, 'call')} it recorded "
            f"{'was' if outcome.discarded == 1 else 'were'} not kept in {plan.path} "
            "(a session cut short would not replay); run it again, or add --keep-partial "
            "to keep them",
            "bold yellow",
        )
    elif plan.mode == "record" and outcome.put_back:
        line(
            f"the command exited with status {outcome.status} before recording any call, so "
            f"nothing was kept in {plan.path}",
            "bold yellow",
        )
    elif plan.mode == "record":
        line(f"recorded {plural(outcome.calls, 'call')} into {plan.path}")
        if outcome.not_recorded:
            line(not_recorded_message(outcome.not_recorded), "bold yellow")
        if outcome.unwatched:
            from openprogram.isolation.connect_watch import unwatched_message

            line(unwatched_message(outcome.unwatched), "yellow")
    elif plan.mode == "replay" and not outcome.problems:
        line(f"{plural(outcome.calls, 'call')} replayed from {plan.path} and matched")


def register(app: typer.Typer) -> None:
    app.command("exec", context_settings=CONTEXT)(exec_command)
