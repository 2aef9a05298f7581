"""``openprogram recordings verify NAME|PATH [-- COMMAND...]``: re-run a recorded session
under replay — through the agent loop, or by running the program that made it.

With ``--json`` the JSON is the only thing on stdout: the command's own stdout goes to
stderr while it runs (:func:`_stdout_to_stderr`), so ``verify --json -- COMMAND | jq`` reads
verify's result whatever the command prints."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

import typer

from openprogram.cli.exec import NO_ISOLATE, UNENFORCED
from openprogram.cli.output import (
    EXIT_FAILURE,
    EXIT_USAGE,
    abort,
    plural,
    print_json,
    reporting_errors,
    say,
    warn,
)
from openprogram.cli.run import TOOL_POLICY, parsed_tool_policies
from openprogram.errors import (
    ExecSetupError,
    RecordingFileError,
    RecordingNameError,
    VerifySetupError,
)

COMMAND = typer.Argument(
    None,
    metavar="COMMAND",
    help="A program to run under replay instead (after --), e.g. -- python agent.py.",
    show_default=False,
)


def verify(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    command: list[str] | None = COMMAND,
    tools: str | None = typer.Option(
        None,
        "--tools",
        metavar="MODULE:ATTR",
        help="The session's own tools: an AgentTool, a list of them, or a function returning one.",
    ),
    tool_policy: list[str] | None = TOOL_POLICY,
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    no_isolate: bool = NO_ISOLATE,
) -> None:
    """Re-run the recorded session under replay, offline, and check every call.

    Without a command, the session is rebuilt from its first call and run through the
    current agent loop. With `-- COMMAND`, the command is run with the recording replayed
    in each of its Python processes (as `openprogram exec --replay` does): SDK (HTTP) calls
    included, and on Linux in a network namespace with loopback only (--no-isolate: not).
    Prints ✔ and the transcript hash when every call matches and is consumed (and the
    command exited 0); otherwise the first divergence and exit 1. With --json the
    JSON alone is printed on stdout, the command's own output on stderr. Exit 2 when the
    recording, --tools or the command cannot be used. The session's tools run live unless
    --tool-policy (or record_replay.tools) says replay (their taped results) or check."""
    from openprogram.config.paths import recordings_dir
    from openprogram.harness.verification import verify_command, verify_recording
    from openprogram.store.names import resolve_recording

    if command and tools is not None:
        abort("--tools applies to sessions rebuilt without a command; drop it", EXIT_USAGE)
    if no_isolate and not command:
        abort("--no-isolate applies to a command run under replay (-- COMMAND)", EXIT_USAGE)
    policies = parsed_tool_policies(tool_policy)
    usage_errors = (RecordingNameError, RecordingFileError, VerifySetupError, ExecSetupError)
    with reporting_errors(usage_errors=usage_errors):
        path = resolve_recording(recording, recordings_dir()).path
        if command:
            with _stdout_to_stderr() if as_json else contextlib.nullcontext():
                result = verify_command(
                    path,
                    command,
                    tool_policies=policies,
                    isolate=False if no_isolate else None,
                    on_unisolated=_tell_unenforced,
                )
        else:
            result = verify_recording(path, tools=tools, tool_policies=policies)
    if as_json:
        print_json(result.to_json())
    elif result.ok:
        say(f"✔ {path}: {plural(result.calls, 'call')} replayed and matched")
        say(f"transcript hash: {result.transcript_hash}")
    else:
        say(f"✘ {path}: the session diverged from the recording")
        say(result.divergence or "")
    if not result.ok:
        raise typer.Exit(EXIT_FAILURE)


def _tell_unenforced(reason: str) -> None:
    """Before a replay that runs without its namespace starts: why, in one line."""
    warn(UNENFORCED.format(reason=reason))


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """For the block, this process's standard output (file descriptor 1, which the command
    inherits, with its Python processes and whatever they start) is its standard error."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no standard output at all: nothing to keep apart
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def register(app: typer.Typer) -> None:
    app.command("verify")(verify)
