"""``openprogram recordings show NAME|PATH``: each call as a person wants to read it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import (
    plural,
    print_json,
    reporting_errors,
    say,
    stdout,
    visible,
    warn,
)

if TYPE_CHECKING:
    from openprogram.recordings.show import CallView

PRIVACY_WARNING = (
    "recordings may hold personal data: prompts, replies and tool results are stored as "
    "they were (only credentials are removed)"
)


def show(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    call: int | None = typer.Option(None, "--call", help="Show only call N (from 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print the calls as JSON."),
) -> None:
    """Show each call: model, new input, streamed reply, tool calls, stop reason, usage."""
    from openprogram.config.paths import recordings_dir
    from openprogram.errors import RecordingFileError
    from openprogram.recordings.names import RecordingNameError, resolve_recording
    from openprogram.recordings.show import RecordingCallNotFoundError, view_recording

    warn(PRIVACY_WARNING)
    with reporting_errors(
        usage_errors=(RecordingNameError, RecordingFileError, RecordingCallNotFoundError)
    ):
        path = resolve_recording(recording, recordings_dir()).path
        shown = view_recording(path, call=call)
    if as_json:
        print_json(shown.to_json())
        return
    views = shown.calls
    if call is None:
        say(f"{path}: {plural(shown.total_calls, 'call')}")
    else:
        say(f"{path}: call {call} of {shown.total_calls}")
    say(f"transcript hash: {shown.transcript_hash}")
    for view in views:
        _render(view)
    if not views:
        say("(no calls recorded yet)")


def _render(view: CallView) -> None:
    from rich.text import Text

    console = stdout()
    ending = _ending(view)
    heading = f"  {_clip(view.model)}  {ending}"
    console.print(Text.assemble((f"call {view.call_index}", "bold"), heading))
    console.print(Text(f"  > {_clip(view.input_role or '?')}: {_clip(view.input_text)}"))
    if view.thinking_text:
        console.print(Text(f"  … thinking: {_clip(view.thinking_text)}", style="dim"))
    if view.reply_text:
        console.print(Text(f"  < {_clip(view.reply_text)}"))
    for name, arguments in view.tool_calls:
        shown = _clip(json.dumps(arguments, ensure_ascii=False))
        console.print(Text(f"  < tool call {_clip(name)} {shown}"))
    if view.error:
        console.print(Text(f"  ! {_clip(view.error)}", style="red"))


def _ending(view: CallView) -> str:
    if view.truncated:
        return f"TRUNCATED after {plural(view.event_count, 'event')}"
    parts = [f"stop reason: {view.stop_reason}" if view.stop_reason else f"outcome: {view.outcome}"]
    if view.usage:
        parts.append(f"tokens: {view.usage.get('input', 0)} in, {view.usage.get('output', 0)} out")
    return visible(" · ".join(parts), keep_lines=False)


def _clip(text: str, limit: int = 400) -> str:
    """One line of at most ``limit`` characters (then ``…``), newlines shown as ``⏎``, control
    characters escaped (see :func:`visible`)."""
    flat = text.replace("\n", "⏎ ")
    clipped = flat if len(flat) <= limit else flat[:limit] + "…"
    return visible(clipped, keep_lines=False)


def register(app: typer.Typer) -> None:
    app.command("show")(show)
