"""A session whose rows use everything whose meaning changed from format_version 1 to 2,
written by openprogram's own recorders into one file.

Call 0 (provider, ``echo``) asks for a tool; call 1 repeats its conversation and adds the
tool call and its result, so the writer stores it against call 0 (a ``base``: only its two
new messages are in its row). Calls 2 and 3 are HTTP calls (``"boundary": "http"``) to a
Chat Completions server that writes spaced JSON, so their events keep the text as it came
(``raw``); call 3 repeats call 2's conversation and is stored against it. One ``tape`` row
between them.

It uses nothing but the recorders' public entry points, so the same function runs under an
openprogram from before the version changed: ``data/version_one_session.jsonl`` is its file
as that openprogram wrote it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openprogram.providers import (
    ECHO_MODEL,
    Context,
    DoneEvent,
    EchoProvider,
    RecordingProvider,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram.recording.writer import writer_for

CHAT_URL = "https://api.openai.com/v1/chat/completions"
TOOL_CALL_ID = "call_Qm4kR2sVx8TzLp0aWn5bYc1d"
"""The id the server made up for its tool call (call 2), which call 3 sends back."""


def write_changed_rows_session(path: Path) -> None:
    """Record the session into ``path`` (a new file)."""
    asyncio.run(_provider_calls(path))
    writer = writer_for(path)
    first = [{"role": "user", "content": "What is in notes.txt?"}]
    _http_call(writer, first, _sse_answer())
    writer.write_feature_row(
        {"type": "tape", "tape": "read_notes", "args": {"path": "notes.txt"}, "result": "hi"},
        "tapes",
    )
    second = [
        *first,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": TOOL_CALL_ID,
                    "type": "function",
                    "function": {"name": "read_notes", "arguments": '{"path": "notes.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": TOOL_CALL_ID, "content": "hi"},
    ]
    _http_call(writer, second, [_body_answer("notes.txt says hi")])


async def _provider_calls(path: Path) -> None:
    recorder = RecordingProvider(EchoProvider(), path)
    ask = UserMessage(content='/tool read_file {"path": "notes.txt"}', timestamp=1)
    first = [event async for event in recorder.stream_simple(ECHO_MODEL, Context(messages=[ask]))]
    done = first[-1]
    assert isinstance(done, DoneEvent)
    reply = done.message
    tool_call = reply.content[0]
    assert isinstance(tool_call, ToolCall)
    result = ToolResultMessage(
        tool_call_id=tool_call.id,
        tool_name="read_file",
        content=[TextContent(text="hello from a file")],
        timestamp=2,
    )
    context = Context(messages=[ask, reply, result])
    _ = [event async for event in recorder.stream_simple(ECHO_MODEL, context)]


def _http_call(writer: Any, messages: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    call = writer.open_call(
        {
            "boundary": "http",
            "method": "POST",
            "url": CHAT_URL,
            "headers": {"content-type": "application/json"},
            "body": {"model": "gpt-4o-mini", "messages": messages, "stream": True},
        }
    )
    content_type = "text/event-stream" if events[-1]["type"] == "sse" else "application/json"
    call.write_event(
        {"type": "http_response", "status": 200, "headers": {"content-type": content_type}}
    )
    for event in events:
        call.write_event(event)
    call.end_call("complete")


def _sse_answer() -> list[dict[str, Any]]:
    """A streamed tool call, its chunks written with spaces (so kept as they came)."""
    chunk = {
        "id": "chatcmpl-Bx7",
        "object": "chat.completion.chunk",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": TOOL_CALL_ID,
                            "type": "function",
                            "function": {
                                "name": "read_notes",
                                "arguments": '{"path": "notes.txt"}',
                            },
                        }
                    ]
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    spaced = (
        '{"id": "chatcmpl-Bx7", "object": "chat.completion.chunk", "choices": [{"index": 0, '
        '"delta": {"tool_calls": [{"index": 0, "id": "' + TOOL_CALL_ID + '", "type": '
        '"function", "function": {"name": "read_notes", "arguments": "{\\"path\\": '
        '\\"notes.txt\\"}"}}]}, "finish_reason": "tool_calls"}]}'
    )
    return [
        {"type": "sse", "data": chunk, "raw": f"data: {spaced}\n\n"},
        {"type": "sse", "data": "[DONE]"},
    ]


def _body_answer(text: str) -> dict[str, Any]:
    """A whole JSON answer, written with spaces (so kept as it came)."""
    body = {
        "id": "chatcmpl-Cy8",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }
    raw = (
        '{"id": "chatcmpl-Cy8", "object": "chat.completion", "choices": [{"index": 0, '
        '"message": {"role": "assistant", "content": "' + text + '"}}]}'
    )
    return {"type": "http_body", "body": body, "raw": raw}
