"""A small recording of SDK traffic for the read-command fuzz tests, and where deeply nested
values go in it.

Three HTTP calls, as the vendors' servers answer them (``tests.support.vendor_http_rows``): an
OpenAI Chat Completions stream with text and a streamed tool call, in a few chunks; an
Anthropic message sent whole; a connection refused before any response. Small, so that every
byte offset and every field can be damaged in a few seconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from openprogram.recording.format import new_header
from tests.support.http_call_rows import write_calls
from tests.support.recording_mutations import (
    FIXED_CREATED_AT,
    NESTING_DEPTHS,
    Mutant,
    encode,
    nested,
    replaced_at,
    rows_of,
)
from tests.support.recording_rows import Row
from tests.support.vendor_http_rows import (
    CHAT_URL,
    QUESTION,
    chat_chunk,
    chat_tool_piece,
    connect_error_call,
    http_call,
    messages_whole_call,
    response,
    sse,
)

CALLS = 3


def _short_chat_stream(index: int) -> list[Row]:
    """A Chat Completions stream: one text piece, the tool call in two pieces, its finish and
    ``[DONE]``; the request holds the user's message only."""
    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": QUESTION}]}
    chunks = [
        chat_chunk({"content": "Let me check."}),
        chat_tool_piece('{"city": ', first=True),
        chat_tool_piece('"Paris"}'),
        chat_chunk({}, finish="tool_calls"),
    ]
    events = [response(), *(sse(chunk) for chunk in chunks), sse("[DONE]")]
    return http_call(index, "POST", CHAT_URL, {**body, "stream": True}, events)


def _whole_message(index: int) -> list[Row]:
    """The Anthropic message after the tool result, its request without tools or thinking."""
    rows = messages_whole_call(index)
    body = rows[0]["body"]
    for setting in ("tools", "thinking", "system"):
        del body[setting]
    del body["messages"][1]["content"][0]  # the signed thinking block
    return rows


def _refused(index: int) -> list[Row]:
    """A connection refused, for a request holding the user's message only."""
    rows = connect_error_call(index)
    rows[0]["body"]["messages"] = rows[0]["body"]["messages"][-1:]
    return rows


def fixed_sdk_session(path: Path) -> bytes:
    """Write the recording to ``path``, the same bytes on every run; return them."""
    header = {**new_header("sdk"), "created_at": FIXED_CREATED_AT}
    write_calls(
        path, _short_chat_stream(0), _whole_message(1), connect_error_call(2), header=header
    )
    data = b"".join(encode(row) for row in rows_of(path.read_bytes()))
    path.write_bytes(data)
    return data


def http_deep_nestings(data: bytes) -> Iterator[Mutant]:
    """Values nested 200, 300 and 1,000 levels deep in a request body and in the response:
    an SSE event's data and a whole JSON body."""
    rows = rows_of(data)
    request = next(n for n, row in enumerate(rows) if row.get("boundary") == "http")
    chunk = next(
        n for n, row in enumerate(rows) if row["type"] == "event" and row["event"]["type"] == "sse"
    )
    whole = next(
        n
        for n, row in enumerate(rows)
        if row["type"] == "event" and row["event"]["type"] == "http_body"
    )
    places = [
        (request, ("body", "messages", 0, "content"), "list"),
        (request, ("body", "tools"), "object"),
        (chunk, ("event", "data", "choices", 0, "delta"), "object"),
        (whole, ("event", "body", "content"), "list"),
    ]
    for depth in NESTING_DEPTHS:
        for number, path, container in places:
            where = ".".join(str(part) for part in path)
            yield Mutant(
                f"line {number + 1}: {where} = {container} nested {depth} deep",
                replaced_at(rows, number, path, nested(depth, container)),
            )
