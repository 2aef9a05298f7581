"""The HTTP boundary's codec: an exchange as recording rows, and rows back as response bytes.

Recording (values as the client library hands them over; redaction by the core's rules):

* the request's *sections* (:func:`request_sections`): ``method``, ``url``, the headers that
  change what the request means (:func:`stored_request_headers` and the names the caller
  adds, never a credential nor a header of an AWS signature) and
  at most one body form — ``body`` (the parsed JSON, when the content type is JSON and it
  parses), ``body_text`` (UTF-8 text) or ``body_base64``. The
  random boundary of a ``multipart/…`` body is stored as :data:`MULTIPART_BOUNDARY`, so the
  same upload compares equal from run to run;
* the response's ``http_response`` event (:func:`response_event`): its status and headers,
  lower-case, without credentials, cookies, the headers of the connection and
  ``content-encoding`` (:data:`DROPPED_RESPONSE_HEADERS`), redacted as configuration. Its
  ``content-length`` is stored, unless the body was encoded (it then counts the encoded
  bytes, not the decoded body stored);
* its body: one ``sse`` event per dispatched server-sent event (:func:`sse_event_row`) or one
  ``http_body`` event (:func:`body_event`), both redacted as model output (by value only). An
  event's ``data`` is stored parsed when it is a JSON object or array, otherwise as its text,
  so that text that happens to be JSON (``"1e5"``) is served back byte for byte.

**The bytes as they came.** Where re-serializing a row would not give back the text that came
— spaced JSON, ``\r\n`` line ends, comments, a field the SSE rules ignore, a JSON body with a
trailing newline — the row also holds that text, ``raw`` (in a file announcing the feature
``raw_text``): of an event, everything the stream held since the previous event up to the
blank line that dispatched it; the text after a stream's last event (the event a cut stopped
part-way, a trailing comment) is one ``sse_rest`` event (:func:`sse_rest_row`), redacted as
text. A server that writes compact JSON needs none. The parsed value
is what is read, compared and hashed (the digest leaves ``raw`` out); ``raw`` is what replay
serves. It is kept only when redaction found nothing in the event, neither in its values nor
in the text itself (``_keep_raw``): where it removed something, the redacted value is served
re-serialized, and the secret is in neither form. A rewrite that redacts an event drops its
``raw`` (:func:`without_stale_raw`), and replay serves ``raw`` only while it still parses to
what the row holds.

Replaying (:func:`replayed_headers`, :func:`encode_sse_row`, :func:`encode_body_row`): an event's or
a body's ``raw`` text, else the events re-serialized by the SSE rules, JSON dumped compactly. The
headers are the recorded ones; none of the connection was stored (``connection``, ``keep-alive``,
``transfer-encoding``: replay opens no socket, and the client library frames the body it is served —
urllib3 and ``http.client`` add ``transfer-encoding: chunked`` when they read it chunked), nor
``content-encoding`` (the body is served decoded, which httpx, urllib3 and ``http.client`` would
otherwise try to decode again). ``content-length`` is served for a call that completed: the length
of the bytes served, which urllib3 and ``http.client`` frame the body by (httpx and aiohttp only
read it); a call that ended otherwise is served without it, framed as a chunked body, so that every
recorded byte reaches the client before the recorded ending. A retryable error response is served
with the retry hint ``retry-after-ms: 1`` in place of the recorded one (:func:`fast_retry_headers`):
the SDKs honour only hints above zero, and back off for about half a second without one."""

from __future__ import annotations

import base64
import functools
import re
from collections.abc import Iterable
from typing import Any

import orjson

from openprogram.http_boundary.sse import SseParser, encode_sse_event, encode_sse_fields
from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    json_text_may_exceed_nesting_limit,
    nesting_depth,
)
from openprogram.recording.http_rows import SSE_REST
from openprogram.recording.redaction import SecretRedactor, is_secret_field_name

__all__ = [
    "DROPPED_RESPONSE_HEADERS",
    "MULTIPART_BOUNDARY",
    "body_event",
    "encode_body_row",
    "encode_http_row",
    "encode_sse_row",
    "fast_retry_headers",
    "is_event_stream",
    "replayed_headers",
    "request_sections",
    "response_event",
    "sse_event_row",
    "sse_rest_row",
    "without_stale_raw",
]


@functools.cache
def stored_request_headers() -> tuple[frozenset[str], frozenset[str]]:
    """The request headers that change what a request means, always stored (lower-case: each
    vendor's ``stored_headers``); and those of an AWS SigV4 signature (botocore's), never
    stored, even when named to be — they hold the credentials, or change with every run (the
    time, the hash of the body). Read from the vendors when the first request is stored."""
    from openprogram.vendors import VENDOR_WIRES

    stored = {"content-type", *(name for wire in VENDOR_WIRES for name in wire.stored_headers)}
    signing = {name for wire in VENDOR_WIRES for name in wire.signing_headers}
    return frozenset(stored), frozenset(signing)


DROPPED_RESPONSE_HEADERS: frozenset[str] = frozenset(
    {
        # cookies and credentials (any other secret-named header is dropped too)
        "set-cookie",
        "set-cookie2",
        # hop-by-hop
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        # the encoding of the bytes on the wire: the body is stored decoded
        "content-encoding",
    }
)
"""Response headers never stored (``content-length`` is stored unless the body was encoded:
:func:`response_event`)."""

MULTIPART_BOUNDARY = "openprogram-multipart-boundary"
"""What the random boundary of a stored ``multipart/…`` request body becomes."""

RETRY_HINT_LIMIT = 60.0
"""The longest retry hint (seconds) the SDKs wait for: after a longer one they do not retry
at all, so such a response is served with its recorded hint."""

_JSON_DEPTH_LIMIT = MAX_NESTING_DEPTH - 2
"""The deepest JSON value stored parsed (a row holds it two levels down at most)."""
_BOUNDARY_PARAMETER = re.compile(r'boundary="?([^";,\s]+)"?', re.IGNORECASE)
_NOT_JSON = object()


def is_event_stream(content_type: str | None) -> bool:
    """Whether a ``content-type`` is ``text/event-stream``."""
    return (
        content_type is not None
        and content_type.partition(";")[0].strip().lower() == "text/event-stream"
    )


def _is_json(content_type: str | None) -> bool:
    if content_type is None:
        return False
    media = content_type.partition(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _parsed_json(content: bytes | str) -> Any:
    """The JSON value ``content`` holds, or ``_NOT_JSON`` when it holds none (or one nested
    deeper than a row may hold it)."""
    try:
        value = orjson.loads(content)
    except orjson.JSONDecodeError:
        return _NOT_JSON
    if (
        json_text_may_exceed_nesting_limit(content, _JSON_DEPTH_LIMIT)
        and nesting_depth(value, stop_after=_JSON_DEPTH_LIMIT) > _JSON_DEPTH_LIMIT
    ):
        return _NOT_JSON
    return value


def request_sections(
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]],
    content: bytes,
    extra_headers: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """A request's sections, before redaction. ``headers``: lower-case names (repeated
    names are joined with ``, ``); ``extra_headers``: more names to store (lower-case)."""
    stored: dict[str, str] = {}
    always, signing = stored_request_headers()
    for name, value in headers:
        if (name in always or name in extra_headers) and not (
            is_secret_field_name(name) or name in signing
        ):
            stored[name] = f"{stored[name]}, {value}" if name in stored else value
    content_type = stored.get("content-type")
    if content and content_type is not None and content_type.lower().startswith("multipart/"):
        match = _BOUNDARY_PARAMETER.search(content_type)
        if match is not None:
            boundary = match.group(1)
            stored["content-type"] = content_type.replace(boundary, MULTIPART_BOUNDARY)
            content = content.replace(
                b"--" + boundary.encode(), b"--" + MULTIPART_BOUNDARY.encode()
            )
    sections: dict[str, Any] = {"method": method, "url": url, "headers": stored}
    if content:
        parsed = _parsed_json(content) if _is_json(content_type) else _NOT_JSON
        if parsed is not _NOT_JSON:
            sections["body"] = parsed
        else:
            try:
                sections["body_text"] = content.decode("utf-8")
            except UnicodeDecodeError:
                sections["body_base64"] = base64.b64encode(content).decode("ascii")
    return sections


def response_event(
    status: int, headers: Iterable[tuple[str, str]], redactor: SecretRedactor
) -> dict[str, Any]:
    """The ``http_response`` event of a response (``headers``: lower-case names)."""
    stored: dict[str, str] = {}
    encoded = False
    for name, value in headers:
        if name == "content-encoding":
            encoded = encoded or value.strip().lower() not in ("", "identity")
        if name in DROPPED_RESPONSE_HEADERS or is_secret_field_name(name):
            continue
        stored[name] = f"{stored[name]}, {value}" if name in stored else value
    if encoded:  # the length of the encoded bytes, not of the decoded body stored
        stored.pop("content-length", None)
    return {"type": "http_response", "status": status, "headers": redactor.redact(stored)}


def replayed_headers(
    status: int, headers: dict[str, str], body: bytes, *, method: str, complete: bool
) -> list[tuple[str, str]]:
    """The headers a recorded response is served with: as recorded (a retryable error's hint made
    short: :func:`fast_retry_headers`), except its ``content-length``. That is served when the
    recorded call completed: the length of ``body``, the bytes served (the recorded length, unless
    redaction changed the body; a recorded ``0`` with an empty body), or as recorded for a response
    to ``HEAD`` without a body. A call that ended otherwise is served without it, its body framed as
    a chunked one, so that the recorded ending reaches the client after every recorded byte."""
    served = fast_retry_headers(status, headers)
    if "content-length" not in served:
        return list(served.items())
    if complete and (body or served["content-length"].strip() == "0"):
        length: str | None = str(len(body))
    elif complete and method.upper() == "HEAD":
        length = served["content-length"]
    else:
        length = None
    items: list[tuple[str, str]] = []
    for name, value in served.items():
        if name != "content-length":
            items.append((name, value))
        elif length is not None:
            items.append((name, length))
    return items


def sse_event_row(
    event: dict[str, Any], redactor: SecretRedactor, *, keep_raw: bool = False
) -> dict[str, Any]:
    """The ``sse`` event of a dispatched server-sent event (as
    :class:`~openprogram.http_boundary.sse.SseParser` gives it). ``keep_raw``: the row holds
    the event's ``raw`` text (the parser's) when the bytes re-serializing the row would give
    are not those that came, and redaction found nothing in it."""
    row: dict[str, Any] = {"type": "sse"}
    name = event.get("event")
    changed = False
    if name is not None:
        row["event"] = redacted_name = redactor.redact_text(name)
        changed = redacted_name != name
    text: str = event["data"]
    value = _parsed_json(text) if text.lstrip()[:1] in ("{", "[") else _NOT_JSON
    if value is _NOT_JSON:
        data: Any = redactor.redact_text(text)
        changed = changed or data != text
    else:
        data = redactor.redact_parsed_output(value, text)
        changed = changed or (data is not value and data != value)
    row["data"] = data
    if "id" in event:
        row["id"] = redacted_id = redactor.redact_text(event["id"])
        changed = changed or redacted_id != event["id"]
    if "retry" in event:
        row["retry"] = event["retry"]
    raw = event.get("raw")
    if keep_raw and raw is not None and not changed:
        _keep_raw(row, raw, encode_sse_row(row), redactor)
    return row


def sse_rest_row(text: str, redactor: SecretRedactor) -> dict[str, Any] | None:
    """The ``sse_rest`` event of the text an event stream held after its last event
    (:meth:`~openprogram.http_boundary.sse.SseParser.rest`), redacted; None for none."""
    if not text:
        return None
    return {"type": SSE_REST, "raw": redactor.redact_text(text)}


def body_event(
    content_type: str | None, content: bytes, redactor: SecretRedactor, *, keep_raw: bool = False
) -> dict[str, Any] | None:
    """The ``http_body`` event of a whole (decoded) body; None for an empty one.
    ``keep_raw``: a JSON body the compact dump of its value would not give back holds its
    ``raw`` text too, when redaction found nothing in it."""
    if not content:
        return None
    value = _parsed_json(content) if _is_json(content_type) else _NOT_JSON
    if value is not _NOT_JSON:
        body = redactor.redact_parsed_output(value, content)
        row = {"type": "http_body", "body": body}
        if keep_raw and (body is value or body == value):
            # orjson parsed it, so it is UTF-8
            _keep_raw(row, content.decode("utf-8"), orjson.dumps(body), redactor, content)
        return row
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return {"type": "http_body", "base64": base64.b64encode(content).decode("ascii")}
    return {"type": "http_body", "text": redactor.redact_text(text)}


def _keep_raw(
    row: dict[str, Any],
    raw: str,
    served: bytes,
    redactor: SecretRedactor,
    received: bytes | None = None,
) -> None:
    """Add ``raw`` to ``row`` unless ``served`` (the bytes the row re-serializes to) are
    already those that came (``received``, else ``raw`` encoded), or redacting ``raw`` would
    change it (a secret the parsed values did not hold: a comment, or the text's escapes)."""
    if served == (raw.encode() if received is None else received):
        return
    if redactor.redact_text(raw) == raw:
        row["raw"] = raw


def encode_sse_row(row: dict[str, Any]) -> bytes:
    """A recorded ``sse`` event as the bytes of a stream: its ``raw`` text when it has one
    that still holds what the row does, else the event re-serialized."""
    raw = row.get("raw")
    if isinstance(raw, str) and _sse_raw_agrees(row, raw):
        return raw.encode()
    data = row["data"]
    if isinstance(data, str):
        return encode_sse_event(row.get("event"), data, row.get("id"), row.get("retry"))
    # Compact JSON is one line (orjson escapes every newline): the common case, short.
    line = b"data: " + orjson.dumps(data) + b"\n\n"
    if len(row) == 2:  # type and data: no event, id or retry
        return line
    fields = encode_sse_fields(row.get("event"), row.get("id"), row.get("retry"))
    return fields.encode() + line


def _sse_raw_agrees(row: dict[str, Any], raw: str) -> bool:
    """Whether ``raw`` parses to exactly the one event ``row`` holds (a rewrite of the
    recording that changed the row, by hand or by a redaction, leaves its ``raw`` behind)."""
    parser = SseParser()
    events = parser.feed(raw)
    events.extend(parser.finish())
    if len(events) != 1:
        return False
    event = events[0]
    text: str = event["data"]
    value = _parsed_json(text) if text.lstrip()[:1] in ("{", "[") else _NOT_JSON
    return (
        (text if value is _NOT_JSON else value) == row["data"]
        and event.get("event") == row.get("event")
        and event.get("id") == row.get("id")
        and event.get("retry") == row.get("retry")
    )


def encode_http_row(row: dict[str, Any]) -> bytes:
    """A recorded ``sse``, ``sse_rest`` or ``http_body`` event as the bytes of the body."""
    kind = row["type"]
    if kind == "sse":
        return encode_sse_row(row)
    if kind == SSE_REST:
        text: str = row["raw"]
        return text.encode()
    return encode_body_row(row)


def encode_body_row(row: dict[str, Any]) -> bytes:
    """A recorded ``http_body`` event as the body's bytes: a JSON body's ``raw`` text when
    it has one that still holds its value, else the value dumped compactly."""
    if "body" in row:
        raw = row.get("raw")
        if isinstance(raw, str):
            content = raw.encode()
            if _parsed_json(content) == row["body"]:
                return content
        return orjson.dumps(row["body"])
    if "text" in row:
        text: str = row["text"]
        return text.encode()
    return base64.b64decode(row["base64"])


def without_stale_raw(recorded: dict[str, Any], rewritten: dict[str, Any]) -> dict[str, Any]:
    """``rewritten``, a rewrite of the ``sse`` or ``http_body`` event ``recorded`` (a
    redaction of it), without its ``raw`` text when the rewrite changed anything: the raw
    text would still hold what was removed. Any other row is returned as it is (an
    ``sse_rest`` event is its text alone: it was redacted as text)."""
    if "raw" not in rewritten or rewritten == recorded or rewritten.get("type") == SSE_REST:
        return rewritten
    return {key: value for key, value in rewritten.items() if key != "raw"}


def fast_retry_headers(status: int, headers: dict[str, str]) -> dict[str, str]:
    """``headers`` to serve a recorded response with: those of a response the SDKs retry
    (408, 409, 429, 5xx, or ``x-should-retry: true``) carry ``retry-after-ms: 1`` instead of
    the recorded hint, unless that hint was one after which the SDKs do not retry at all."""
    should_retry = headers.get("x-should-retry")
    retried = should_retry == "true" or (
        should_retry != "false" and (status in (408, 409, 429) or status >= 500)
    )
    if not retried:
        return headers
    hint = _retry_hint(headers)
    if hint is not None and hint > RETRY_HINT_LIMIT:
        return headers
    served = {k: v for k, v in headers.items() if k not in ("retry-after", "retry-after-ms")}
    served["retry-after-ms"] = "1"
    return served


def _retry_hint(headers: dict[str, str]) -> float | None:
    """The recorded hint in seconds, when it is a number (a date is relative to a moment
    long past, so it is no longer a hint)."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            return float(value) / divisor
        except ValueError:
            continue
    return None
