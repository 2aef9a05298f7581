"""Recording rows built by hand, and files written from them.

Rows are built as the recorder writes them (compact JSON, ``type`` first), so the summary's
fast path reads them; :func:`write_rows` can lay them out differently (another line ending, a
tail without its newline, raw lines that are not rows) and :func:`hand_formatted` as a
person would, to reach the strict reader. The model of every row is ``fake:m1`` unless a test
says otherwise; a test that replays a recording records it through the real recorder instead.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from openprogram.config.paths import recordings_dir
from openprogram.recording.format import encode_row, new_header

Row = dict[str, Any]
Line = Row | str | bytes
"""A row to encode, or the raw text of a line (for lines that are not valid rows)."""

CREATED_AT = "2024-01-01T00:00:00Z"
"""Every built header's ``created_at`` unless a test gives another."""


def header(recording_id: str = "sample", **overrides: Any) -> Row:
    """The header a new recording starts with, created at :data:`CREATED_AT`."""
    row = new_header(recording_id)
    row["created_at"] = CREATED_AT
    row.update(overrides)
    return row


def request(
    call_index: Any,
    *,
    text: str = "hi",
    model_id: str = "m1",
    api: str = "fake",
    headers: dict[str, str] | None = None,
    system_prompt: str | None = None,
    options: Row | None = None,
) -> Row:
    """A request row: one user message ``text`` to ``api:model_id``."""
    model: Row = {"id": model_id, "api": api, "provider": api}
    if headers is not None:
        model["headers"] = headers
    return {
        "type": "request",
        "call_index": call_index,
        "model": model,
        "context": {
            "system_prompt": system_prompt,
            "messages": [{"role": "user", "content": text, "timestamp": 1}],
            "tools": None,
        },
        "options": {} if options is None else options,
    }


def event(call_index: Any, event_index: Any, payload: Any) -> Row:
    return {"type": "event", "call_index": call_index, "event_index": event_index, "event": payload}


def call_end(
    call_index: Any, event_count: Any = 0, outcome: Any = "complete", error: Any = None
) -> Row:
    row: Row = {
        "type": "call_end",
        "call_index": call_index,
        "event_count": event_count,
        "outcome": outcome,
    }
    if error is not None:
        row["error"] = error
    return row


def assistant_message(content: list[Row], stop_reason: str = "stop") -> Row:
    return {
        "role": "assistant",
        "content": content,
        "api": "fake",
        "provider": "fake",
        "model": "m1",
        "usage": {"input": 3, "output": 5, "total_tokens": 8},
        "stop_reason": stop_reason,
        "timestamp": 1,
    }


def done(text: str = "hi") -> Row:
    return {
        "type": "done",
        "reason": "stop",
        "message": assistant_message([{"type": "text", "text": text}]),
    }


def text_events(*deltas: str) -> list[Row]:
    """The events of a text reply streamed as ``deltas`` (none: an empty reply)."""
    text = "".join(deltas)
    return [
        {"type": "start", "api": "fake", "provider": "fake", "model": "m1"},
        {"type": "text_start", "content_index": 0},
        *({"type": "text_delta", "content_index": 0, "delta": delta} for delta in deltas),
        {"type": "text_end", "content_index": 0, "content": text},
        done(text),
    ]


def tool_events() -> list[Row]:
    """A reply that thinks, then calls a tool."""
    tool_call = {"type": "toolCall", "id": "call_1", "name": "add", "arguments": {"a": 1}}
    return [
        {"type": "start"},
        {"type": "thinking_start", "content_index": 0},
        {"type": "thinking_delta", "content_index": 0, "delta": "hmm"},
        {"type": "thinking_end", "content_index": 0, "content": "hmm", "signature": None},
        {"type": "toolcall_start", "content_index": 1, "id": "call_1", "name": "add"},
        {"type": "toolcall_delta", "content_index": 1, "delta": '{"a": 1}'},
        {"type": "toolcall_end", "content_index": 1, "tool_call": tool_call},
        {
            "type": "done",
            "reason": "toolUse",
            "message": assistant_message(
                [{"type": "thinking", "thinking": "hmm", "signature": None}, tool_call],
                "toolUse",
            ),
        },
    ]


def two_calls() -> list[Line]:
    """A header and two calls: a text reply, then a reply that thinks and calls a tool."""
    return [header(), *call_rows(0, text_events("hi")), *call_rows(1, tool_events())]


def call_rows(
    call_index: int,
    events: Sequence[Row] | None = None,
    *,
    outcome: str | None = "complete",
    error: Row | None = None,
    **request_fields: Any,
) -> list[Row]:
    """A whole call: its request, its events (a ``reply N`` text reply unless given) and,
    unless ``outcome`` is None (a call cut short), its call_end."""
    if events is None:
        events = text_events(f"reply {call_index}")
    rows = [request(call_index, **request_fields)]
    rows += [event(call_index, index, payload) for index, payload in enumerate(events)]
    if outcome is not None:
        rows.append(call_end(call_index, len(events), outcome, error))
    return rows


def encode_line(line: Line) -> bytes:
    """A line's bytes, without its newline: a row as the recorder encodes it, raw text as is."""
    if isinstance(line, bytes):
        return line
    if isinstance(line, str):
        return line.encode()
    return encode_row(line)[:-1]


def write_rows(
    path: Path,
    rows: Sequence[Line],
    *,
    newline: bytes = b"\n",
    tail: bytes = b"",
    mtime: float | None = None,
) -> Path:
    """Each line ended by ``newline``, then ``tail`` (a last line without its newline); the
    file private, as the recorder leaves it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(encode_line(row) + newline for row in rows) + tail)
    os.chmod(path, 0o600)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def read_rows(path: Path) -> list[Row]:
    """Every row of a recording file, as JSON."""
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def without_digest(row: Row) -> Row:
    """A ``call_end`` row without the ``digest`` the writer adds (to compare the rest)."""
    return {key: value for key, value in row.items() if key != "digest"}


def hand_formatted(rows: Sequence[Row]) -> list[bytes]:
    """The rows as a person might write them: spaces after separators, keys sorted."""
    return [orjson.dumps(row, option=orjson.OPT_SORT_KEYS).replace(b'":', b'": ') for row in rows]


def stored(name: str) -> Path:
    """Where the store keeps the recording ``name``."""
    return recordings_dir() / f"{name}.jsonl"


def write_recording(
    where: str | Path,
    *,
    calls: int = 2,
    truncated: bool = False,
    created_at: str | None = None,
    model_id: str = "m1",
    mtime: float | None = None,
) -> Path:
    """A valid recording of ``calls`` text calls, the last one cut short if ``truncated``:
    at ``where`` if it is a path, or in the store as ``<name>.jsonl`` if it is a name.
    Created now, unless ``created_at`` says when."""
    path = stored(where) if isinstance(where, str) else where
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    rows: list[Line] = [header(path.stem, created_at=created_at or now)]
    for index in range(calls):
        cut = truncated and index == calls - 1
        rows += call_rows(index, outcome=None if cut else "complete", model_id=model_id)
    return write_rows(path, rows, mtime=mtime)


def write_corrupt_recording(path: Path) -> Path:
    """A recording whose line 3 is not JSON."""
    return write_rows(path, [header(path.stem), request(0), b"{not json"])


def write_other_version_recording(path: Path) -> Path:
    """A recording of a format version this openprogram does not know."""
    return write_rows(path, [header(path.stem, format_version=99)])
