"""Recording one HTTP exchange while it happens.

The request row is written before the request is sent (so a refused connection is a call
that ended with outcome ``error`` and no events), the ``http_response`` event as soon as the
response's head arrives, then the body is *teed*: the client gets every chunk of the
original bytes, and before a chunk is handed on, each server-sent event it completes is
written as one ``sse`` event row (one write per event, no fsync). A body that is not an
event stream is written as one ``http_body`` event when it ends. The body is stored decoded:
the client library's own content decoder (gzip, deflate, br, zstd) runs on a copy of the
bytes.

The call ends ``complete`` when the stream is exhausted, ``abandoned`` when it is closed
before that (whatever body was received is written first), ``error`` when the transport
raises (before the response or during the stream; the type is the client library's,
``httpx.ReadTimeout``, ``httpx2.RemoteProtocolError``), and ``cancelled`` when the task is
cancelled while waiting. A stream iterated a second time after a pause (openai 3.x drains
the rest of an async stream after ``[DONE]``) continues where the first iteration stopped:
the remainder is recorded, not a restart.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from openprogram.errors import OpenProgramError
from openprogram.http_boundary.codec import (
    body_event,
    is_event_stream,
    response_event,
    sse_event_row,
)
from openprogram.http_boundary.sse import SseParser
from openprogram.recording.format import Outcome
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.writer import CallWriter, recorded_error

if TYPE_CHECKING:
    from openprogram.http_boundary.library import HttpLibrary

__all__ = ["HttpCallRecorder", "RecordingAsyncStream", "RecordingSyncStream"]


class HttpCallRecorder:
    """The rows of one HTTP call after its request row: its response, its body, its end."""

    def __init__(self, call: CallWriter, redactor: SecretRedactor, library: HttpLibrary) -> None:
        self.call = call
        self.redactor = redactor
        self.library = library
        self._decoder: Any = None
        """The client library's content decoder, for an encoded body."""
        self._text: codecs.IncrementalDecoder | None = None
        self._parser: SseParser | None = None
        self._content_type: str | None = None
        self._body: list[bytes] = []

    def respond(self, response: Any) -> None:
        """Write the ``http_response`` event of ``response`` (the transport's response,
        before its body is read)."""
        headers = response.headers
        self._content_type = headers.get("content-type")
        self._write(response_event(response.status_code, headers.multi_items(), self.redactor))
        self._decoder = self.library.content_decoder(headers)
        if is_event_stream(self._content_type):
            self._parser = SseParser()
            self._text = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the body as it came off the wire; write the events it
        completes."""
        if self.call.ended:
            return
        try:
            data = chunk if self._decoder is None else self.library.decode(self._decoder, chunk)
        except Exception as exc:  # the client library fails on these bytes too
            self.stop(exc)
            return
        if self._parser is None or self._text is None:
            self._body.append(data)
            return
        for event in self._parser.feed(self._text.decode(data)):
            self._write(sse_event_row(event, self.redactor))

    def finish(self) -> None:
        """The body has ended: write what it held last, and end the call ``complete``."""
        if self.call.ended:
            return
        try:
            tail = b"" if self._decoder is None else self.library.flush(self._decoder)
        except Exception as exc:
            self.stop(exc)
            return
        if self._parser is None or self._text is None:
            self._body.append(tail)
            self._write_body()
        else:
            events = self._parser.feed(self._text.decode(tail, final=True))
            events.extend(self._parser.finish())
            for event in events:
                self._write(sse_event_row(event, self.redactor))
        self._end("complete")

    def stop(self, error: BaseException) -> None:
        """The exchange stopped on ``error``: ``error`` for a failure, ``cancelled`` for a
        cancelled task, ``abandoned`` for anything else (an interrupt)."""
        if self.call.ended:
            return
        self._write_body()
        if isinstance(error, asyncio.CancelledError):
            self._end("cancelled")
        elif isinstance(error, Exception):
            self._end("error", error)
        else:
            self._end("abandoned")

    def abandon(self) -> None:
        """The body was closed before its end."""
        if self.call.ended:
            return
        self._write_body()
        self._end("abandoned")

    def _write_body(self) -> None:
        if self._parser is not None or not self._body:
            return
        body, self._body = b"".join(self._body), []
        event = body_event(self._content_type, body, self.redactor)
        if event is not None:
            self._write(event)

    def _write(self, event: dict[str, Any]) -> None:
        try:
            self.call.write_event(event, checked=True)  # JSON parsed by orjson: finite, and
        except OpenProgramError as exc:  # no deeper than a row may hold (codec)
            raise RecordReplayEscape(exc) from None

    def _end(self, outcome: Outcome, error: BaseException | None = None) -> None:
        recorded = None if error is None else recorded_error(error, self.redactor)
        try:
            self.call.end_call(outcome, error=recorded)
        except OpenProgramError as exc:
            raise RecordReplayEscape(exc) from None


class RecordingSyncStream:
    """A response body that hands on the transport's chunks and records them (combined with
    the client library's ``SyncByteStream`` by
    :class:`~openprogram.http_boundary.library.HttpLibrary`)."""

    def __init__(self, source: Any, recorder: HttpCallRecorder) -> None:
        self._source = source
        self._recorder = recorder
        self._chunks: Iterator[bytes] | None = None
        """One iterator of the source for every iteration: a second one continues."""

    def __iter__(self) -> Iterator[bytes]:
        if self._chunks is None:
            self._chunks = iter(self._source)
        chunks, recorder = self._chunks, self._recorder
        while True:
            try:
                chunk = next(chunks)
            except StopIteration:
                recorder.finish()
                return
            except BaseException as exc:
                recorder.stop(exc)
                raise
            recorder.feed(chunk)
            yield chunk

    def close(self) -> None:
        try:
            self._source.close()
        finally:
            self._recorder.abandon()


class RecordingAsyncStream:
    """The async form of :class:`RecordingSyncStream` (with ``AsyncByteStream``)."""

    def __init__(self, source: Any, recorder: HttpCallRecorder) -> None:
        self._source = source
        self._recorder = recorder
        self._chunks: AsyncIterator[bytes] | None = None

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._chunks is None:
            self._chunks = self._source.__aiter__()
        chunks, recorder = self._chunks, self._recorder
        assert chunks is not None
        while True:
            try:
                chunk = await chunks.__anext__()
            except StopAsyncIteration:
                recorder.finish()
                return
            except BaseException as exc:
                recorder.stop(exc)
                raise
            recorder.feed(chunk)
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._source.aclose()
        finally:
            self._recorder.abandon()
