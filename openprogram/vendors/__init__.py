"""What the store knows of each model API, one object per API, registered in one tuple.

A :class:`VendorApi` knows one API: its name, whether a call was made to it (from the request, else
from the shape of the response), the reply it put back together, the pieces of text it streamed, the
names of its usage counts, and its vendor's :class:`~openprogram.vendors.wire.Wire` (hosts, key,
headers, route). :data:`VENDOR_APIS` lists them (:data:`VENDOR_WIRES` their vendors); a new API is
one module here and one entry there. openprogram's own provider events are read the same way
(:data:`~openprogram.vendors.openprogram_events.OPENPROGRAM_EVENTS`), so a recorded call of either
boundary is read through one :class:`EventReader`.

    reply               the reply put back together, its tool calls, a streamed piece; the
                        readers of any JSON value
    wire                what goes to a vendor besides its bodies: hosts, key, headers, route
    openai_chat         OpenAI Chat Completions (and the content parts both OpenAI APIs send)
    openai_responses    OpenAI Responses
    anthropic_messages  Anthropic Messages
    gemini              Google's Gemini (generateContent, streamGenerateContent)
    bedrock_converse    Amazon Bedrock Converse (JSON, and AWS's binary event stream)
    openprogram_events  openprogram's own provider events
    model_traffic       which requests are model traffic, the rule the configured mode
                        records and replays by (any host: an SDK's headers, a model API's
                        path, a JSON body with model and messages, a host the user listed)

Read through them, here:

* an HTTP call's *exchange* (:class:`HttpExchange`): method, URL, the response's status,
  what its body was (server-sent events, JSON, text, binary, none) with the number of events
  and the body's size, and the transport error when the call failed before or during the
  response; and, for a call to a known API, its conversation
  (:class:`~openprogram.vendors.reply.HttpReply`): the new input message, the reply
  text, thinking, tool calls, stop reason and usage (:func:`http_call_parts`). The API is
  known from the request — every API's check of the path (and headers, host) comes before
  any check of the response's shape — and any other call gets the exchange only, and the
  error an error response reports;
* the blocks of text a call streamed, each its pieces in order with the event each stands in
  (:func:`streamed_blocks`): a credential may be cut across two deltas, whole in neither row
  but whole in the text they make together;
* the tokens a call's usage counts (:func:`call_tokens`, :func:`usage_tokens`).

Reads event rows as stored: no provider event model is imported."""

from __future__ import annotations

import base64
import binascii
import operator
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import orjson

from openprogram.recording.wire_rules import WireRules
from openprogram.vendors.anthropic_messages import ANTHROPIC_MESSAGES
from openprogram.vendors.bedrock_converse import BEDROCK_CONVERSE
from openprogram.vendors.gemini import GEMINI
from openprogram.vendors.openai_chat import OPENAI_CHAT
from openprogram.vendors.openai_responses import OPENAI_RESPONSES
from openprogram.vendors.openprogram_events import OPENPROGRAM_EVENTS
from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    Piece,
    as_dict,
    as_int,
    as_str,
    error_text,
)
from openprogram.vendors.wire import Wire

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall

__all__ = [
    "API_NAMES",
    "BODY_KINDS",
    "INPUT_COUNTS",
    "OUTPUT_COUNTS",
    "VENDOR_APIS",
    "VENDOR_WIRES",
    "WIRE_RULES",
    "EventReader",
    "HttpExchange",
    "VendorApi",
    "call_tokens",
    "http_api",
    "http_call_parts",
    "streamed_blocks",
    "usage_tokens",
    "vendor_api",
]


class EventReader(Protocol):
    """What reads the events a call recorded: openprogram's provider events, or one model
    API's server-sent events."""

    input_tokens: str
    """The usage field counting the tokens in."""
    output_tokens: str
    """The usage field counting the tokens out."""

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        """The reply of a call: ``body`` its request body, ``datas`` its events' data (each SSE
        event's, or each provider event row), ``whole`` its whole JSON body (None for a stream)."""
        ...

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        """The pieces of text one event (``data``, at ``position`` among the call's events)
        carries, each with the key of its block; the path of a piece starts at its row."""
        ...


class VendorApi(EventReader, Protocol):
    """One model API an HTTP call can be made to."""

    name: str
    """The API as ``show`` names it (``openai-completions``)."""
    recording_rules: WireRules
    """What the recording core must know of its wire: its key header, the shape of its keys,
    its conversation keys, the ids and signed tokens its server makes up, the fields that
    change from run to run (:mod:`openprogram.recording.wire_rules`)."""
    wire: Wire
    """Its vendor's hosts, key, headers and route (:mod:`openprogram.vendors.wire`)."""
    last_events: frozenset[str]
    """The SSE event types its server sends last in a stream: a client may stop there."""
    kind_fields: frozenset[str]
    """The fields whose string value names a kind (a stop reason): drift reports a new one."""

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        """Whether a request to ``path`` (no trailing slash) on ``host`` with ``headers`` was
        made to this API."""
        ...

    def claims_shape(self, first: object) -> bool:
        """Whether ``first`` — a response's first SSE event's data, or its whole body — has
        this API's shape (asked only of a call no API claims by its request)."""
        ...

    def model_endpoint(self, path: str) -> str | None:
        """The name of the model endpoint of this API's vendor that ``path`` (no trailing
        slash) goes to when it is one the store does not read (``embeddings``,
        ``InvokeModel``): model traffic all the same; None otherwise."""
        ...


VENDOR_APIS: tuple[VendorApi, ...] = (
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    ANTHROPIC_MESSAGES,
    GEMINI,
    BEDROCK_CONVERSE,
)
"""Every model API whose calls the store reads, in the order they are asked to claim one."""

WIRE_RULES: WireRules = reduce(operator.or_, (api.recording_rules for api in VENDOR_APIS))
"""Every API's rules for the recording core: what openprogram's package hands down to it
(:mod:`openprogram.recording.wire_rules`)."""

VENDOR_WIRES: tuple[Wire, ...] = tuple(dict.fromkeys(api.wire for api in VENDOR_APIS))
"""Every vendor whose APIs those are, once each, in the same order."""

API_NAMES: tuple[str, ...] = tuple(api.name for api in VENDOR_APIS)
"""The model APIs whose calls ``show`` reads a conversation from."""

BODY_KINDS = ("sse", "eventstream", "json", "text", "binary", "none")

INPUT_COUNTS = tuple(
    dict.fromkeys((OPENPROGRAM_EVENTS.input_tokens, *(api.input_tokens for api in VENDOR_APIS)))
)
"""Every name a usage object may count the tokens in by, the provider events' first."""
OUTPUT_COUNTS = tuple(
    dict.fromkeys((OPENPROGRAM_EVENTS.output_tokens, *(api.output_tokens for api in VENDOR_APIS)))
)
"""Every name a usage object may count the tokens out by, the provider events' first."""


def vendor_api(request: dict[str, Any], first: object) -> VendorApi | None:
    """The model API a call was made to, from its request, else from ``first``: its first
    SSE event's data or its whole body; None for any other API."""
    try:
        url = urlsplit(str(request.get("url")))
        path, host = url.path.rstrip("/"), url.hostname or ""
    except ValueError:
        path, host = "", ""
    headers = as_dict(request.get("headers"))
    claimed = next((api for api in VENDOR_APIS if api.claims(path, host, headers)), None)
    return claimed or next((api for api in VENDOR_APIS if api.claims_shape(first)), None)


def http_api(request: dict[str, Any], first: object) -> str | None:
    """The name of :func:`vendor_api`'s API (one of :data:`API_NAMES`), or None."""
    api = vendor_api(request, first)
    return api.name if api is not None else None


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
        return asdict(self)


@dataclass
class _Response:
    """What an HTTP call's event rows hold of its response."""

    status: int | None = None
    kind: str | None = None
    events: list[tuple[int, object]] = field(default_factory=list)
    """Each SSE event's data, with the event's position among the call's events."""
    whole: object = None
    text: str = ""
    size: int = 0


@dataclass(frozen=True)
class _CallEvents:
    """A call's events, and what reads them (None: an HTTP call to an API not known)."""

    reader: EventReader | None
    events: list[tuple[int, object]]
    whole: object


def http_call_parts(call: RecordedCall) -> tuple[HttpExchange, HttpReply]:
    """An HTTP call's exchange, and its conversation (empty for an API it does not know)."""
    request = call.request
    response = _response(call.event_rows)
    api = vendor_api(request, _first(response))
    datas = [data for _, data in response.events]
    reply = (
        api.reply(request.get("body"), datas, response.whole) if api is not None else HttpReply()
    )
    status = response.status
    if status is not None and status >= 400:
        detail = (
            reply.error or error_text(response.whole) or response.text.strip().partition("\n")[0]
        )
        reply.error = f"HTTP {status}: {detail}" if detail else f"HTTP {status}"
    error = call.error
    exchange = HttpExchange(
        method=str(request.get("method")),
        url=str(request.get("url")),
        status=status,
        api=api.name if api is not None else None,
        body=response.kind,
        sse_events=len(datas),
        body_size=response.size,
        transport_error=f"{error.type}: {error.message}" if error is not None else None,
    )
    return exchange, reply


def streamed_blocks(call: RecordedCall) -> list[list[Piece]]:
    """The blocks of text ``call`` streamed, each its pieces in order; blocks of one piece
    are left out (nothing can be cut across pieces there)."""
    read = _call_events(call)
    if read.reader is None:
        return []
    blocks: dict[object, list[Piece]] = {}
    for position, data in read.events:
        if isinstance(data, dict):
            for key, piece in read.reader.streamed_pieces(position, data):
                blocks.setdefault(_hashable(key), []).append(piece)
    return [block for block in blocks.values() if len(block) > 1]


def _hashable(key: object) -> object:
    """A block's key as a dictionary key: the indexes it is made of come from the server's
    JSON, which may hold an object or a list where an index belongs."""
    try:
        hash(key)
    except TypeError:
        return ("json", orjson.dumps(key, option=orjson.OPT_SORT_KEYS))
    return key


def usage_tokens(usage: dict[str, Any] | None) -> tuple[int, int] | None:
    """Tokens in and out of a usage object, by whichever names it uses; None without one."""
    if not usage:
        return None
    counts = []
    for names in (INPUT_COUNTS, OUTPUT_COUNTS):
        found = (usage.get(name) for name in names)
        counts.append(next((value for value in found if type(value) is int), 0))
    return counts[0], counts[1]


def call_tokens(call: RecordedCall) -> int | None:
    """The tokens (in and out) ``call``'s recorded usage counts; None when it has none."""
    read = _call_events(call)
    if read.reader is None:
        return None
    datas = [data for _, data in read.events]
    tokens = usage_tokens(read.reader.reply(call.request.get("body"), datas, read.whole).usage)
    return None if tokens is None else tokens[0] + tokens[1]


def _call_events(call: RecordedCall) -> _CallEvents:
    """A provider call's event rows, read as openprogram's events; an HTTP call's SSE data
    and whole body, read by the API it was made to."""
    if call.boundary == "provider":
        return _CallEvents(OPENPROGRAM_EVENTS, list(enumerate(call.event_rows)), None)
    response = _response(call.event_rows)
    return _CallEvents(vendor_api(call.request, _first(response)), response.events, response.whole)


def _first(response: _Response) -> object:
    """What a response's shape is read from: its first SSE event's data, or its whole body."""
    return response.events[0][1] if response.events else response.whole


def _response(rows: list[dict[str, Any]]) -> _Response:
    response = _Response()
    for position, row in enumerate(rows):
        event_type = row.get("type")
        if event_type == "http_response":
            response.status = as_int(row.get("status"))
            headers = as_dict(row.get("headers"))
            content_type = (as_str(headers.get("content-type")) or "").lower()
            response.kind = "sse" if content_type.startswith("text/event-stream") else "none"
        elif event_type == "sse":
            response.kind = "sse"
            response.events.append((position, row.get("data")))
            response.size += _size_of(row.get("data"))
        elif event_type == "eventstream":
            response.kind = "eventstream"
            response.events.append((position, _eventstream_data(row)))
            response.size += _size_of(row.get("data", ""))
        elif event_type == "http_body":
            response.kind, value, response.size = _body(row)
            response.whole = value if response.kind == "json" else None
            response.text = value if response.kind == "text" else ""
    return response


def _eventstream_data(row: dict[str, Any]) -> dict[str, Any]:
    """An ``eventstream`` event as boto3 yields it: ``{event type: payload}`` (the type of an
    exception message is its ``:exception-type``)."""
    headers = as_dict(row.get("headers"))
    kind = as_str(headers.get(":event-type")) or as_str(headers.get(":exception-type")) or ""
    return {kind: row.get("data")}


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
