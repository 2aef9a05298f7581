"""``openprogram recordings show NAME|PATH``: each call as a person wants to read it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from openprogram.cli.output import plural, print_json, reporting_errors, say, stdout, visible, warn
from openprogram.errors import RecordingCallNotFoundError, RecordingFileError, RecordingNameError

if TYPE_CHECKING:
    from openprogram.store.show import CallView, TapeView
    from openprogram.vendors import HttpExchange

HTML = typer.Option(
    None,
    "--html",
    metavar="FILE",
    help="Write one self-contained HTML page (no script, nothing fetched) to FILE instead.",
)


def write_page(path: Path, page: str) -> None:
    """Write a review page, private (``0600``: it shows what the recording holds)."""
    from openprogram.private_files import replace_file

    replace_file(path.expanduser().absolute(), page.encode("utf-8"), mode=0o600)


PRIVACY_WARNING = (
    "recordings may hold personal data: prompts, replies and tool results are stored as "
    "they were (only credentials are removed)"
)


def show(
    recording: str = typer.Argument(..., help="A recording name in the store, or a path."),
    call: int | None = typer.Option(None, "--call", help="Show only call N (from 0)."),
    as_json: bool = typer.Option(False, "--json", help="Print the calls as JSON."),
    html: Path | None = HTML,
) -> None:
    """Show each call: model, new input, streamed reply, tool calls, stop reason, usage; an
    HTTP call also shows its request and what came back (status, SSE events or body). Then
    each tape entry: its tape and index, arguments, and result or exception. --html FILE
    writes the session as one self-contained page to review instead."""
    from openprogram.config.paths import recordings_dir
    from openprogram.provider_boundary.codec import read_recording
    from openprogram.store.names import resolve_recording
    from openprogram.store.show import view_of
    from openprogram.store.status import not_recorded_note

    warn(PRIVACY_WARNING)
    with reporting_errors(
        usage_errors=(RecordingNameError, RecordingFileError, RecordingCallNotFoundError)
    ):
        path = resolve_recording(recording, recordings_dir()).path
        read = read_recording(path)
        shown = view_of(read, path, call=call)
        if html is not None:
            from openprogram.store.html_pages import recording_page

            write_page(html, recording_page(shown, read))
            say(f"{path}: the page is {html}")
            return
    if as_json:
        print_json(shown.to_json())
        return
    views = shown.calls
    if call is None:
        say(f"{path}: {plural(shown.total_calls, 'call')}")
    else:
        say(f"{path}: call {call} of {shown.total_calls}")
    say(f"transcript hash: {shown.transcript_hash}")
    if shown.not_recorded:
        warn(not_recorded_note(shown.not_recorded))
    for view in views:
        _render(view)
    if not views:
        say("(no calls recorded yet)")
    if shown.tapes:
        count = len(shown.tapes)
        say(f"{count} tape {'entry' if count == 1 else 'entries'}:")
        for entry in shown.tapes:
            _render_tape(entry)


def _render_tape(view: TapeView) -> None:
    from rich.text import Text

    args = json.dumps(view.args, ensure_ascii=False) if view.args else ""
    heading = f"  {_clip(args)}" if args else ""
    if view.within is not None:
        heading += f"  (within {_clip(view.within)})"
    console = stdout()
    console.print(Text.assemble((f"tape {_clip(view.label)}", "bold"), heading))
    if view.error is not None:
        console.print(Text(f"  ! {_clip(view.error)}", style="red"))
        return
    result = json.dumps(view.result, ensure_ascii=False)
    mark = "  (non-deterministic)" if view.nondeterministic else ""
    console.print(Text(f"  → {_clip(result)}{mark}"))


def _render(view: CallView) -> None:
    from rich.text import Text

    console = stdout()
    ending = _ending(view)
    heading = f"  {_clip(view.model)}  {ending}"
    console.print(Text.assemble((f"call {view.call_index}", "bold"), heading))
    if view.http is not None:
        console.print(Text(f"  {_clip(exchange_line(view.http), limit=600)}"))
    if view.input_role is not None or view.http is None:
        console.print(Text(f"  > {_clip(view.input_role or '?')}: {_clip(view.input_text)}"))
    if view.thinking_text:
        console.print(Text(f"  … thinking: {_clip(view.thinking_text)}", style="dim"))
    if view.reply_text:
        console.print(Text(f"  < {_clip(view.reply_text)}"))
    for name, arguments in view.tool_calls:
        text = (
            arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        )
        console.print(Text(f"  < tool call {_clip(name)} {_clip(text)}"))
    said = view.http is not None and view.error == view.http.transport_error
    if view.error and not said:
        console.print(Text(f"  ! {_clip(view.error)}", style="red"))


def exchange_line(exchange: HttpExchange) -> str:
    """``POST https://api.openai.com/v1/chat/completions → 200, 14 SSE events (3.1 KB)``,
    ``→ 429, JSON body (187 B)``, ``→ connection error: httpx2.ConnectError: …``; a stream
    cut mid-way ends ``, then httpx.ReadError: …``."""
    from openprogram.cli.recordings.list_layout import size_text

    request = f"{exchange.method} {exchange.url} →"
    if exchange.status is None:
        if exchange.transport_error is not None:
            return f"{request} connection error: {exchange.transport_error}"
        return f"{request} no response recorded"
    if exchange.body == "sse":
        body = f"{plural(exchange.sse_events, 'SSE event')} ({size_text(exchange.body_size)})"
    elif exchange.body == "eventstream":
        messages = plural(exchange.sse_events, "event-stream message")
        body = f"{messages} ({size_text(exchange.body_size)})"
    elif exchange.body in ("json", "text", "binary"):
        kind = "JSON" if exchange.body == "json" else exchange.body
        body = f"{kind} body ({size_text(exchange.body_size)})"
    else:
        body = "no body"
    line = f"{request} {exchange.status}, {body}"
    if exchange.transport_error is not None:
        line += f", then {exchange.transport_error}"
    return line


def _ending(view: CallView) -> str:
    if view.truncated:
        return f"TRUNCATED after {plural(view.event_count, 'event')}"
    parts = [f"stop reason: {view.stop_reason}" if view.stop_reason else f"outcome: {view.outcome}"]
    tokens = view.tokens
    if tokens is not None:
        parts.append(f"tokens: {tokens[0]} in, {tokens[1]} out")
    return visible(" · ".join(parts), keep_lines=False)


def _clip(text: str, limit: int = 400) -> str:
    """One line of at most ``limit`` characters (then ``…``), newlines shown as ``⏎``, control
    characters escaped (see :func:`visible`)."""
    flat = text.replace("\n", "⏎ ")
    clipped = flat if len(flat) <= limit else flat[:limit] + "…"
    return visible(clipped, keep_lines=False)


def register(app: typer.Typer) -> None:
    app.command("show")(show)
