"""The building blocks of hand-written HTTP call rows: a call's request, response, SSE events
and JSON body as the recording format stores them, and what the sample conversation asks
(the weather in Paris, through a ``get_weather`` tool)."""

from __future__ import annotations

from typing import Any

from tests.support.recording_rows import Row, call_end, event

JSON = {"content-type": "application/json"}
WEATHER_ARGUMENTS = {"city": "Paris"}
WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
QUESTION = "What's the weather in Paris? Answer briefly."
SYSTEM = "You are a weather assistant."


def http_call(
    index: int,
    method: str,
    url: str,
    body: Any = None,
    events: list[Row] | None = None,
    *,
    headers: dict[str, str] | None = None,
    outcome: str | None = "complete",
    error: Row | None = None,
) -> list[Row]:
    """The rows of one HTTP call; ``outcome`` None leaves it cut short (no call_end)."""
    request: Row = {
        "type": "request",
        "call_index": index,
        "boundary": "http",
        "method": method,
        "url": url,
        "headers": JSON if headers is None else headers,
    }
    if body is not None:
        request["body"] = body
    payloads = events or []
    rows = [request, *(event(index, n, payload) for n, payload in enumerate(payloads))]
    if outcome is not None:
        rows.append(call_end(index, len(payloads), outcome, error))
    return rows


def response(
    status: int = 200, content_type: str = "text/event-stream", extra: dict[str, str] | None = None
) -> Row:
    """An ``http_response`` event with the headers a vendor sends beside its content type."""
    headers = {"content-type": content_type, "date": "Mon, 01 Dec 2026 08:00:00 GMT"}
    headers.update(extra or {})
    return {"type": "http_response", "status": status, "headers": headers}


def sse(data: Any, name: str | None = None) -> Row:
    row: Row = {"type": "sse"}
    if name is not None:
        row["event"] = name
    row["data"] = data
    return row


def json_body(body: Any) -> Row:
    return {"type": "http_body", "body": body}
