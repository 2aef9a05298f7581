"""Server-sent events: the parser the recorder tees a stream through, and the encoder replay
serves recorded events with.

:class:`SseParser` follows the WHATWG event-stream parsing rules, fed text as it arrives:

* lines end with ``\\r\\n``, ``\\r`` or ``\\n`` (a ``\\r`` at the end of one piece waits for
  the next, which may start with its ``\\n``); a byte order mark opening the stream is
  dropped;
* a line starting with ``:`` is a comment; ``field: value`` loses one space after the colon;
  a line without a colon is a field with an empty value; fields other than ``event``,
  ``data``, ``id`` and ``retry`` are ignored; an ``id`` holding NUL and a ``retry`` that is
  not all ASCII digits are ignored;
* a blank line dispatches the event: its ``data`` lines joined with ``\\n``. A block without
  any ``data`` line dispatches nothing (nor does a comment-only block), and its ``event``
  is forgotten; a final block that the stream ends before its blank line is never dispatched.

Each dispatched event is a dict: ``data`` (text), plus ``event`` when an ``event`` field set a
non-empty type, and ``id`` / ``retry`` when such a field came since the previous dispatched
event (an ``id`` is the stream's "last event id": a client keeps it for later events, so
it is carried by the event it first reaches). :func:`encode_sse_event` writes such an event
back so that parsing it gives the same event again: its fields, one ``data`` line for each
line of its data, then a blank line. A parser made with ``keep_raw=True`` also gives each
event its ``raw`` text: everything the stream held since the previous dispatch, up to and
including the blank line that dispatched it — comments, fields of blocks that dispatched
nothing, the line ends as they came, a byte order mark — so that the event's bytes can be
served exactly as they came (:meth:`SseParser.rest` is what followed the last event).

:func:`is_terminal_event` tells the event a vendor's server sends last in a stream: the
OpenAI ``data: [DONE]`` sentinel, Anthropic's ``message_stop``, and the OpenAI Responses
``response.completed`` / ``response.incomplete`` / ``response.failed``. A client that stops
there (the ``openai`` SDK stops reading at ``[DONE]``) has read every event of the stream,
though the transport never saw the body end."""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["SseParser", "encode_sse_event", "encode_sse_fields", "is_terminal_event"]

_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = "\ufeff"
_TERMINAL_DATA = "[DONE]"


@functools.cache
def _terminal_types() -> frozenset[str]:
    """Each vendor API's last event types (``last_events``), read when first asked."""
    from openprogram.vendors import VENDOR_APIS

    return frozenset(kind for api in VENDOR_APIS for kind in api.last_events)


class SseParser:
    """Parses one event stream, fed text in pieces; returns the events each piece dispatched."""

    __slots__ = ("_data", "_event", "_id", "_pending", "_raw", "_retry", "_started")

    def __init__(self, *, keep_raw: bool = False) -> None:
        self._raw: list[str] | None = [] if keep_raw else None
        """The whole lines taken since the last dispatch, as they came (``keep_raw``)."""
        self._pending: list[str] = []
        """The start of a line whose end has not arrived yet (or ends in a lone ``\\r``)."""
        self._started = False
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._retry: int | None = None

    def feed(self, text: str) -> list[dict[str, Any]]:
        """The events dispatched by the lines ``text`` completes."""
        if not self._started and text:
            self._started = True
            if text.startswith(_BOM):
                text = text[1:]
                if self._raw is not None:
                    self._raw.append(_BOM)
        events: list[dict[str, Any]] = []
        pending = self._pending
        if "\n" not in text and "\r" not in text and not (pending and pending[-1][-1:] == "\r"):
            pending.append(text)  # part of a long line: nothing to split yet
            return events
        if pending:
            self._pending.append(text)
            buffer = "".join(self._pending)
        else:
            buffer = text
        start = 0
        end = len(buffer)
        raw = self._raw
        for match in _LINE_END.finditer(buffer):
            if match.end() == end and match.group() == "\r":
                break  # perhaps the first half of a \r\n split across pieces
            if raw is not None:
                raw.append(buffer[start : match.end()])
            self._line(buffer[start : match.start()], events)
            start = match.end()
        self._pending = [buffer[start:]] if start < end else []
        return events

    @property
    def between_events(self) -> bool:
        """Whether nothing has arrived since the last dispatch but whole comment lines and
        blocks that dispatched nothing: no part of a line, no field of a next event."""
        return (
            not self._pending
            and not self._data
            and not self._event
            and self._id is None
            and self._retry is None
        )

    def finish(self) -> list[dict[str, Any]]:
        """The events dispatched at the end of the stream: only by a blank line that ended in
        a lone ``\\r`` (an unfinished line and an undispatched block are dropped)."""
        events: list[dict[str, Any]] = []
        pending = "".join(self._pending)
        self._pending = []
        if pending.endswith("\r"):
            if self._raw is not None:
                self._raw.append(pending)
            self._line(pending[:-1], events)
        elif pending and self._raw is not None:
            self._raw.append(pending)
        return events

    def rest(self) -> str:
        """The text taken since the last dispatched event (``keep_raw``; after
        :meth:`finish`: all that followed the stream's last event)."""
        raw = self._raw
        return "".join(raw) + "".join(self._pending) if raw is not None else ""

    def _line(self, line: str, events: list[dict[str, Any]]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return
        name, colon, value = line.partition(":")
        if colon and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, events: list[dict[str, Any]]) -> None:
        event_type, self._event = self._event, ""
        if not self._data:
            return
        event: dict[str, Any] = {}
        if event_type:
            event["event"] = event_type
        event["data"] = "\n".join(self._data)
        self._data = []
        if self._id is not None:
            event["id"] = self._id
            self._id = None
        if self._retry is not None:
            event["retry"] = self._retry
            self._retry = None
        if self._raw is not None:
            event["raw"] = "".join(self._raw)
            self._raw.clear()
        events.append(event)


def is_terminal_event(event: dict[str, Any]) -> bool:
    """Whether ``event`` (as :class:`SseParser` dispatches it) is one a vendor's server ends
    its stream with."""
    return event.get("event") in _terminal_types() or event["data"] == _TERMINAL_DATA


def encode_sse_event(event: str | None, data: str, id: str | None, retry: int | None) -> bytes:
    """One event as a stream carries it: its fields, a ``data`` line for each line of
    ``data``, and the blank line that dispatches it."""
    parts = [encode_sse_fields(event, id, retry)]
    for line in _LINE_END.split(data):
        parts.append(f"data: {line}\n")
    parts.append("\n")
    return "".join(parts).encode()


def encode_sse_fields(event: str | None, id: str | None, retry: int | None) -> str:
    """The lines of an event before its data: ``event``, ``id`` and ``retry`` when set."""
    parts: list[str] = []
    if event:
        parts.append(f"event: {event}\n")
    if id is not None:
        parts.append(f"id: {id}\n")
    if retry is not None:
        parts.append(f"retry: {retry}\n")
    return "".join(parts)
