"""Running ``openprogram`` in-process, and the recordings the CLI tests read.

``run`` invokes the typer app with :class:`typer.testing.CliRunner`, which keeps stdout and
stderr apart. Recordings are written row by row as the recorder writes them, except
:func:`record_echo_session`, which records a real two-call tool session the way a user
would: ``openprogram recordings record NAME``, then a fresh provider runtime that reads the
configuration and records the echo model's calls.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from typer.testing import CliRunner, Result

from openprogram.cli.app import app
from openprogram.config.paths import config_location, recordings_dir
from openprogram.providers.recording import encode_row, new_header

Row = dict[str, Any]


def run(*args: str, input: str | None = None) -> Result:
    """``openprogram recordings ARGS``."""
    return openprogram("recordings", *args, input=input)


def openprogram(*argv: str, input: str | None = None) -> Result:
    """``openprogram ARGV``, in this process."""
    return CliRunner().invoke(app, list(argv), input=input)


def error_line(result: Result) -> str:
    """The one ``error:`` line of a failed command; stderr holds nothing else but warnings."""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    others = [line for line in lines if not line.startswith(("error: ", "warning: "))]
    assert len(errors) == 1, f"expected one error line, got:\n{result.stderr}"
    assert not others, f"stderr holds more than one-line messages:\n{result.stderr}"
    return errors[0]


def store() -> Path:
    return recordings_dir()


def config_file() -> Path:
    return config_location().path


# --- recordings written row by row ---------------------------------------------------------


def request(call_index: int, *, model_id: str = "m1", text: str = "hi") -> Row:
    return {
        "type": "request",
        "call_index": call_index,
        "model": {"id": model_id, "api": "fake", "provider": "fake"},
        "context": {
            "system_prompt": None,
            "messages": [{"role": "user", "content": text, "timestamp": 1}],
            "tools": None,
        },
        "options": {},
    }


def text_events(text: str) -> list[Row]:
    return [
        {"type": "start", "api": "fake", "provider": "fake", "model": "m1"},
        {"type": "text_start", "content_index": 0},
        {"type": "text_delta", "content_index": 0, "delta": text},
        {"type": "text_end", "content_index": 0, "content": text},
        {
            "type": "done",
            "reason": "stop",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": text}],
                "api": "fake",
                "provider": "fake",
                "model": "m1",
                "usage": {"input": 3, "output": 5, "total_tokens": 8},
                "stop_reason": "stop",
                "timestamp": 1,
            },
        },
    ]


def call_rows(call_index: int, *, ended: bool = True, **request_fields: Any) -> list[Row]:
    """A request, its events and (unless ``ended`` is false: a truncated call) its call_end."""
    events = text_events(f"reply {call_index}")
    rows = [request(call_index, **request_fields)]
    rows += [
        {"type": "event", "call_index": call_index, "event_index": index, "event": event}
        for index, event in enumerate(events)
    ]
    if ended:
        rows.append(
            {
                "type": "call_end",
                "call_index": call_index,
                "event_count": len(events),
                "outcome": "complete",
            }
        )
    return rows


def write_rows(path: Path, rows: Sequence[Row | bytes], *, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = (row if isinstance(row, bytes) else encode_row(row) for row in rows)
    path.write_bytes(b"".join(lines))
    os.chmod(path, 0o600)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def write_recording(
    name: str,
    *,
    calls: int = 2,
    truncated: bool = False,
    created_at: str | None = None,
    model_id: str = "m1",
    mtime: float | None = None,
) -> Path:
    """``<store>/<name>.jsonl`` with ``calls`` calls; the last one cut short if ``truncated``."""
    header = new_header(name)
    if created_at is not None:
        header["created_at"] = created_at
    rows: list[Row] = [header]
    for index in range(calls):
        last = index == calls - 1
        rows += call_rows(index, ended=not (truncated and last), model_id=model_id)
    return write_rows(store() / f"{name}.jsonl", rows, mtime=mtime)


def write_corrupt_recording(path: Path) -> Path:
    """A recording whose line 3 is not JSON."""
    header = encode_row(new_header(path.stem))
    return write_rows(path, [header, encode_row(request(0)), b"{not json\n"])


def write_other_version_recording(path: Path) -> Path:
    return write_rows(path, [{**new_header(path.stem), "format_version": 99}])


# --- a real recording ----------------------------------------------------------------------


async def _tool_session() -> list[Any]:
    from openprogram.providers import (
        ECHO_MODEL,
        Context,
        Tool,
        ToolResultMessage,
        UserMessage,
        complete_simple,
    )

    lookup = Tool(
        name="lookup",
        description="Look a word up.",
        parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    )
    context = Context(
        system_prompt="You are a test agent.",
        messages=[UserMessage(content='/tool lookup {"q": "x"}')],
        tools=[lookup],
    )
    first = await complete_simple(ECHO_MODEL, context)
    context.messages.append(first)
    call = first.tool_calls[0]
    context.messages.append(
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="result-x")
    )
    second = await complete_simple(ECHO_MODEL, context)
    return [first, second]


def record_echo_session(name: str) -> Path:
    """``record NAME`` on the command line, then a "new process" making two echo calls."""
    from openprogram.providers.recorder import close_recording_writers
    from openprogram.providers.runtime import reset_provider_runtime

    result = run("record", name)
    assert result.exit_code == 0, result.stderr
    reset_provider_runtime()  # the next start: the runtime reads the configuration afresh
    try:
        asyncio.run(_tool_session())
    finally:
        close_recording_writers()
        reset_provider_runtime()
    return store() / f"{name}.jsonl"
