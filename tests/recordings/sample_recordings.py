"""Sample recordings for the store tests: rows written directly, and a real echo session.

Rows are built as the recorder writes them (``encode_row``: compact, ``type`` first), so the
summary's fast path reads them; ``write_rows`` can lay them out differently to force the
strict reader.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessage,
    Context,
    EchoProvider,
    Model,
    RecordingProvider,
    Tool,
    ToolResultMessage,
    UserMessage,
    complete_simple,
    register_api_provider,
    scoped_api_providers,
)
from openprogram.providers.recording import encode_row, new_header

Row = dict[str, Any]

LOOKUP_TOOL = Tool(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


def header(**overrides: Any) -> Row:
    row = new_header("sample")
    row.update(overrides)
    return row


def request(
    call_index: int,
    *,
    model_id: str = "m1",
    api: str = "fake",
    text: str = "hi",
    headers: dict[str, str] | None = None,
) -> Row:
    return {
        "type": "request",
        "call_index": call_index,
        "model": {"id": model_id, "api": api, "provider": api, "headers": headers},
        "context": {
            "system_prompt": "be brief",
            "messages": [{"role": "user", "content": text, "timestamp": 1}],
            "tools": None,
        },
        "options": {"temperature": None},
    }


def text_events(deltas: Sequence[str]) -> list[Row]:
    text = "".join(deltas)
    return [
        {"type": "start", "api": "fake", "provider": "fake", "model": "m1"},
        {"type": "text_start", "content_index": 0},
        *({"type": "text_delta", "content_index": 0, "delta": delta} for delta in deltas),
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


def call_rows(
    call_index: int,
    payloads: Sequence[Row],
    *,
    outcome: str | None = "complete",
    error: Row | None = None,
    **request_fields: Any,
) -> list[Row]:
    """Request, events and (unless ``outcome`` is None: truncated) the call_end."""
    rows = [request(call_index, **request_fields)]
    rows += [
        {"type": "event", "call_index": call_index, "event_index": index, "event": payload}
        for index, payload in enumerate(payloads)
    ]
    if outcome is not None:
        end: Row = {
            "type": "call_end",
            "call_index": call_index,
            "event_count": len(payloads),
            "outcome": outcome,
        }
        if error is not None:
            end["error"] = error
        rows.append(end)
    return rows


def write_rows(
    path: Path,
    rows: Sequence[Row | bytes],
    *,
    newline: bytes = b"\n",
    tail: bytes = b"",
    mtime: float | None = None,
) -> Path:
    """Each row as the recorder writes it (bytes as given), ended by ``newline``; then ``tail``."""
    lines = (row if isinstance(row, bytes) else encode_row(row)[:-1] for row in rows)
    path.write_bytes(b"".join(line + newline for line in lines) + tail)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def hand_formatted(rows: Sequence[Row]) -> list[bytes]:
    """The rows as a person might write them: spaces after separators, keys sorted."""
    return [orjson.dumps(row, option=orjson.OPT_SORT_KEYS).replace(b'":', b'": ') for row in rows]


def simple_recording(path: Path, calls: int = 2, *, created_at: str | None = None) -> Path:
    rows: list[Row] = [header() if created_at is None else header(created_at=created_at)]
    for index in range(calls):
        rows += call_rows(index, text_events(["Hel", "lo"]))
    return write_rows(path, rows)


async def record_echo_tool_session(
    path: Path, model: Model | None = None
) -> list[AssistantMessage]:
    """Two echo calls: the model asks for ``lookup``, the tool answers, the model replies."""
    model = model or ECHO_MODEL
    context = Context(
        system_prompt="You are a test agent.",
        messages=[UserMessage(content='/tool lookup {"q": "x"}')],
        tools=[LOOKUP_TOOL],
    )
    with scoped_api_providers():
        register_api_provider("echo", RecordingProvider(EchoProvider(), path))
        first = await complete_simple(model, context)
        context.messages.append(first)
        call = first.tool_calls[0]
        context.messages.append(
            ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content="result-x")
        )
        second = await complete_simple(model, context)
    return [first, second]
