"""An HTTP call as ``openprogram recordings show`` presents it.

Every HTTP call gets its *exchange* (:class:`HttpExchange`): method, URL, the response's
status, what its body was (server-sent events, JSON, text, binary, none) with the number of
events and the body's size, and the transport error when the call failed before or during
the response. A call to one of the model APIs it knows also gets its conversation
(:class:`~openprogram.store.http_reply.HttpReply`): the new input message, the reply
text, thinking, tool calls, stop reason and usage. The API is known from the request's path
— ``…/chat/completions`` (``openai-completions``), ``…/responses`` (``openai-responses``),
``…/messages`` with an ``anthropic-version`` header or an Anthropic host
(``anthropic-messages``) — or, for a path it does not know, from the shape of the response
(``chat.completion`` objects, ``response.…`` events, ``message_start``). Any other call gets
the exchange only, and the error an error response reports.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from openprogram.store.http_anthropic_views import messages_reply
from openprogram.store.http_openai_views import chat_completions_reply, responses_reply
from openprogram.store.http_reply import HttpReply, as_dict, as_int, as_str, error_text

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall

__all__ = ["API_NAMES", "HttpExchange", "http_api", "http_call_parts"]

Reader = Callable[[Any, list[Any], Any], HttpReply]
_READERS: dict[str, Reader] = {
    "openai-completions": chat_completions_reply,
    "openai-responses": responses_reply,
    "anthropic-messages": messages_reply,
}
API_NAMES: tuple[str, ...] = tuple(_READERS)
"""The model APIs whose calls ``show`` reads a conversation from."""

BODY_KINDS = ("sse", "json", "text", "binary", "none")


@dataclass(frozen=True)
class HttpExchange:
    """What went over the wire, in a few facts."""

    method: str
    url: str
    status: int | None
    """None: no response came (the transport failed first, or the recording stops there)."""
    api: str | None
    """One of :data:`API_NAMES`, or None for an API ``show`` does not know."""
    body: str | None
    """What the response's body was: one of :data:`BODY_KINDS`; None without a response."""
    sse_events: int
    body_size: int
    """Bytes of the body as recorded: the JSON compact, text as UTF-8, binary decoded; for
    server-sent events, the data of every event."""
    transport_error: str | None
    """``type: message`` of the transport failure that ended the call, if one did."""

    def to_json(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "url": self.url,
            "status": self.status,
            "api": self.api,
            "body": self.body,
            "sse_events": self.sse_events,
            "body_size": self.body_size,
            "transport_error": self.transport_error,
        }


def http_call_parts(call: RecordedCall) -> tuple[HttpExchange, HttpReply]:
    """An HTTP call's exchange, and its conversation (empty for an API it does not know)."""
    request = call.request
    status: int | None = None
    content_type = ""
    datas: list[Any] = []
    whole: Any = None
    text = ""
    kind: str | None = None
    size = 0
    for row in call.event_rows:
        event_type = row.get("type")
        if event_type == "http_response":
            status = as_int(row.get("status"))
            headers = as_dict(row.get("headers"))
            content_type = (as_str(headers.get("content-type")) or "").lower()
            kind = "sse" if content_type.startswith("text/event-stream") else "none"
        elif event_type == "sse":
            kind = "sse"
            datas.append(row.get("data"))
            size += _size_of(row.get("data"))
        elif event_type == "http_body":
            kind, value, size = _body(row)
            whole = value if kind == "json" else None
            text = value if kind == "text" else ""
    error = call.error
    transport_error = f"{error.type}: {error.message}" if error is not None else None
    api = http_api(request, datas[0] if datas else whole)
    reply = _READERS[api](request.get("body"), datas, whole) if api is not None else HttpReply()
    if status is not None and status >= 400:
        detail = reply.error or error_text(whole) or text.strip().partition("\n")[0]
        reply.error = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    exchange = HttpExchange(
        method=str(request.get("method")),
        url=str(request.get("url")),
        status=status,
        api=api,
        body=kind,
        sse_events=len(datas),
        body_size=size,
        transport_error=transport_error,
    )
    return exchange, reply


def http_api(request: dict[str, Any], first: Any) -> str | None:
    """The model API a call was made to, from its request, else from ``first``: its first
    SSE event's data or its whole body; None for any other API."""
    try:
        url = urlsplit(str(request.get("url")))
        path, host = url.path.rstrip("/"), url.hostname or ""
    except ValueError:
        path, host = "", ""
    if path.endswith("/chat/completions"):
        return "openai-completions"
    if path.endswith("/responses"):
        return "openai-responses"
    headers = as_dict(request.get("headers"))
    if path.endswith("/messages") and ("anthropic-version" in headers or "anthropic" in host):
        return "anthropic-messages"
    shape = as_dict(first)
    kind = as_str(shape.get("type")) or ""
    if shape.get("object") in ("chat.completion", "chat.completion.chunk"):
        return "openai-completions"
    if shape.get("object") == "response" or kind.startswith("response."):
        return "openai-responses"
    if kind == "message_start" or (kind == "message" and shape.get("role") == "assistant"):
        return "anthropic-messages"
    return None


def _body(row: dict[str, Any]) -> tuple[str, Any, int]:
    """An ``http_body`` event's kind, value (the JSON value or the text; None when binary)
    and size."""
    if "body" in row:
        return "json", row["body"], _size_of(row["body"])
    if "text" in row:
        return "text", str(row["text"]), _size_of(row["text"])
    try:
        decoded = base64.b64decode(str(row.get("base64", "")), validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    return "binary", None, len(decoded)


def _size_of(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8", "surrogatepass"))
    try:
        return len(orjson.dumps(value))
    except TypeError:  # an integer beyond 64 bits: the reader keeps what JSON holds
        return len(str(value))
