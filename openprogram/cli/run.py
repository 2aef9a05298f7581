"""``openprogram run PROMPT``: one agent session, the reply streamed as it arrives.

stdout holds the reply text and nothing else, so a recorded run and its replay print the
same stdout; tool calls and their results are shown compactly on stderr. ``--json`` prints
the transcript instead (without the ``timestamp`` fields, so it is identical too).

``--tool-policy`` (:data:`TOOL_POLICY`), how replay treats the agent tools, is shared with
``recordings verify``."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import EXIT_USAGE, abort, plural, print_json, redacted, reporting_errors
from openprogram.errors import (
    MissingApiKeyError,
    ModelReferenceError,
    ReplayMismatch,
    UnknownApiError,
)

if TYPE_CHECKING:
    from openprogram.agent.loop import AgentEvent, AgentRun
    from openprogram.providers.types import ToolCall, ToolResultMessage


TOOL_POLICY = typer.Option(
    None,
    "--tool-policy",
    metavar="[NAME=]POLICY",
    help=(
        "How replay treats the agent tools: NAME=POLICY, or POLICY for every tool; POLICY is "
        "live (run it, the default), replay (serve its taped result) or check (run it, fail "
        "when its result differs). Repeatable; over record_replay.tools."
    ),
)


def parsed_tool_policies(values: list[str] | None) -> dict[str, str]:
    """The policies given, by tool name (``*`` for every tool); a malformed one exits 2."""
    from openprogram.recording.tape_replay import parse_tool_policies

    try:
        return dict(parse_tool_policies(values or []))
    except ValueError as error:
        abort(f"--tool-policy: {error}", EXIT_USAGE)


NOTE_WIDTH = 100
"""Tool notes on stderr are cut to about this many characters."""


def run(
    prompt: str = typer.Argument(..., help="What to ask the model."),
    model: str | None = typer.Option(
        None,
        "--model",
        metavar="API:MODEL_ID",
        help="The model, split at the first colon (default: config default_model, else echo).",
    ),
    system: str | None = typer.Option(None, "--system", help="A system prompt."),
    no_tools: bool = typer.Option(
        False, "--no-tools", help="Offer no tools (default: read_file and list_directory)."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="Print the whole transcript as JSON instead of streaming."
    ),
    tool_policy: list[str] | None = TOOL_POLICY,
) -> None:
    """Run one agent session: stream the reply, run the tools it asks for, until it answers.

    The built-in tools read files and list folders under the current directory only.
    Exits 1 on an error reply, a replay mismatch, recorded calls left unreplayed,
    record/replay blocked or a missing API key; 2 on a bad --model. Under replay the tools run
    live unless --tool-policy (or record_replay.tools) says replay or check."""
    import asyncio

    from openprogram.agent.session import first_replay_mismatch, run_session

    policies = parsed_tool_policies(tool_policy)
    display = None if as_json else LiveDisplay()
    with reporting_errors(usage_errors=(ModelReferenceError,), session=True):
        try:
            result = asyncio.run(
                run_session(
                    prompt,
                    model=model,
                    system_prompt=system,
                    use_builtin_tools=not no_tools,
                    on_event=display.show if display is not None else None,
                    tool_policies=policies,
                )
            )
        except UnknownApiError as error:
            if model is not None and error.api == model.strip().partition(":")[0]:
                abort(unknown_api_message(error, "--model"), EXIT_USAGE)
            abort(unknown_api_message(error, f"default_model of {config_path()}"))
        except MissingApiKeyError as error:
            abort(missing_key_message(error))
        except ReplayMismatch as error:
            first = first_replay_mismatch()  # a drift kept earlier (a checked tool) comes first
            abort(first if first is not None else error, redact=redacted)
        finally:
            if display is not None:
                display.finish()
    if as_json:
        print_json(result.to_json())
    if not result.run.ok:
        abort(redacted(stop_message(result.run)))
    if result.mismatch is not None:
        abort(result.mismatch, redact=redacted)
    if result.unconsumed is not None:
        abort(redacted(str(result.unconsumed)))


def config_path() -> str:
    """Where the configuration file is (or would be), for advice."""
    from openprogram.config.paths import config_location

    return str(config_location().path)


def unknown_api_message(error: UnknownApiError, where: str) -> str:
    """``unknown api 'x' in --model (known: a, b; did you mean a?)``"""
    known = ", ".join(error.registered) if error.registered else "none"
    guess = f"; did you mean {error.closest}?" if error.closest else ""
    return f"unknown api {error.api!r} in {where} (known: {known}{guess})"


def missing_key_message(error: MissingApiKeyError) -> str:
    """Which variable to set, and where another one can be named: the command-line wording
    of a missing key (the library's speaks of ``options.api_key``, which a shell has not)."""
    if error.env_var is None:
        return (
            f"no API key for api {error.api!r}, and its provider names no environment "
            "variable to read one from"
        )
    return (
        f"no API key for api {error.api!r}: set {error.env_var}, or name the variable that "
        f"holds the key with api_key_env in [providers.{error.api}] of {config_path()}"
    )


def stop_message(session: AgentRun) -> str:
    final = session.final
    if session.stopped_because == "max_iterations":
        return (
            f"the session stopped after {plural(session.calls, 'model call')} with tool calls "
            "still pending (the iteration limit)"
        )
    reason = final.error_message or "no message given"
    if session.stopped_because == "aborted":
        return f"the model's reply was aborted: {reason}"
    return f"the model replied with an error: {reason}"


class LiveDisplay:
    """Streams reply text to stdout, each reply's text on lines of its own; tool calls and
    results go to stderr as one line each."""

    def __init__(self) -> None:
        self._line_open = False
        self._streamed: dict[int, str] = {}

    def show(self, event: AgentEvent) -> None:
        from openprogram.agent.loop import ToolCallFinished, ToolCallStarted
        from openprogram.providers.events import (
            StartEvent,
            TextDeltaEvent,
            TextEndEvent,
            TextStartEvent,
        )

        if isinstance(event, StartEvent):
            self._streamed = {}
        elif isinstance(event, TextStartEvent):
            self._end_line()
            self._streamed[event.content_index] = ""
        elif isinstance(event, TextDeltaEvent):
            self._streamed[event.content_index] = (
                self._streamed.get(event.content_index, "") + event.delta
            )
            self._write(event.delta)
        elif isinstance(event, TextEndEvent):
            seen = self._streamed.pop(event.content_index, "")
            if event.content.startswith(seen):  # text a provider sent whole, not as deltas
                self._write(event.content[len(seen) :])
        elif isinstance(event, ToolCallStarted):
            self._note(call_note(event.call))
        elif isinstance(event, ToolCallFinished):
            self._note(result_note(event.result))

    def finish(self) -> None:
        self._end_line()

    def _write(self, text: str) -> None:
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
            self._line_open = not text.endswith("\n")

    def _end_line(self) -> None:
        if self._line_open:
            self._write("\n")

    def _note(self, line: str) -> None:
        from rich.text import Text

        from openprogram.cli.output import stderr

        self._end_line()
        stderr().print(Text(line, style="dim"))


def call_note(call: ToolCall) -> str:
    """``→ read_file {"path": "README.md"}``"""
    return _cut(f"→ {call.name} {json.dumps(call.arguments, ensure_ascii=False)}")


def result_note(result: ToolResultMessage) -> str:
    """``← 1234 chars: <first line>``, or ``← error: <message>``."""
    text = result.text
    first_line = text.strip().split("\n", 1)[0]
    if result.is_error:
        return _cut(f"← error: {first_line}")
    size = plural(len(text), "char")
    return _cut(f"← {size}: {first_line}" if first_line else f"← {size}")


def _cut(line: str) -> str:
    return line if len(line) <= NOTE_WIDTH else line[: NOTE_WIDTH - 1] + "…"


def register(app: typer.Typer) -> None:
    app.command("run")(run)
