"""The HTTP boundary's rows, checked field by field as the strict reader reads them.

A request row with ``"boundary": "http"`` holds ``method`` (a non-empty string), ``url`` (a
string), ``headers`` (an object of strings) and at most one body form: ``body`` (any JSON
value: the parsed JSON body), ``body_text`` (a string) or ``body_base64`` (base64 text).

Its events, in order:

* ``http_response`` — exactly once, first: ``status`` (a whole number from 100 to 599) and
  ``headers`` (an object of strings);
* then either ``sse`` events — one per dispatched server-sent event: ``data`` (required: the
  parsed JSON, or the text), and when present ``event`` and ``id`` (strings or null) and
  ``retry`` (a whole number >= 0) — or ``eventstream`` events — one per message of an AWS
  event stream (``application/vnd.amazon.eventstream``): ``base64`` (required: the message's
  bytes), and when present ``headers`` (an object: its decoded headers) and ``data`` (its
  payload, parsed JSON or text) — or one ``http_body`` event holding exactly one of ``body``
  (parsed JSON), ``text`` (a string) or ``base64`` (base64 text).

``eventstream`` events are announced by the header feature :data:`EVENTSTREAM_FEATURE`. An
``sse`` event, and an ``http_body`` event holding ``body``, may also hold ``raw`` (a string:
the exact text that came, when re-serializing the parsed value would not give its bytes
back), and an event stream may end with one ``sse_rest`` event, ``raw`` (required: the text
it held after its last event, which dispatched nothing — a final block cut short, a trailing
comment), both announced by :data:`RAW_TEXT_FEATURE`.

Each check returns the problem as a phrase (the reader adds the line and the call), or None."""

from __future__ import annotations

import binascii
from typing import Any

__all__ = [
    "EVENTSTREAM_FEATURE",
    "RAW_TEXT_FEATURE",
    "SSE_REST",
    "http_event_problem",
    "http_request_problem",
    "http_request_sections",
]

EVENTSTREAM_FEATURE = "eventstream"
"""The header feature announcing ``eventstream`` events (AWS event-stream messages)."""

SSE_REST = "sse_rest"
"""The event type of the text an event stream held after its last event (announced by
:data:`RAW_TEXT_FEATURE`)."""

RAW_TEXT_FEATURE = "raw_text"
"""The header feature announcing the ``raw`` field of ``sse`` and ``http_body`` events: the
text as it came, which replay serves byte for byte."""

_REQUEST_BODY_FORMS = ("body", "body_text", "body_base64")
_EVENT_BODY_FORMS = ("body", "text", "base64")


def http_request_sections(row: dict[str, Any]) -> dict[str, Any]:
    """The request sections an HTTP request row stores (call :func:`http_request_problem`
    first): ``method``, ``url``, ``headers`` and its body form, if any."""
    sections = {"method": row["method"], "url": row["url"], "headers": row["headers"]}
    for form in _REQUEST_BODY_FORMS:
        if form in row:
            sections[form] = row[form]
    return sections


def http_request_problem(row: dict[str, Any]) -> str | None:
    """What is wrong with an HTTP request row, or None."""
    method = row.get("method")
    if not isinstance(method, str) or not method:
        return f"HTTP request field 'method' must be a non-empty string, found {method!r}"
    if not isinstance(row.get("url"), str):
        return f"HTTP request field 'url' must be a string, found {row.get('url')!r}"
    problem = _headers_problem("HTTP request", row.get("headers"))
    if problem is not None:
        return problem
    forms = [form for form in _REQUEST_BODY_FORMS if form in row]
    if len(forms) > 1:
        return f"an HTTP request holds at most one body form, found {' and '.join(forms)}"
    if "body_text" in row and not isinstance(row["body_text"], str):
        return f"HTTP request field 'body_text' must be a string, found {row['body_text']!r}"
    if "body_base64" in row and not _is_base64(row["body_base64"]):
        return "HTTP request field 'body_base64' must be base64 text"
    return None


def http_event_problem(payload: dict[str, Any], earlier: list[dict[str, Any]]) -> str | None:
    """What is wrong with an HTTP call's event ``payload``, given the call's ``earlier``
    event rows, or None. Its ``type`` is one of the HTTP event types."""
    kind = payload["type"]
    if kind == "http_response":
        if earlier:
            return "http_response must be the first event of an HTTP call, and the only one"
        status = payload.get("status")
        if type(status) is not int or not 100 <= status <= 599:
            return (
                "http_response event field status must be a whole number from 100 to 599, "
                f"found {status!r}"
            )
        return _headers_problem("http_response event", payload.get("headers"))
    if not earlier:
        return f"{kind} event before the call's http_response event"
    # A body is only ever accepted as the second event, so only earlier[1] can be one: a
    # constant-time check, however many SSE events the call streamed.
    if len(earlier) > 1 and earlier[1]["type"] == "http_body":
        return f"{kind} event after the call's http_body event, which holds the whole body"
    if earlier[-1]["type"] == SSE_REST:
        return f"{kind} event after the call's sse_rest event, which ends the stream"
    if kind == "sse":
        return _sse_problem(payload)
    if kind == SSE_REST:
        if not isinstance(payload.get("raw"), str):
            return "sse_rest event field raw is required: the text after the last event"
        return None
    if kind == "eventstream":
        return _eventstream_problem(payload)
    if len(earlier) > 1:
        return "http_body event after sse events: a body is either a stream or whole"
    forms = [form for form in _EVENT_BODY_FORMS if form in payload]
    if len(forms) != 1:
        found = " and ".join(forms) if forms else "none"
        return f"an http_body event holds exactly one of body, text, base64; found {found}"
    if "text" in payload and not isinstance(payload["text"], str):
        return f"http_body event field text must be a string, found {payload['text']!r}"
    if "base64" in payload and not _is_base64(payload["base64"]):
        return "http_body event field base64 must be base64 text"
    if "raw" in payload:
        if "body" not in payload:
            return "http_body event field raw is the text of a JSON body: it needs body beside it"
        if not isinstance(payload["raw"], str):
            return f"http_body event field raw must be a string, found {payload['raw']!r}"
    return None


def _sse_problem(payload: dict[str, Any]) -> str | None:
    if "data" not in payload:
        return "sse event field data is required (an event without data is never dispatched)"
    for name in ("event", "id"):
        value = payload.get(name)
        if value is not None and not isinstance(value, str):
            return f"sse event field {name} must be a string or null, found {value!r}"
    retry = payload.get("retry")
    if retry is not None and (type(retry) is not int or retry < 0):
        return f"sse event field retry must be a whole number >= 0, found {retry!r}"
    if "raw" in payload and not isinstance(payload["raw"], str):
        return f"sse event field raw must be a string, found {payload['raw']!r}"
    return None


def _eventstream_problem(payload: dict[str, Any]) -> str | None:
    if not _is_base64(payload.get("base64")):
        return "eventstream event field base64 is required: the message's bytes as base64 text"
    if "headers" in payload and not isinstance(payload["headers"], dict):
        return f"eventstream event field headers must be an object, found {payload['headers']!r}"
    return None


def _headers_problem(where: str, headers: Any) -> str | None:
    if not isinstance(headers, dict):
        return f"{where} field 'headers' must be an object, found {headers!r}"
    for name, value in headers.items():
        if not isinstance(value, str):
            return f"{where} header {name!r} must be a string, found {value!r}"
    return None


def _is_base64(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        binascii.a2b_base64(value.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return False
    return True
