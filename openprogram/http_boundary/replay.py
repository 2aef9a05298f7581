"""Answering one HTTP request from the recording, without touching the network.

The request's sections are taken by the shared
:class:`~openprogram.recording.replay_session.ReplaySession` (compared with the next recorded
call; a difference raises the session's ``ReplayMismatch``, carried out of the client by
:class:`~openprogram.recording.mismatch.RecordReplayEscape`). The matched call becomes a
response of the client's library: the recorded status and headers, and a body that yields
the recorded events as one chunk (each ``sse`` event re-serialized, the ``http_body`` as
its bytes) and then ends as the recorded call did:

* ``complete`` — the body ends;
* ``error`` — the recorded transport error is raised, as the client library's class of that
  name (``httpx.ConnectError`` for an httpx client, ``httpx2.ConnectError`` for an httpx2
  one), where it was raised: before the response when there was none, else after the
  recorded events;
* ``abandoned`` — the recorded client stopped reading there; reading further is a mismatch
  at that event;
* ``cancelled`` — the recorded task was cancelled: before a response, replay raises
  ``asyncio.CancelledError``; during the body, the body ends there (what cancelled it, a
  timeout or a drain cut short, does not recur when replay serves at once);
* no ``call_end`` — the recording was cut short: ``RecordingTruncatedError``.

A retryable error response is served with ``retry-after-ms: 1`` (see
:func:`~openprogram.http_boundary.codec.fast_retry_headers`), so the SDKs retry at once; the
back-off the SDKs apply after a *connection* error has no hint to shorten and is waited as live.

Each call's events are walked once, as the body is read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any

from openprogram.errors import RecordingTruncatedError, ReplayMismatch
from openprogram.http_boundary.codec import encode_body_row, encode_sse_row, fast_retry_headers
from openprogram.recording.format import RecordedCall
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.report import plural

if TYPE_CHECKING:
    from openprogram.http_boundary.library import HttpLibrary
    from openprogram.recording.replay_session import ReplaySession

__all__ = ["ReplayAsyncStream", "ReplaySyncStream", "replayed_response", "response_of_call"]


def replayed_response(
    session: ReplaySession,
    sections: dict[str, Any],
    redactor: SecretRedactor,
    library: HttpLibrary,
    request: Any,
    *,
    asynchronous: bool,
) -> Any:
    """The recorded response to a request (its ``sections``, before redaction)."""
    try:
        call = session.take(
            "http", sections, redactor=redactor.redact_http_request, redaction=redactor.rules
        )
    except ReplayMismatch as mismatch:
        raise RecordReplayEscape(mismatch) from None
    return response_of_call(call, session, library, request, asynchronous=asynchronous)


def response_of_call(
    call: RecordedCall,
    session: ReplaySession,
    library: HttpLibrary,
    request: Any,
    *,
    asynchronous: bool,
) -> Any:
    """The response of ``call``, a recorded HTTP call of ``session`` already taken."""
    events = call.event_rows
    if not events:
        _end(call, session, library, request, responded=False)
        raise RecordReplayEscape(
            session.keep(
                ReplayMismatch(
                    call.call_index,
                    "event_index",
                    0,
                    1,
                    event_index=0,
                    detail="the recorded call holds no response; re-record the session",
                )
            )
        )
    head = events[0]
    status: int = head["status"]
    headers = fast_retry_headers(status, head["headers"])
    chunks = _body(call, session, library, request)
    stream = library.replay_async(chunks) if asynchronous else library.replay_sync(chunks)
    return library.response(status, list(headers.items()), stream)


def _body(
    call: RecordedCall, session: ReplaySession, library: HttpLibrary, request: Any
) -> Iterator[bytes]:
    events = call.event_rows
    if len(events) > 1:
        # One chunk: a client parses the same events from it as from the recorded pieces,
        # and a chunk per event would cost more in the client than the events themselves.
        yield b"".join(
            [
                encode_sse_row(row) if row["type"] == "sse" else encode_body_row(row)
                for row in events[1:]
            ]
        )
    _end(call, session, library, request, responded=True)


def _end(
    call: RecordedCall,
    session: ReplaySession,
    library: HttpLibrary,
    request: Any,
    *,
    responded: bool,
) -> None:
    """End the replayed exchange as the recorded one ended (returns for a body that
    simply ends)."""
    count = len(call.event_rows)
    if call.outcome is None:
        raise RecordReplayEscape(
            session.keep(RecordingTruncatedError(str(session.path), call.call_index, count))
        )
    if call.outcome == "error" and call.error is not None:
        raise library.rebuild_error(call.error, request)
    if call.outcome == "cancelled" and not responded:
        raise asyncio.CancelledError()
    if call.outcome == "abandoned":
        raise RecordReplayEscape(
            session.keep(
                ReplayMismatch(
                    call.call_index,
                    "event_index",
                    count,
                    count + 1,
                    event_index=count,
                    detail=(
                        "the recorded client stopped reading the response after "
                        f"{plural(count, 'event')}; this run reads further"
                    ),
                )
            )
        )


class ReplaySyncStream:
    """A replayed body (combined with the client library's ``SyncByteStream``): every
    iteration continues the one walk of the recorded events."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    def __iter__(self) -> Iterator[bytes]:
        # Not ``yield from``: closing this iteration would close the walk a later one continues.
        for chunk in self._chunks:  # noqa: UP028
            yield chunk

    def close(self) -> None:
        pass


class ReplayAsyncStream:
    """The async form of :class:`ReplaySyncStream` (with ``AsyncByteStream``)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    async def aclose(self) -> None:
        pass
