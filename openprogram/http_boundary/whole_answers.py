"""A whole HTTP answer — its status, headers and body, read to the end — made into the event
rows the recorder writes for it, redacted: the ``http_response`` row, then one ``sse`` row per
server-sent event (and an ``sse_rest`` for what followed the last one), one ``eventstream``
row per AWS event-stream message, or one ``http_body``.

The recorder itself tees a body as it streams to the client; what reads an answer whole and
stores it as the recorder would — ``recordings drift`` (the live answer, read as it arrives)
and ``recordings import`` (a vcrpy cassette's body) — goes through :func:`answer_rows`, so its
rows compare with recorded ones as one recording's call with another's."""

from __future__ import annotations

import codecs
from collections.abc import Iterable
from typing import Any

from openprogram.http_boundary.codec import (
    body_event,
    is_event_stream,
    response_event,
    sse_event_row,
    sse_rest_row,
)
from openprogram.http_boundary.eventstream import (
    MessageSplitter,
    eventstream_row,
    is_amazon_event_stream,
)
from openprogram.http_boundary.sse import SseParser
from openprogram.recording.redaction import SecretRedactor

__all__ = ["answer_rows"]


def answer_rows(
    status: int, headers: list[tuple[str, str]], chunks: Iterable[bytes], redactor: SecretRedactor
) -> list[dict[str, Any]]:
    """The rows of an answer with ``status`` and ``headers`` (lower-case names) whose body
    arrives decoded as ``chunks``: a ``content-encoding`` header (undone already) is left out
    of the head's row, with the encoded length, as the recorder leaves them out."""
    rows = [response_event(status, headers, redactor)]
    content_type = next((value for name, value in headers if name == "content-type"), None)
    if is_event_stream(content_type):
        parser = SseParser(keep_raw=True)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        for chunk in chunks:
            for event in parser.feed(decoder.decode(chunk)):
                rows.append(sse_event_row(event, redactor, keep_raw=True))
        for event in parser.feed(decoder.decode(b"", final=True)) + parser.finish():
            rows.append(sse_event_row(event, redactor, keep_raw=True))
        rest = sse_rest_row(parser.rest(), redactor)
        if rest is not None:
            rows.append(rest)
    elif is_amazon_event_stream(content_type):
        splitter = MessageSplitter()
        for chunk in chunks:
            rows += [eventstream_row(message, redactor) for message in splitter.feed(chunk)]
        left = splitter.rest()
        if left:
            rows.append(eventstream_row(left, redactor))
    else:
        body = body_event(content_type, b"".join(chunks), redactor, keep_raw=True)
        if body is not None:
            rows.append(body)
    return rows
