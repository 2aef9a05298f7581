"""A loopback server that answers requests with the HTTP responses a recording holds, back on
the wire as the vendor sent them — or *drifted*: changed the way a provider changes its API
under a program that was recorded against it.

A test records a session with a real SDK against one of the loopback vendor servers
(:mod:`tests.support.sdk_server`, :mod:`tests.support.gemini_server`,
:mod:`tests.support.bedrock_server`), then points the same program — or a drift check — at a
:class:`DriftServer` built from that recording and a list of changes: a field renamed
(:class:`Rename`), of another type or another enum value (:class:`Replace`), a new field
(:class:`Add`), an error body instead of the answer (:class:`ErrorBody`), a new SSE event type
(:class:`NewEvent`), the text streamed in smaller pieces (:class:`Rechunk`), or the same shape
with other values (:class:`VaryContent`).

Only HTTP calls (``"boundary": "http"``) that got a response are served. The k-th request for
a method and path (the query left out) gets the k-th recorded call with that method and
path, wherever its URL pointed (the recording was made against another port); a request
nothing is left for gets a 404 whose JSON body says so. ``received`` keeps every request, as
:class:`~tests.support.loopback_server.LoopbackServer` does; ``served`` the ``call_index``
each answered one was served from.

A response is read from the call's rows into a :class:`ServedResponse` (status, headers,
SSE or event-stream events, body), the changes applied in order, and written: status and
headers as recorded (without the wire's framing: ``content-length``, ``content-encoding``,
``transfer-encoding``, ``connection``); SSE events one chunk each (``event:``, ``id:``,
``retry:`` lines, then one ``data:`` line per line of the data, JSON dumped compactly), an
``sse_rest`` text as the last chunk; event-stream messages one chunk each, encoded anew from
their headers and ``data`` with :func:`~tests.support.bedrock_server.event_message` (a
message stored without ``data`` as its bytes); a body whole, with its ``content-length``.
A call that ended in a transport error is cut after what it received.

    path = tmp_path / "session.jsonl"
    with SdkServer() as live, openprogram.record_replay(path, mode="record"):
        run_agent(base_url=live.openai_url)
    changes = [Rename("choices[*].finish_reason", "stop_cause"), Rechunk()]
    with DriftServer(path, changes) as server:
        run_agent(base_url=server.base_url + "/v1")   # the drifted provider
        assert server.served == [0, 1]

Paths name places in a JSON value: ``a.b[*].c`` (``[*]``: every item of a list, ``[2]``: one
item), ``$`` the value itself. A path change applies to the JSON body and to the data of every
SSE and event-stream event — only of the events named ``event`` (SSE event name, the data's
``type``, or the event stream's ``:event-type``) when it is given — and, with ``call``, only
to the response of that recorded ``call_index``.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import string
import struct
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import unquote, urlsplit

from openprogram.recording import RecordedCall, Recording, read_recording
from tests.support.bedrock_server import event_message
from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received

__all__ = [
    "Add",
    "Change",
    "DriftHandler",
    "DriftServer",
    "ErrorBody",
    "NewEvent",
    "Received",
    "Rechunk",
    "Rename",
    "Replace",
    "ServedEvent",
    "ServedResponse",
    "VaryContent",
    "apply_changes",
    "body_pieces",
    "parse_path",
    "served_response",
]

Kind = Literal["sse", "eventstream", "body", "none"]
"""How a response's body goes: SSE events, event-stream messages, one body, or none."""

Segment = str | int | None
"""One step of a path: a key, a list index, or None for every item of a list (``[*]``)."""

SSE_TYPE = "text/event-stream"
EVENTSTREAM_TYPE = "application/vnd.amazon.eventstream"
DROPPED_HEADERS = frozenset(
    {"content-length", "content-encoding", "transfer-encoding", "connection"}
)
"""Recorded response headers not served: the server frames the body itself."""
DONE = "[DONE]"
"""The data of the end marker OpenAI's Chat Completions stream ends with."""


# -- the served response ---------------------------------------------------------------------


@dataclass
class ServedEvent:
    """One event of a streamed response: an SSE event, or a message of an AWS event stream.

    ``name``: the SSE ``event:`` field, or the message's ``:event-type`` header (None when
    there is none). ``data``: the SSE data (parsed JSON, or text), or the message's payload
    (parsed JSON, or text; None for a message stored without ``data``, which is served as its
    recorded bytes). ``headers``: a message's headers (None for SSE, and for a new message,
    whose headers are made from ``name``). ``extra``: the row's other fields — ``id`` and
    ``retry`` of an SSE event, ``base64`` of a message."""

    name: str | None
    data: Any
    headers: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class ServedResponse:
    """A response as it is about to be served; a :class:`Change` may change it in place.

    ``body``: for ``kind`` ``"body"``, the JSON value to send (dumped compactly), or
    ``bytes`` sent as they are (a recorded ``text`` or ``base64`` body). ``rest``: the text
    sent after an SSE stream's events (a recorded ``sse_rest``). ``cut``: the connection is
    closed after the body, without its end (the recorded call ended in a transport error).
    ``call_index``: the recorded call it is served from."""

    status: int
    headers: dict[str, str]
    kind: Kind
    events: list[ServedEvent] = field(default_factory=list)
    body: Any = None
    rest: str | None = None
    cut: bool = False
    call_index: int | None = None


def served_response(call: RecordedCall) -> ServedResponse:
    """The response ``call`` recorded, read from its rows (deep-copied: changing it changes
    nothing of ``call``). Raises ``ValueError`` when it has no ``http_response`` row."""
    rows = call.event_rows
    if not rows or rows[0].get("type") != "http_response":
        raise ValueError(f"call {call.call_index} holds no http_response")
    head = rows[0]
    headers = {
        str(name).lower(): str(value)
        for name, value in head.get("headers", {}).items()
        if str(name).lower() not in DROPPED_HEADERS
    }
    response = ServedResponse(
        int(head["status"]),
        headers,
        _kind_of(headers.get("content-type", "")),
        cut=call.outcome == "error",
        call_index=call.call_index,
    )
    for row in rows[1:]:
        kind = row.get("type")
        if kind == "sse":
            response.kind = "sse"
            extra: dict[str, Any] = {key: row[key] for key in ("id", "retry") if key in row}
            data = copy.deepcopy(row.get("data"))
            response.events.append(ServedEvent(row.get("event"), data, None, extra))
        elif kind == "sse_rest":
            response.kind = "sse"
            response.rest = str(row.get("raw", ""))
        elif kind == "eventstream":
            response.kind = "eventstream"
            message_headers = row.get("headers")
            name = message_headers.get(":event-type") if isinstance(message_headers, dict) else None
            response.events.append(
                ServedEvent(
                    name if isinstance(name, str) else None,
                    copy.deepcopy(row["data"]) if "data" in row else None,
                    copy.deepcopy(message_headers) if isinstance(message_headers, dict) else None,
                    {"base64": row["base64"]} if "base64" in row else {},
                )
            )
        elif kind == "http_body":
            response.kind = "body"
            if "body" in row:
                response.body = copy.deepcopy(row["body"])
            elif "text" in row:
                response.body = str(row["text"]).encode()
            else:
                response.body = base64.b64decode(row.get("base64", ""))
    return response


def _kind_of(content_type: str) -> Kind:
    media = content_type.partition(";")[0].strip().lower()
    if media == SSE_TYPE:
        return "sse"
    if media == EVENTSTREAM_TYPE:
        return "eventstream"
    return "none"


# -- writing it ------------------------------------------------------------------------------


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def sse_bytes(event: ServedEvent) -> bytes:
    """One SSE event: ``event:``, ``id:`` and ``retry:`` when it has them, one ``data:`` line
    per line of its data (text as is, anything else JSON dumped compactly), a blank line."""
    lines: list[str] = []
    if event.name is not None:
        lines.append(f"event: {event.name}")
    if "id" in event.extra:
        event_id = event.extra["id"]
        lines.append("id:" if event_id is None else f"id: {event_id}")
    if isinstance(event.extra.get("retry"), int):
        lines.append(f"retry: {event.extra['retry']}")
    text = event.data if isinstance(event.data, str) else _compact(event.data)
    lines += [f"data: {line}" for line in text.split("\n")]
    return ("\n".join(lines) + "\n\n").encode()


def eventstream_bytes(event: ServedEvent) -> bytes:
    """One event-stream message: its recorded bytes when it has no ``data``, else encoded
    anew around ``data`` (text as UTF-8, anything else JSON dumped compactly) with its
    headers — made from ``name`` for a new message, whose ``:event-type`` it also sets."""
    recorded = event.extra.get("base64")
    if event.data is None and isinstance(recorded, str):
        return base64.b64decode(recorded)
    payload = event.data.encode() if isinstance(event.data, str) else _compact(event.data).encode()
    headers: dict[str, Any] = (
        dict(event.headers)
        if event.headers is not None
        else {":content-type": "application/json", ":message-type": "event"}
    )
    if event.name is not None:
        headers[":event-type"] = event.name
    if all(isinstance(value, str) for value in headers.values()):
        return event_message(headers, payload)
    if isinstance(recorded, str):  # headers of other types: kept as their recorded bytes
        return _with_payload(base64.b64decode(recorded), payload)
    return event_message({name: str(value) for name, value in headers.items()}, payload)


def _with_payload(message: bytes, payload: bytes) -> bytes:
    """``message`` with ``payload`` in place of its own: its headers' bytes as they were, its
    lengths and checksums computed anew."""
    (headers_length,) = struct.unpack(">I", message[4:8])
    headers = message[12 : 12 + headers_length]
    prelude = struct.pack(">II", 12 + len(headers) + len(payload) + 4, len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def body_pieces(response: ServedResponse) -> list[bytes]:
    """The body of ``response`` as it is written: one piece per SSE event (then the
    ``rest``) or event-stream message, each sent as one chunk; the whole body as one piece;
    nothing for ``"none"``."""
    if response.kind == "sse":
        pieces = [sse_bytes(event) for event in response.events]
        if response.rest:
            pieces.append(response.rest.encode())
        return pieces
    if response.kind == "eventstream":
        return [eventstream_bytes(event) for event in response.events]
    if response.kind == "body":
        body = response.body
        return [body if isinstance(body, bytes) else _compact(body).encode()]
    return []


def write_response(http: DriftHandler, response: ServedResponse) -> None:
    """Write ``response`` on ``http``'s connection: a stream chunked, one piece a chunk; a
    body whole with its ``content-length``; cut after its pieces when ``response.cut``."""
    headers = {
        name: value for name, value in response.headers.items() if name not in DROPPED_HEADERS
    }
    pieces = body_pieces(response)
    streamed = response.kind in ("sse", "eventstream")
    if streamed:
        default_type = SSE_TYPE if response.kind == "sse" else EVENTSTREAM_TYPE
        headers.setdefault("content-type", default_type)
    if streamed or response.cut:
        headers["transfer-encoding"] = "chunked"
        http.send_recorded_head(response.status, headers)
        for piece in pieces:
            if piece:
                http.send_chunk(piece)
        if response.cut:
            http.cut()
        else:
            http.end_chunks()
        return
    raw = b"".join(pieces)
    headers["content-length"] = str(len(raw))
    http.send_recorded_head(response.status, headers)
    http.send_body(raw)


# -- paths -----------------------------------------------------------------------------------


def parse_path(path: str) -> tuple[Segment, ...]:
    """The steps of ``path`` (``a.b[*].c``, ``choices[0]``, ``$`` for the root, which may
    also begin a path: ``$.a``). Raises ``ValueError`` for anything else."""
    text = path.strip()
    if text.startswith("$"):
        text = text[1:].removeprefix(".")
    segments: list[Segment] = []
    position = 0
    while position < len(text):
        if text[position] == "[":
            end = text.find("]", position)
            inside = text[position + 1 : end] if end > 0 else ""
            if inside != "*" and not inside.isdigit():
                raise ValueError(f"bad path {path!r}: [*] or [N] expected at {position}")
            segments.append(None if inside == "*" else int(inside))
            position = end + 1
        else:
            if segments and text[position] == ".":
                position += 1
            end = position
            while end < len(text) and text[end] not in ".[":
                end += 1
            if end == position or "]" in text[position:end]:
                raise ValueError(f"bad path {path!r}: a key expected at {position}")
            segments.append(text[position:end])
            position = end
        if position < len(text) and text[position] not in ".[":
            raise ValueError(f"bad path {path!r}: . or [ expected at {position}")
    if text.endswith("."):
        raise ValueError(f"bad path {path!r}: ends with .")
    return tuple(segments)


def _reached(value: Any, segments: Sequence[Segment]) -> list[Any]:
    """Every value ``segments`` lead to from ``value`` (none where a step finds nothing)."""
    current = [value]
    for segment in segments:
        following: list[Any] = []
        for item in current:
            if segment is None:
                if isinstance(item, list):
                    following.extend(item)
            elif isinstance(segment, int):
                if isinstance(item, list) and segment < len(item):
                    following.append(item[segment])
            elif isinstance(item, dict) and segment in item:
                following.append(item[segment])
        current = following
    return current


Slot = tuple[Any, str | int]
"""A place holding a value: a dict and one of its keys, or a list and one of its indices."""


def _slots(value: Any, segments: Sequence[Segment]) -> list[Slot]:
    """The places ``segments`` name in ``value`` that exist (none for the root)."""
    if not segments:
        return []
    *head, last = segments
    slots: list[Slot] = []
    for container in _reached(value, head):
        if last is None and isinstance(container, list):
            slots += [(container, index) for index in range(len(container))]
        elif last is not None and _holds(container, last):
            slots.append((container, last))
    return slots


def _holds(container: Any, key: str | int) -> bool:
    """Whether ``container`` has a value at ``key``: a dict the key, a list the index."""
    if isinstance(key, int):
        return isinstance(container, list) and key < len(container)
    return isinstance(container, dict) and key in container


def _named(event: ServedEvent, name: str) -> bool:
    """Whether ``event`` is the event ``name``: its SSE name or ``:event-type``, or its
    data's ``type``."""
    data = event.data
    return event.name == name or (isinstance(data, dict) and data.get("type") == name)


def _each_value(response: ServedResponse, event: str | None, change: Callable[[Any], Any]) -> None:
    """``change`` applied to the JSON body (unless ``event`` restricts it to events) and to
    every event's data (of the events named ``event`` only, when given): each replaced by
    what ``change`` returns."""
    if event is None and response.kind == "body" and not isinstance(response.body, bytes):
        response.body = change(response.body)
    for served in response.events:
        if event is None or _named(served, event):
            served.data = change(served.data)


# -- the changes -----------------------------------------------------------------------------


class Change(Protocol):
    """What changes a response before it is served: ``apply`` returns the response to serve
    (``response`` itself changed in place, or another); ``call``: only the response of that
    recorded ``call_index`` (None: every response)."""

    @property
    def call(self) -> int | None: ...

    def apply(self, response: ServedResponse) -> ServedResponse: ...


def apply_changes(response: ServedResponse, changes: Iterable[Change]) -> ServedResponse:
    """``response`` with ``changes`` applied in order, each only to the call it names."""
    for change in changes:
        if change.call is None or change.call == response.call_index:
            response = change.apply(response)
    return response


@dataclass(frozen=True)
class Rename:
    """The last key of ``path`` renamed ``new_key`` wherever it occurs, in its place among the
    other keys: ``Rename("choices[*].finish_reason", "stop_cause")``."""

    path: str
    new_key: str
    _: KW_ONLY
    event: str | None = None
    call: int | None = None

    def __post_init__(self) -> None:
        segments = parse_path(self.path)
        if not segments or not isinstance(segments[-1], str):
            raise ValueError(f"Rename needs a path ending in a key, not {self.path!r}")

    def apply(self, response: ServedResponse) -> ServedResponse:
        segments = parse_path(self.path)

        def rename(value: Any) -> Any:
            for container, key in _slots(value, segments):
                items = list(container.items())
                container.clear()
                container.update((self.new_key if name == key else name, v) for name, v in items)
            return value

        _each_value(response, self.event, rename)
        return response


@dataclass(frozen=True)
class Replace:
    """The value at ``path`` set to ``value`` wherever the key exists and its value is not
    null (also where it is, with ``include_null``): a type change,
    ``Replace("created", "yesterday")``, or another enum value,
    ``Replace("choices[*].finish_reason", "function_call")``. ``$`` replaces the whole
    body, or each event's data."""

    path: str
    value: Any
    _: KW_ONLY
    include_null: bool = False
    event: str | None = None
    call: int | None = None

    def __post_init__(self) -> None:
        parse_path(self.path)

    def apply(self, response: ServedResponse) -> ServedResponse:
        segments = parse_path(self.path)

        def replace(value: Any) -> Any:
            if not segments:
                keep = value is None and not self.include_null
                return value if keep else copy.deepcopy(self.value)
            for container, key in _slots(value, segments):
                if container[key] is not None or self.include_null:
                    container[key] = copy.deepcopy(self.value)
            return value

        _each_value(response, self.event, replace)
        return response


@dataclass(frozen=True)
class Add:
    """``key`` set to ``value`` in each object at ``path`` (``$``: the body, or each event's
    data): ``Add("$", "service_tier", "default")``, ``Add("choices[*]", "logprobs_v2", None)``."""

    path: str
    key: str
    value: Any
    _: KW_ONLY
    event: str | None = None
    call: int | None = None

    def __post_init__(self) -> None:
        parse_path(self.path)

    def apply(self, response: ServedResponse) -> ServedResponse:
        segments = parse_path(self.path)

        def add(value: Any) -> Any:
            for container in _reached(value, segments):
                if isinstance(container, dict):
                    container[self.key] = copy.deepcopy(self.value)
            return value

        _each_value(response, self.event, add)
        return response


@dataclass(frozen=True)
class ErrorBody:
    """The whole response replaced by ``status`` and the JSON ``body``, with the content type
    ``application/json`` and ``headers`` (``retry-after``, ``x-should-retry``…) only."""

    status: int
    body: Any
    headers: Mapping[str, str] | None = None
    _: KW_ONLY
    call: int | None = None

    def apply(self, response: ServedResponse) -> ServedResponse:
        headers = {"content-type": "application/json"}
        headers.update({name.lower(): value for name, value in (self.headers or {}).items()})
        return ServedResponse(
            self.status,
            headers,
            "body",
            body=copy.deepcopy(self.body),
            call_index=response.call_index,
        )


@dataclass(frozen=True)
class NewEvent:
    """An event inserted into a streamed response: an SSE event named ``name`` (None: no
    ``event:`` line), or an event-stream message of ``:event-type`` ``name``, holding
    ``data``. ``position`` -1: at the end, before the end marker ``[DONE]`` when the stream
    ends with it; else where :meth:`list.insert` puts it. A response that is not streamed is
    left as it is."""

    name: str | None
    data: Any
    position: int = -1
    _: KW_ONLY
    call: int | None = None

    def apply(self, response: ServedResponse) -> ServedResponse:
        if response.kind not in ("sse", "eventstream"):
            return response
        events = response.events
        event = ServedEvent(self.name, copy.deepcopy(self.data))
        if self.position == -1:
            ends_done = bool(events) and events[-1].data == DONE
            events.insert(len(events) - 1 if ends_done else len(events), event)
        else:
            events.insert(self.position, event)
        return response


_DELTA_PATHS: tuple[tuple[str | None, tuple[Segment, ...]], ...] = (
    (None, ("choices", None, "delta", "content")),  # OpenAI Chat Completions
    ("content_block_delta", ("delta", "text")),  # Anthropic Messages
    (None, ("candidates", None, "content", "parts", None, "text")),  # Gemini
    ("response.output_text.delta", ("delta",)),  # OpenAI Responses
    ("contentBlockDelta", ("delta", "text")),  # Bedrock ConverseStream
)
"""Where a streamed event carries a piece of text: (the event it must be, or None for any;
the path in its data)."""

_TEXT_PATHS: tuple[tuple[str | None, tuple[Segment, ...]], ...] = (
    (None, ("choices", None, "message", "content")),  # OpenAI Chat Completions
    (None, ("content", None, "text")),  # Anthropic Messages
    (None, ("output", None, "content", None, "text")),  # OpenAI Responses
    (None, ("output", "message", "content", None, "text")),  # Bedrock Converse
    # the texts a stream repeats whole: OpenAI Responses, Anthropic Messages
    (None, ("response", "output", None, "content", None, "text")),
    (None, ("item", "content", None, "text")),
    (None, ("part", "text")),
    ("response.output_text.done", ("text",)),
    ("content_block_start", ("content_block", "text")),
    ("message_start", ("message", "content", None, "text")),
)
"""Where a whole body, or an event repeating a whole text, holds the model's text."""


def _text_slots(
    value: Any, paths: Iterable[tuple[str | None, tuple[Segment, ...]]], name: str | None
) -> list[Slot]:
    """The places of ``value`` (an event's data named ``name``, or a body) the ``paths``
    name that hold text, each once."""
    found: list[Slot] = []
    seen: set[tuple[int, str | int]] = set()
    for event, path in paths:
        if event is not None and not _named(ServedEvent(name, value), event):
            continue
        for container, key in _slots(value, path):
            if isinstance(container[key], str) and (id(container), key) not in seen:
                seen.add((id(container), key))
                found.append((container, key))
    return found


_FINISH_KEYS = ("finish_reason", "finishReason")


def _without_finish(data: Any) -> None:
    """The finish reasons and Gemini's counts taken out of the first half of a split event:
    a stream says them once, at its end."""
    for container, key in _slots(data, ("choices", None, "finish_reason")):
        container[key] = None
    for candidate in _reached(data, ("candidates", None)):
        if isinstance(candidate, dict):
            candidate.pop("finishReason", None)
    if isinstance(data, dict):
        data.pop("usageMetadata", None)


@dataclass(frozen=True)
class Rechunk:
    """Every streamed piece of text of two characters or more sent as two events: the event
    twice, the first half of the text in the first, the second half in the second (a finish
    reason, and Gemini's counts, only in the second). The pieces it knows: OpenAI Chat
    Completions ``choices[*].delta.content``, Anthropic's ``delta.text`` of
    ``content_block_delta``, Gemini's ``candidates[*].content.parts[*].text``, OpenAI
    Responses' ``delta`` of ``response.output_text.delta``, Bedrock's ``delta.text`` of
    ``contentBlockDelta``."""

    _: KW_ONLY
    call: int | None = None

    def apply(self, response: ServedResponse) -> ServedResponse:
        events: list[ServedEvent] = []
        for event in response.events:
            slots = _text_slots(event.data, _DELTA_PATHS, event.name)
            if not any(len(container[key]) >= 2 for container, key in slots):
                events.append(event)
                continue
            first, second = copy.deepcopy(event), copy.deepcopy(event)
            first_slots = _text_slots(first.data, _DELTA_PATHS, first.name)
            second_slots = _text_slots(second.data, _DELTA_PATHS, second.name)
            for (container, key), (other, other_key) in zip(first_slots, second_slots, strict=True):
                text = container[key]
                container[key] = text[: len(text) // 2]
                other[other_key] = text[len(text) // 2 :]
            _without_finish(first.data)
            events += [first, second]
        response.events = events
        return response


_ROT = str.maketrans(
    string.ascii_lowercase + string.ascii_uppercase + string.digits,
    string.ascii_lowercase[13:]
    + string.ascii_lowercase[:13]
    + string.ascii_uppercase[13:]
    + string.ascii_uppercase[:13]
    + string.digits[5:]
    + string.digits[:5],
)


def other_text(text: str) -> str:
    """Another text of the same length: ASCII letters turned by 13, digits by 5, so that the
    pieces of a stream still add up to its whole text; a text with neither gets
    `` (again)`` after it. An empty text stays empty."""
    turned = text.translate(_ROT)
    return turned if turned != text or not text else text + " (again)"


def other_id(value: str) -> str:
    """Another id of the same form: the prefix up to the first ``-`` or ``_`` kept, each
    letter and digit after it another of its kind (hex digits stay hex), the same for the
    same id."""
    cuts = [at for at in (value.find("-"), value.find("_")) if at >= 0]
    start = min(cuts) + 1 if cuts else 0
    prefix, rest = value[:start], value[start:]
    hexadecimal = all(char in string.hexdigits.lower() + "-" for char in rest)
    noise = hashlib.shake_256(value.encode()).digest(len(rest))
    chars: list[str] = []
    for char, byte in zip(rest, noise, strict=True):
        if hexadecimal and char.isalnum():
            alphabet = "0123456789abcdef"
        elif char in string.digits:
            alphabet = string.digits
        elif char in string.ascii_lowercase:
            alphabet = string.ascii_lowercase
        elif char in string.ascii_uppercase:
            alphabet = string.ascii_uppercase
        else:
            chars.append(char)
            continue
        picked = alphabet[byte % len(alphabet)]
        chars.append(
            alphabet[(alphabet.index(picked) + 1) % len(alphabet)] if picked == char else picked
        )
    changed = prefix + "".join(chars)
    return changed if changed != value else value + "x"


def _walk(value: Any) -> Iterator[Any]:
    """``value`` and every dict and list inside it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            yield item
            stack.extend(item.values())
        elif isinstance(item, list):
            yield item
            stack.extend(item)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _more_tokens(value: Any) -> Any:
    """Every count in a usage object 7 more: numbers as numbers, digit strings as strings."""
    if isinstance(value, dict):
        return {key: _more_tokens(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_more_tokens(item) for item in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 7
    if isinstance(value, str) and value.isdigit():
        return str(int(value) + 7)
    return value


def _renamed_ids(value: Any, ids: Mapping[str, str]) -> Any:
    """``value`` with every string that is one of ``ids`` replaced by its new one."""
    if isinstance(value, dict):
        return {key: _renamed_ids(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed_ids(item, ids) for item in value]
    if isinstance(value, str):
        return ids.get(value, value)
    return value


_ID_KEYS = ("id", "responseId")
_CREATED_KEYS = ("created", "created_at")
_USAGE_KEYS = ("usage", "usageMetadata")


@dataclass(frozen=True)
class VaryContent:
    """The same shape with other values, as the same provider answers another time: every
    piece of streamed text (the pieces :class:`Rechunk` knows) and every whole text of a
    message (OpenAI ``choices[*].message.content`` and ``output[*].content[*].text``,
    Anthropic ``content[*].text``, Bedrock ``output.message.content[*].text``, Gemini's parts,
    and the whole texts a stream repeats) another text (:func:`other_text`); every ``id`` and
    ``responseId`` string another of the same form (:func:`other_id`), and so every string
    that refers to one; every ``created``/``created_at`` number 1000 more; every count in a
    ``usage``/``usageMetadata`` object 7 more."""

    _: KW_ONLY
    call: int | None = None

    def apply(self, response: ServedResponse) -> ServedResponse:
        paths = (*_DELTA_PATHS, *_TEXT_PATHS)
        named: list[tuple[Any, str | None]] = [
            (event.data, event.name) for event in response.events
        ]
        if response.kind == "body" and not isinstance(response.body, bytes):
            named.append((response.body, None))
        for value, name in named:
            for container, key in _text_slots(value, paths, name):
                container[key] = other_text(container[key])
        values = [value for value, _ in named]
        ids: dict[str, str] = {}
        for value in values:
            for item in _walk(value):
                if not isinstance(item, dict):
                    continue
                for key in _CREATED_KEYS:
                    if _is_number(item.get(key)):
                        item[key] += 1000
                for key in _USAGE_KEYS:
                    if isinstance(item.get(key), dict):
                        item[key] = _more_tokens(item[key])
                for key in _ID_KEYS:
                    if isinstance(item.get(key), str) and item[key]:
                        ids[item[key]] = other_id(item[key])
        _each_value(response, None, lambda value: _renamed_ids(value, ids))
        return response


# -- the server ------------------------------------------------------------------------------


class DriftHandler(LoopbackHandler):
    """A connection to a :class:`DriftServer`: GET, PUT, PATCH and DELETE read and answered
    as POST is; the status line and headers written as recorded (no ``Date`` or ``Server`` of
    its own)."""

    def do_GET(self) -> None:
        self.do_POST()

    def do_PUT(self) -> None:
        self.do_POST()

    def do_PATCH(self) -> None:
        self.do_POST()

    def do_DELETE(self) -> None:
        self.do_POST()

    def send_recorded_head(self, status: int, headers: Mapping[str, str]) -> None:
        """The status line and ``headers`` only, flushed."""
        self.send_response_only(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()


def _path_of(target: str) -> str:
    """The path of a request target or a URL, without its query, percent-decoded."""
    path = urlsplit(target).path if "://" in target else target.partition("?")[0]
    return unquote(path.partition("#")[0]) or "/"


def _same_body(call: RecordedCall, body: bytes) -> bool:
    if "body" not in call.request:
        return not body
    try:
        return bool(json.loads(body) == call.request["body"])
    except ValueError:
        return False


def _http_calls(recording: Path | str | Recording | Sequence[RecordedCall]) -> list[RecordedCall]:
    if isinstance(recording, Path | str):
        recording = read_recording(Path(recording))
    calls = recording.calls if isinstance(recording, Recording) else list(recording)
    return [
        call
        for call in calls
        if call.boundary == "http"
        and call.event_rows
        and call.event_rows[0].get("type") == "http_response"
    ]


class DriftServer(LoopbackServer):
    """A recording's HTTP responses served on ``127.0.0.1``, with ``changes`` applied; a
    context manager (started on creation). ``recording``: a recording file, a read
    :class:`~openprogram.recording.Recording`, or its calls; ``port``: 0 for any free one."""

    handler = DriftHandler

    def __init__(
        self,
        recording: Path | str | Recording | Sequence[RecordedCall],
        changes: Sequence[Change] = (),
        *,
        port: int = 0,
    ) -> None:
        self.changes: tuple[Change, ...] = tuple(changes)
        self.served: list[int] = []
        """The ``call_index`` each answered request was served from, in order."""
        self.queues: dict[tuple[str, str], deque[RecordedCall]] = {}
        """The recorded calls not served yet, by method and path."""
        for call in _http_calls(recording):
            key = (str(call.request.get("method", "")).upper(), _path_of(call.request["url"]))
            self.queues.setdefault(key, deque()).append(call)
        super().__init__(port)

    def next_call(self, method: str, path: str, body: bytes = b"") -> RecordedCall | None:
        """The next recorded call for ``method`` and ``path`` — the first whose JSON request
        body equals ``body``, else the first — taken (None when none is left); its
        ``call_index`` added to ``served``. Requests sent concurrently arrive in any order:
        the body pairs each with its own recorded call."""
        with self.lock:
            queue = self.queues.get((method.upper(), _path_of(path)))
            if not queue:
                return None
            call = next((call for call in queue if _same_body(call, body)), queue[0])
            queue.remove(call)
            self.served.append(call.call_index)
            return call

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        assert isinstance(http, DriftHandler)
        call = self.next_call(received.method, received.path, received.body)
        if call is None:
            path = received.path.partition("?")[0]
            message = f"drift server: nothing recorded left for {received.method} {path}"
            response = ServedResponse(
                404,
                {"content-type": "application/json"},
                "body",
                body={"error": {"message": message}},
            )
        else:
            response = apply_changes(served_response(call), self.changes)
        write_response(http, response)
