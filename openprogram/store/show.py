"""Each recorded call as a person wants to read it: what ``openprogram recordings show`` renders.

A :class:`CallView` holds the model, the new input message (the last message of the request's
context), the streamed reply and thinking text, the tool calls with their arguments, the stop
reason, usage and outcome. This module builds data only; the CLI renders it. It reads the recording
as replay does (``read_recording(..., validate_events=True)``): an event replay would refuse — a
``content_index`` that is not a whole number, a delta that is not text — is refused here too, naming
the line, instead of being shown wrongly. The views are built from the validated events, so every
field has the type replay gives it; event fields it does not know are ignored.

An HTTP call's view (:mod:`openprogram.vendors`) adds its exchange — method,
URL, status, the body's kind, events and size — and, for the model APIs it knows, fills the
same fields from the request body and the response: the vendor's own stop reason
(``tool_calls``, ``end_turn``, ``completed``) and usage object, as the server sent them.

The recording's tape entries follow the calls (:mod:`openprogram.store.show`):
each entry's tape and index, arguments, and result or exception.

Each tape entry as a person wants to read it: the tape part of ``recordings show``."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from openprogram.errors import RecordingCallNotFoundError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.format import RecordedCall, Recording, TapeEntry
from openprogram.recording.redaction import SecretRedactor
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import call_label
from openprogram.vendors import HttpExchange, http_call_parts, usage_tokens

__all__ = ["CallView", "RecordingView", "TapeView", "call_views", "tape_view", "view_of"]


@dataclass(frozen=True)
class TapeView:
    """One tape entry, ready to render."""

    tape: str
    index: int
    line: int
    args: dict[str, Any]
    result: Any
    error: str | None
    """``Type: message`` of the exception the call raised, or None."""
    nondeterministic: bool
    within: str | None
    tool: str | None
    """The agent tool the tape belongs to, or None for a taped function."""

    @property
    def label(self) -> str:
        return f"{self.tape}[{self.index}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "tape": self.tape,
            "index": self.index,
            "line": self.line,
            "args": self.args,
            "result": self.result,
            "error": self.error,
            "nondeterministic": self.nondeterministic,
            "within": self.within,
            "tool": self.tool,
        }


def tape_view(entry: TapeEntry) -> TapeView:
    error = None if entry.error is None else f"{entry.error.type}: {entry.error.message}"
    return TapeView(
        tape=entry.tape,
        index=entry.index,
        line=entry.line,
        args=entry.args,
        result=None if entry.error is not None else entry.result,
        error=error,
        nondeterministic=entry.nondeterministic,
        within=entry.within,
        tool=entry.tool,
    )


BLOCK_SEPARATOR = "\n"
"""Between the content blocks of one message (each block's own deltas join with nothing)."""


@dataclass(frozen=True)
class CallView:
    """One call, ready to render. ``outcome`` is None for a call cut short (truncated)."""

    call_index: int
    model: str
    input_role: str | None
    input_text: str
    reply_text: str
    thinking_text: str
    tool_calls: list[tuple[str, Any]]
    """Each tool call's name and arguments: a JSON object, as a rule; an HTTP call's
    arguments that are not JSON (a stream cut mid-way) are their text."""
    stop_reason: str | None
    usage: dict[str, Any] | None
    outcome: str | None
    error: str | None
    event_count: int
    boundary: str = "provider"
    http: HttpExchange | None = None
    """An HTTP call's exchange; None for a provider call."""

    @property
    def truncated(self) -> bool:
        return self.outcome is None

    @property
    def tokens(self) -> tuple[int, int] | None:
        """Tokens in and out, from the usage as the provider or the vendor counts them:
        ``input``/``output``, ``prompt_tokens``/``completion_tokens`` or
        ``input_tokens``/``output_tokens``; None without usage."""
        return usage_tokens(self.usage)

    def to_json(self) -> dict[str, Any]:
        """A plain, JSON-safe dict (``show --json``)."""
        return {
            "call_index": self.call_index,
            "model": self.model,
            "input_role": self.input_role,
            "input_text": self.input_text,
            "reply_text": self.reply_text,
            "thinking_text": self.thinking_text,
            "tool_calls": [
                {"name": name, "arguments": arguments} for name, arguments in self.tool_calls
            ],
            "stop_reason": self.stop_reason,
            "usage": self.usage,
            "outcome": self.outcome,
            "truncated": self.truncated,
            "error": self.error,
            "event_count": self.event_count,
            "boundary": self.boundary,
            "http": self.http.to_json() if self.http is not None else None,
        }


@dataclass(frozen=True)
class RecordingView:
    """A whole recording, ready to render: its transcript hash and its calls."""

    path: Path
    transcript_hash: str
    total_calls: int
    calls: list[CallView]
    tapes: list[TapeView] = field(default_factory=list)
    """Every tape entry in file order (none when one call was asked for)."""
    not_recorded: list[dict[str, Any]] = field(default_factory=list)
    """The connections the recorded session opened that no boundary captured."""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "transcript_hash": self.transcript_hash,
            "total_calls": self.total_calls,
            "calls": [view.to_json() for view in self.calls],
            "tapes": [view.to_json() for view in self.tapes],
            "not_recorded": self.not_recorded,
        }


def view_of(
    recording: Recording, path: str | os.PathLike[str], *, call: int | None = None
) -> RecordingView:
    """The recording read from ``path`` with its hash, and its calls (or only call ``call``)."""
    return RecordingView(
        Path(path),
        transcript_hash(recording),
        len(recording.calls),
        _views(recording, path, call),
        [] if call is not None else [tape_view(entry) for entry in recording.tapes],
        recording.not_recorded,
    )


def call_views(path: str | os.PathLike[str], *, call: int | None = None) -> list[CallView]:
    """The calls of a recording (or only call ``call``), in order.

    Raises ``RecordingFileError`` for a file the strict reader refuses, and
    :class:`RecordingCallNotFoundError` when ``call`` is out of range."""
    return _views(read_recording(path), path, call)


def _views(recording: Recording, path: str | os.PathLike[str], call: int | None) -> list[CallView]:
    calls = recording.calls
    if call is not None:
        if not 0 <= call < len(calls):
            raise RecordingCallNotFoundError(Path(path), call, len(calls))
        calls = [calls[call]]
    redactor = SecretRedactor()
    return [_joined_texts_redacted(_view(recorded), redactor) for recorded in calls]


def _joined_texts_redacted(view: CallView, redactor: SecretRedactor) -> CallView:
    """``view`` with the texts it joined from streamed pieces redacted as a whole: a key a
    model streamed cut across two deltas survived the redaction of each piece, and joined
    on the terminal it would be whole again (``scan --fix`` removes it from the file)."""
    tools = [(name, redactor.redact_model_output(args)) for name, args in view.tool_calls]
    return dataclasses.replace(
        view,
        reply_text=redactor.redact_text(view.reply_text),
        thinking_text=redactor.redact_text(view.thinking_text),
        tool_calls=tools,
    )


def _view(call: RecordedCall) -> CallView:
    if call.boundary == "http":
        return _http_view(call)
    # The events as replay rebuilds them (``"1"`` read as 1, unknown fields dropped).
    events = [event.model_dump(mode="json") for event in call.events]
    final = _final_message(events)
    role, text = _input_message(call.request.get("context", {}))  # none in an HTTP call
    reply = _streamed_text(events, "text") or _message_text(final, "text", "text")
    thinking = _streamed_text(events, "thinking") or _message_text(final, "thinking", "thinking")
    terminal = next((e for e in reversed(events) if e.get("type") in ("done", "error")), None)
    return CallView(
        call_index=call.call_index,
        model=call_label(call),
        input_role=role,
        input_text=text,
        reply_text=reply,
        thinking_text=thinking,
        tool_calls=_tool_calls(events, final),
        stop_reason=_string(terminal.get("reason")) if terminal is not None else None,
        usage=_dict(final.get("usage")) if final is not None else None,
        outcome=call.outcome,
        error=_error_text(call, final),
        event_count=len(events),
    )


def _http_view(call: RecordedCall) -> CallView:
    exchange, reply = http_call_parts(call)
    return CallView(
        call_index=call.call_index,
        model=call_label(call),
        input_role=reply.input_role,
        input_text=reply.input_text,
        reply_text=reply.reply_text,
        thinking_text=reply.thinking_text,
        tool_calls=reply.tool_calls(),
        stop_reason=reply.stop_reason,
        usage=reply.usage,
        outcome=call.outcome,
        error=exchange.transport_error or reply.error,
        event_count=len(call.event_rows),
        boundary="http",
        http=exchange,
    )


def _final_message(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The message of the ``done`` event, or the ``error`` event's reply so far."""
    for event in reversed(events):
        if event.get("type") == "done":
            return _dict(event.get("message"))
        if event.get("type") == "error":
            return _dict(event.get("error"))
    return None


def _input_message(context: dict[str, Any]) -> tuple[str | None, str]:
    messages = context.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return None, ""
    message = messages[-1]
    role = _string(message.get("role"))
    text = _content_text(message.get("content"))
    if role == "toolResult":
        return role, f"{_string(message.get('tool_name')) or '?'} → {text}"
    return role, text


def _content_text(content: Any) -> str:
    """Text of a message's content: a string, or blocks (text, ``[image]``, tool calls)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_string(block.get("text")) or "")
        elif kind == "image":
            parts.append("[image]")
        elif kind == "toolCall":
            arguments = orjson.dumps(block.get("arguments", {})).decode()
            parts.append(f"{_string(block.get('name')) or '?'}({arguments})")
    return BLOCK_SEPARATOR.join(parts)


def _streamed_text(events: list[dict[str, Any]], kind: str) -> str:
    """Each block's ``<kind>_delta`` deltas joined, or its ``<kind>_end`` content if none."""
    deltas: dict[Any, list[str]] = {}
    ends: dict[Any, str] = {}
    for event in events:
        event_type = event.get("type")
        if event_type == f"{kind}_delta":
            deltas.setdefault(event.get("content_index"), []).append(
                _string(event.get("delta")) or ""
            )
        elif event_type == f"{kind}_end":
            ends[event.get("content_index")] = _string(event.get("content")) or ""
    blocks = list(deltas) + [index for index in ends if index not in deltas]
    blocks.sort(key=_block_order)
    return BLOCK_SEPARATOR.join(
        "".join(deltas[index]) if index in deltas else ends[index] for index in blocks
    )


def _block_order(index: Any) -> tuple[int, int]:
    return (0, index) if type(index) is int else (1, 0)


def _message_text(message: dict[str, Any] | None, block_type: str, field: str) -> str:
    """A final message's text or thinking, for a reply that streamed none."""
    if message is None or not isinstance(message.get("content"), list):
        return ""
    return BLOCK_SEPARATOR.join(
        _string(block.get(field)) or ""
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == block_type
    )


def _tool_calls(
    events: list[dict[str, Any]], final: dict[str, Any] | None
) -> list[tuple[str, dict[str, Any]]]:
    calls = [
        _dict(event.get("tool_call")) for event in events if event.get("type") == "toolcall_end"
    ]
    if not calls and final is not None and isinstance(final.get("content"), list):
        calls = [
            block
            for block in final["content"]
            if isinstance(block, dict) and block.get("type") == "toolCall"
        ]
    return [
        (_string(tool.get("name")) or "?", _dict(tool.get("arguments")) or {})
        for tool in calls
        if tool is not None
    ]


def _error_text(call: RecordedCall, final: dict[str, Any] | None) -> str | None:
    if call.error is not None:
        return f"{call.error.type}: {call.error.message}"
    if final is not None and final.get("error_message") is not None:
        return _string(final.get("error_message"))
    return None


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None
