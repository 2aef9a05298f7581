"""Rows of recordings holding HTTP calls (and provider calls), written as the format says:
OpenAI Chat Completions calls recorded at the HTTP boundary, with the fields that change from
one run to the next (ids, dates, rate limits) set for run ``a`` or ``b``."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from openprogram.provider_boundary.codec import dump_request
from openprogram.providers import ECHO_MODEL, Context, SimpleStreamOptions, UserMessage
from openprogram.recording.format import new_header
from tests.support.recording_rows import Row, call_end, event, write_rows

CHAT_URL = "https://api.openai.com/v1/chat/completions"


def chat_request(content: str = "hi", **body: Any) -> Row:
    """The request sections of an OpenAI Chat Completions call."""
    return {
        "boundary": "http",
        "method": "POST",
        "url": CHAT_URL,
        "headers": {"content-type": "application/json"},
        "body": {
            "model": "gpt-4o-mini",
            "messages": [{"role": "user", "content": content}],
            "stream": True,
            **body,
        },
    }


def chunk(text: str, *, run: str = "a") -> Row:
    """One Chat Completions stream chunk, with the per-run fields of run ``run``."""
    return {
        "id": f"chatcmpl-{run}",
        "object": "chat.completion.chunk",
        "created": 1700000000 if run == "a" else 1700000999,
        "model": "gpt-4o-mini",
        "system_fingerprint": f"fp_{run}",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    }


def response_headers(*, run: str = "a") -> dict[str, str]:
    """Response headers as a server sends them, with the per-run ones of run ``run``."""
    return {
        "content-type": "text/event-stream",
        "openai-version": "2020-10-01",
        "date": "Mon, 01 Dec 2026 08:00:00 GMT" if run == "a" else "Tue, 02 Dec 2026 09:30:00 GMT",
        "x-request-id": f"req_{run}",
        "openai-processing-ms": "120" if run == "a" else "95",
        "cf-ray": f"ray-{run}",
        "x-envoy-upstream-service-time": "80" if run == "a" else "61",
        "x-ratelimit-remaining-tokens": "9000" if run == "a" else "8500",
        "x-ratelimit-reset-requests": "2ms" if run == "a" else "7ms",
        "x-ratelimit-limit-tokens": "10000",
    }


def sse_call(
    index: int,
    request: Row | None = None,
    texts: tuple[str, ...] = ("Hel", "lo"),
    *,
    run: str = "a",
    outcome: str | None = "complete",
) -> list[Row]:
    """A streamed Chat Completions call: request, response, one sse event per chunk, [DONE]."""
    response = {"type": "http_response", "status": 200, "headers": response_headers(run=run)}
    events: list[Row] = [response]
    events += [{"type": "sse", "data": chunk(text, run=run)} for text in texts]
    events.append({"type": "sse", "data": "[DONE]"})
    rows: list[Row] = [{"type": "request", "call_index": index, **(request or chat_request())}]
    rows += [event(index, n, payload) for n, payload in enumerate(events)]
    if outcome is not None:
        rows.append(call_end(index, len(events), outcome))
    return rows


def provider_call(index: int, text: str = "hi") -> list[Row]:
    """A complete provider call of the echo model, as ``stream_simple`` records it."""
    reply = f"echo:{text}"
    events = [
        {"type": "start", "api": "echo", "provider": "echo", "model": "echo"},
        {"type": "text_start", "content_index": 0},
        {"type": "text_delta", "content_index": 0, "delta": reply},
        {"type": "text_end", "content_index": 0, "content": reply},
    ]
    context = Context(messages=[UserMessage(content=text)])
    request = dump_request(ECHO_MODEL, context, SimpleStreamOptions())
    rows: list[Row] = [{"type": "request", "call_index": index, **request}]
    rows += [event(index, n, payload) for n, payload in enumerate(events)]
    rows.append(call_end(index, len(events)))
    return rows


def write_calls(path: Path, *calls: list[Row], header: Row | None = None) -> Path:
    """A recording file of ``calls`` (each a list of rows) after ``header``."""
    rows = [header or new_header(path.stem)]
    for call in calls:
        rows.extend(call)
    return write_rows(path, rows)


def changed(rows: list[Row], line: int, **fields: Any) -> list[Row]:
    """A copy of ``rows`` with row ``line`` (0-based) updated with ``fields``."""
    copied = copy.deepcopy(rows)
    copied[line].update(fields)
    return copied
