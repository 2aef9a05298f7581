"""AWS's binary event stream (``application/vnd.amazon.eventstream``), one recording row per
message: how Bedrock's ``ConverseStream`` (and every other AWS streaming API) answers.

A message on the wire is::

    total length (4 bytes, big-endian) | headers length (4) | CRC32 of those 8 bytes (4)
    headers: name length (1) | name | value type (1) | value …
    payload
    CRC32 of everything before it (4)

Its headers name what the message is (``:message-type`` ``event`` or ``exception``,
``:event-type`` or ``:exception-type``, ``:content-type``); Bedrock's payloads are JSON.

Recording: :class:`MessageSplitter` cuts the body, as it arrives, into whole messages by their
prelude (never by their content), and :func:`eventstream_row` makes each one an ``eventstream``
event: ``base64`` (the message's exact bytes, what replay serves) and, when the message is well
formed, ``headers`` (its decoded headers, for reading and diffing) and ``data`` (its payload: the
parsed JSON, or the text), redacted as model output. When redaction changes the payload the stored
bytes are the message rebuilt around the redacted payload (its headers as received, new lengths and
checksums), so no secret reaches disk in either form. Bytes that are not a whole message (a stream
cut mid-message, or a prelude no message has) are one last row holding only ``base64``.

Replaying (:func:`encode_eventstream_row`): the stored bytes, unless their payload no longer
agrees with ``data`` — a rewrite of the recording redacted it — when the message is rebuilt
around ``data``. A rewrite that redacts ``data`` stores that rebuilt message too
(:func:`with_agreeing_bytes`), so the secret leaves the bytes as well."""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from openprogram.http_boundary.codec import _NOT_JSON, _parsed_json
from openprogram.recording.redaction import SecretRedactor

__all__ = [
    "EVENTSTREAM_CONTENT_TYPE",
    "DecodedMessage",
    "MessageSplitter",
    "decode_message",
    "encode_eventstream_row",
    "eventstream_row",
    "is_amazon_event_stream",
    "rebuilt_message",
    "with_agreeing_bytes",
]

EVENTSTREAM_CONTENT_TYPE = "application/vnd.amazon.eventstream"

_PRELUDE = struct.Struct(">III")
_PRELUDE_LENGTH = _PRELUDE.size
_CRC_LENGTH = 4
_SMALLEST_MESSAGE = _PRELUDE_LENGTH + _CRC_LENGTH
_LARGEST_MESSAGE = 24 * 1024 * 1024 + 128 * 1024 + _SMALLEST_MESSAGE
"""The longest message AWS sends (a 24 MiB payload, 128 KiB of headers): a prelude announcing
more is not one."""

_FIXED_VALUES = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
"""The header value types of a fixed size: byte, short, integer, long, timestamp (ms)."""


def is_amazon_event_stream(content_type: str | None) -> bool:
    """Whether a ``content-type`` is AWS's binary event stream."""
    return (
        content_type is not None
        and content_type.partition(";")[0].strip().lower() == EVENTSTREAM_CONTENT_TYPE
    )


class MessageSplitter:
    """Cuts a body, fed as it arrives, into whole event-stream messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._lost = False
        """A prelude no message has was met: the rest is kept, never cut."""

    def feed(self, data: bytes) -> list[bytes]:
        """The messages ``data`` completes, in order."""
        self._buffer += data
        messages: list[bytes] = []
        while not self._lost and len(self._buffer) >= _PRELUDE_LENGTH:
            total = int.from_bytes(self._buffer[:4], "big")
            if not _SMALLEST_MESSAGE <= total <= _LARGEST_MESSAGE:
                self._lost = True
            elif len(self._buffer) < total:
                break
            else:
                messages.append(bytes(self._buffer[:total]))
                del self._buffer[:total]
        return messages

    def rest(self) -> bytes:
        """What arrived after the last whole message (taken: asked again, it is empty)."""
        rest, self._buffer = bytes(self._buffer), bytearray()
        return rest


@dataclass(frozen=True)
class DecodedMessage:
    """A well-formed message: its headers as JSON values, its payload, and where its payload
    starts in its bytes."""

    headers: dict[str, Any]
    payload: bytes
    payload_start: int


def decode_message(message: bytes) -> DecodedMessage | None:
    """``message`` decoded; None when it is not one well-formed message (its lengths or
    checksums do not hold, or a header cannot be read)."""
    if len(message) < _SMALLEST_MESSAGE:
        return None
    total, headers_length, prelude_crc = _PRELUDE.unpack_from(message)
    if (
        total != len(message)
        or zlib.crc32(message[:8]) != prelude_crc
        or zlib.crc32(message[:-_CRC_LENGTH]) != int.from_bytes(message[-_CRC_LENGTH:], "big")
        or _PRELUDE_LENGTH + headers_length > total - _CRC_LENGTH
    ):
        return None
    end = _PRELUDE_LENGTH + headers_length
    try:
        headers = dict(_headers(message, _PRELUDE_LENGTH, end))
    except (IndexError, struct.error, UnicodeDecodeError, ValueError):
        return None
    return DecodedMessage(headers, message[end:-_CRC_LENGTH], end)


def _headers(message: bytes, start: int, end: int) -> Iterator[tuple[str, Any]]:
    position = start
    while position < end:
        name_length = message[position]
        name = message[position + 1 : position + 1 + name_length].decode("utf-8")
        position += 1 + name_length
        kind = message[position]
        position += 1
        value: Any
        if kind in (0, 1):
            value = kind == 0
        elif kind in _FIXED_VALUES:
            fixed = struct.Struct(_FIXED_VALUES[kind])
            (value,) = fixed.unpack_from(message, position)
            position += fixed.size
        elif kind in (6, 7):
            length = int.from_bytes(message[position : position + 2], "big")
            raw = message[position + 2 : position + 2 + length]
            if len(raw) != length:
                raise ValueError("a header value runs past the headers")
            value = raw.decode("utf-8") if kind == 7 else base64.b64encode(raw).decode("ascii")
            position += 2 + length
        elif kind == 9:
            value = str(uuid.UUID(bytes=message[position : position + 16]))
            position += 16
        else:
            raise ValueError(f"header value type {kind}")
        if position > end:
            raise ValueError("a header runs past the headers")
        yield name, value


def rebuilt_message(message: bytes, decoded: DecodedMessage, payload: bytes) -> bytes:
    """``message`` (well formed, ``decoded``) with ``payload`` in place of its own: its
    headers' bytes as they were, its lengths and checksums computed anew."""
    headers = message[_PRELUDE_LENGTH : decoded.payload_start]
    total = _PRELUDE_LENGTH + len(headers) + len(payload) + _CRC_LENGTH
    prelude = struct.pack(">II", total, len(headers))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return body + struct.pack(">I", zlib.crc32(body))


def _payload_value(payload: bytes) -> Any:
    """A payload as a row stores it: the JSON value it holds, else its text; ``_NOT_JSON``
    when it is neither (binary)."""
    if payload.lstrip()[:1] in (b"{", b"["):
        value = _parsed_json(payload)
        if value is not _NOT_JSON:
            return value
    try:
        return payload.decode("utf-8")
    except UnicodeDecodeError:
        return _NOT_JSON


def _payload_bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else orjson.dumps(value)


def eventstream_row(message: bytes, redactor: SecretRedactor) -> dict[str, Any]:
    """The ``eventstream`` event of one message (or of bytes that are not one)."""
    decoded = decode_message(message)
    if decoded is None:
        return {"type": "eventstream", "base64": base64.b64encode(message).decode("ascii")}
    row: dict[str, Any] = {"type": "eventstream", "headers": decoded.headers}
    value = _payload_value(decoded.payload)
    if value is not _NOT_JSON:
        redacted = (
            redactor.redact_text(value)
            if isinstance(value, str)
            else redactor.redact_model_output(value)
        )
        if redacted != value:
            message = rebuilt_message(message, decoded, _payload_bytes(redacted))
        row["data"] = redacted
    row["base64"] = base64.b64encode(message).decode("ascii")
    return row


def encode_eventstream_row(row: dict[str, Any]) -> bytes:
    """A recorded ``eventstream`` event as the bytes of the stream: the stored message, or
    the message rebuilt around ``data`` when its payload no longer agrees with it."""
    message = base64.b64decode(row["base64"])
    if "data" not in row:
        return message
    decoded = decode_message(message)
    if decoded is None:
        return message
    data = row["data"]
    if _payload_value(decoded.payload) == data:
        return message
    return rebuilt_message(message, decoded, _payload_bytes(data))


def with_agreeing_bytes(row: dict[str, Any]) -> dict[str, Any]:
    """An ``eventstream`` event whose ``base64`` is the message replay serves for it: ``row``
    itself when its bytes agree with its ``data``, else a copy holding the rebuilt message."""
    if "data" not in row:
        return row
    served = base64.b64encode(encode_eventstream_row(row)).decode("ascii")
    return row if served == row["base64"] else {**row, "base64": served}
