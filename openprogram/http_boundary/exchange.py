"""One captured HTTP exchange: which requests are captured, and each captured one recorded
as it happens, answered from the recording, or refused, by the boundary's mode.

:func:`capture_transport` wraps the client's transport in a :class:`CapturingTransport`, except for
a request a capture above is sending through this library (one request is one call,
:mod:`~openprogram.http_boundary.boundary`), a client of openprogram's own vendor providers
(recorded at the provider registry), a passthrough host, and, under record, a request a taped
function sends while it runs (its tape covers it); a client library also leaves alone its transports
that never touch the network. Each driver sends the request live inside
:func:`~openprogram.http_boundary.boundary.sending_beneath`. :func:`exchange_flow` holds the
decisions for one captured request, written once: it yields each :class:`Step` (read the request's
body, send it through the client's transport, close the response) to its sync or async driver
(:func:`drive`, :func:`drive_async`: the methods of :class:`CapturingTransport` and the adapters of
libraries without a transport call them; :func:`driven` pauses between sending and reading, for
``http.client``), and returns the response the client gets. A WebSocket handshake
(``Upgrade: websocket``) is sent uncaptured when recording, and refused under replay
(:mod:`~openprogram.http_boundary.websocket_refusal`).

Recording (:class:`HttpCallRecorder`): the request row is written before the request is sent (a
refused connection is a call that ended ``error`` with no events), the ``http_response`` event once
the response's head arrives, then the body is *teed*: before a chunk is handed on, each server-sent
event it completes is written as one ``sse`` row (no fsync; what the stream held after its last
event, as one ``sse_rest`` row when it ends), each message of an AWS event stream as one
``eventstream`` row (:mod:`~openprogram.http_boundary.eventstream`); another body is one
``http_body`` event at its end, stored decoded by the library's own content decoder (a body the
transport had already read, as the library decoded it). The call ends ``complete`` when the body is
read to its end: its source is exhausted, or the client closes it once the whole body has arrived —
all of its ``content-length``, or an event stream up to its terminal event
(:func:`~openprogram.http_boundary.sse.is_terminal_event`) with nothing of another event after it:
the ``openai`` SDK closes the response right after ``data: [DONE]``, before the transport reads the
end of the chunked body (reading further at close could block on a live socket, so it is not tried).
It ends ``abandoned`` when the body is closed before that, ``error`` when the transport raises (the
type is the library's: ``httpx.ReadTimeout``), and ``cancelled`` when the task is cancelled while
waiting.

Replaying (:func:`response_of_call`): the request's sections are taken by the shared
:class:`~openprogram.recording.replay_session.ReplaySession` (a difference raises its
``ReplayMismatch``, carried by :class:`~openprogram.recording.mismatch.RecordReplayEscape`). The
matched call becomes a response of the client's library: the recorded status and headers
(:func:`~openprogram.http_boundary.codec.replayed_headers`: a retryable error with
``retry-after-ms: 1``, a ``content-length`` only for a call that completed), and a body of the
recorded events — each as the bytes that came (its ``raw`` text, an event-stream message's stored
bytes) or re-serialized — as one chunk, which ends as the recorded call did: ``complete`` — it ends;
``error`` — the library's class of the recorded error's name is raised (before the response when
there was none); ``abandoned`` — reading further is a mismatch (for a boundary that relays each
response to a client of its own, ``openprogram serve``, it is ``ConnectionResetError``: the relay
cuts its client's connection there); ``cancelled`` — before a response, ``asyncio.CancelledError``,
else the body ends; no ``call_end`` — ``RecordingTruncatedError``."""

from __future__ import annotations

import asyncio
import codecs
import enum
import re
from collections.abc import Awaitable, Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar, cast

from openprogram.errors import (
    OpenProgramError,
    RecordingTruncatedError,
    RecordReplayBlockedError,
    ReplayMismatch,
)
from openprogram.http_boundary.boundary import (
    PROVIDER_CLIENT_MARK,
    HttpBoundary,
    handled_above,
    sending_beneath,
)
from openprogram.http_boundary.clients.interface import CapturedRequest, Destination
from openprogram.http_boundary.codec import (
    body_event,
    encode_http_row,
    is_event_stream,
    replayed_headers,
    request_sections,
    response_event,
    sse_event_row,
    sse_rest_row,
)
from openprogram.http_boundary.eventstream import (
    MessageSplitter,
    encode_eventstream_row,
    eventstream_row,
    is_amazon_event_stream,
)
from openprogram.http_boundary.sse import SseParser, is_terminal_event
from openprogram.http_boundary.websocket_refusal import check_websocket
from openprogram.recording.format import Outcome, RecordedCall
from openprogram.recording.http_rows import EVENTSTREAM_FEATURE, RAW_TEXT_FEATURE
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.redaction import (
    SecretRedactor,
    is_secret_field_name,
    known_secret_values,
)
from openprogram.recording.tape_rows import taped_function_running
from openprogram.recording.writer import CallWriter, recorded_error
from openprogram.wording import plural

if TYPE_CHECKING:
    from openprogram.http_boundary.clients import (
        AsyncTransport,
        ClientLibrary,
        ContentDecoder,
        HttpHeaders,
        HttpRequest,
        HttpResponse,
        HttpTransport,
        HttpURL,
        SyncTransport,
    )
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "CapturingTransport",
    "HttpCallRecorder",
    "Step",
    "call_redactor",
    "capture_transport",
    "captured_request",
    "captures",
    "destination",
    "drive",
    "drive_async",
    "driven",
    "exchange_flow",
    "response_of_call",
]


class Step(enum.Enum):
    """What :func:`exchange_flow` has its driver do next: read the request's body, send the
    request (and send back the response), or close that response."""

    READ = "read"
    SEND = "send"
    CLOSE = "close"


R = TypeVar("R")
"""A library's response, as the exchange carries it from the sending to the client."""
Flow = Generator[Step, R | None, R]
"""One exchange's decisions; what a step raises is thrown in where it was yielded."""


def capture_transport(
    client: object,
    transport: HttpTransport,
    url: HttpURL,
    boundary: HttpBoundary,
    library: ClientLibrary[HttpResponse],
) -> HttpTransport:
    """The transport ``client`` sends a request for ``url`` through while ``boundary`` is
    active: ``transport`` itself when the request is left alone, else a capturing one."""
    if not captures(client, url, boundary, library):
        return transport
    return CapturingTransport(transport, boundary, library)


def captured_request(request: HttpRequest) -> CapturedRequest:
    """``request`` (its body read) as the boundary stores it: every library's, once its
    adapter shows it as an :class:`HttpRequest`."""
    return CapturedRequest(
        request.method, str(request.url), tuple(request.headers.multi_items()), request.content
    )


def destination(url: HttpURL) -> Destination:
    """Where a request for ``url`` connects."""
    return Destination(url.host.lower(), url.port, url.scheme)


def captures(
    client: object, url: HttpURL, boundary: HttpBoundary, library: ClientLibrary[Any]
) -> bool:
    """Whether a request ``client`` sends for ``url`` while ``boundary`` is active is
    captured: not one a capture above is sending through this library (it is that one's
    call, :mod:`~openprogram.http_boundary.boundary`), nor for a client of openprogram's own
    vendor providers, a passthrough host, nor, under record, while a taped function runs
    (its tape covers it). Every request asked about is noted as one the boundary saw (so its
    connection is not reported as missed)."""
    boundary.saw(*destination(url))
    if handled_above():
        return False
    if getattr(client, PROVIDER_CLIENT_MARK, False) or (
        boundary.records and taped_function_running() is not None
    ):
        return False
    if boundary.passthrough_hosts:
        host, port, _ = destination(url)
        if boundary.passes_through(host, port):
            return False
    return True


def exchange_flow(
    boundary: HttpBoundary, library: ClientLibrary[R], request: HttpRequest, *, asynchronous: bool
) -> Flow[R]:
    """Record, replay or refuse ``request`` by ``boundary``'s mode (``asynchronous``: the
    client sends it asynchronously); under ``model_traffic``, a request that is not model
    traffic is sent as it is."""
    __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
    layer = boundary.model_layer
    if layer is not None:
        yield Step.READ
        if not layer.covers(captured_request(request)):
            return _sent((yield Step.SEND))  # not model traffic: live, not recorded
        boundary = layer.boundary()
    if boundary.mode == "blocked":
        raise RecordReplayEscape(RecordReplayBlockedError(boundary.blocked_reason or ""))
    headers = request.headers
    if (headers.get("upgrade") or "").lower() == "websocket":
        redactor = call_redactor(headers.multi_items(), boundary.user_redaction)
        check_websocket(boundary, redactor.redact_text(str(request.url)))
        return _sent((yield Step.SEND))
    if layer is None:
        yield Step.READ
    captured = captured_request(request)
    sections = request_sections(
        captured.method, captured.url, captured.headers, captured.body, boundary.extra_headers
    )
    redactor = call_redactor(captured.headers, boundary.user_redaction)
    if boundary.mode == "replay":
        session = boundary.session
        assert session is not None  # HttpBoundary checks a replay boundary has one
        try:
            call = session.take(
                "http", sections, redactor=redactor.redact_http_request, redaction=redactor.rules
            )
        except ReplayMismatch as mismatch:
            raise RecordReplayEscape(mismatch) from None
        return response_of_call(
            call, session, library, request, asynchronous=asynchronous, relayed=boundary.relays
        )
    if boundary.mode == "replay_or_record":
        # the recorded response when the merge's recording holds an equal unconsumed call,
        # else the request is sent and recorded
        merge = boundary.merge
        assert merge is not None  # HttpBoundary checks a replay_or_record boundary has one
        recorded = merge.take_recorded("http", sections, redactor=redactor.redact_http_request)
        if recorded is not None:
            return response_of_call(
                recorded,
                merge.session,
                library,
                request,
                asynchronous=asynchronous,
                relayed=boundary.relays,
            )
    recorder = _start(boundary, sections, redactor, library)
    try:
        response = _sent((yield Step.SEND))
    except BaseException as exc:
        recorder.stop(exc)
        raise
    try:
        recorder.respond(*library.head(response))
    except BaseException:
        yield Step.CLOSE
        raise
    library.record_body(response, recorder, asynchronous=asynchronous)
    return response


def _sent(response: R | None) -> R:
    assert response is not None  # what the driver sends back after Step.SEND
    return response


class CapturingTransport:
    """A transport of an httpx-shaped library that records, replays or refuses each request
    by ``boundary``'s mode; ``transport`` is the one the client would have used. Its sync
    and async methods drive :func:`exchange_flow`."""

    __slots__ = ("boundary", "library", "transport")

    def __init__(
        self, transport: HttpTransport, boundary: HttpBoundary, library: ClientLibrary[HttpResponse]
    ) -> None:
        self.transport = transport
        self.boundary = boundary
        self.library = library

    def handle_request(self, request: HttpRequest) -> HttpResponse:
        __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
        transport = cast("SyncTransport", self.transport)
        flow = exchange_flow(self.boundary, self.library, request, asynchronous=False)
        return drive(flow, lambda: transport.handle_request(request), request.read, _close_response)

    async def handle_async_request(self, request: HttpRequest) -> HttpResponse:
        __tracebackhide__ = True
        transport = cast("AsyncTransport", self.transport)

        async def send() -> HttpResponse:
            return await transport.handle_async_request(request)

        async def close(response: HttpResponse) -> None:
            await response.aclose()

        flow = exchange_flow(self.boundary, self.library, request, asynchronous=True)
        return await drive_async(flow, send, request.aread, close)


def _close_response(response: HttpResponse) -> None:
    response.close()


def drive(
    flow: Flow[R], send: Callable[[], R], read: Callable[[], object], close: Callable[[R], object]
) -> R:
    """Run ``flow`` for a synchronous client to its end: :func:`driven`, with a ``send`` that never
    pauses (called inside :func:`~openprogram.http_boundary.boundary.sending_beneath`)."""
    __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's

    def sending() -> Generator[None, object, R]:
        with sending_beneath():
            return send()
        yield  # a generator, which never pauses

    try:
        next(driven(flow, sending, read, close))
    except StopIteration as done:
        answer: R = done.value
        return answer
    raise AssertionError("a synchronous send paused")


def driven(
    flow: Flow[R],
    send: Callable[[], Generator[None, Any, R]],
    read: Callable[[], object],
    close: Callable[[R], object],
) -> Generator[None, Any, R]:
    """Run ``flow`` for a synchronous client: ``send`` the request, ``read`` its body,
    ``close`` the response, as it asks; what a step raises is thrown back into it. Returns
    the response it ends with. ``send`` is a generator that marks its sending
    (:func:`~openprogram.http_boundary.boundary.sending_beneath`) and may pause the run
    until its caller resumes it: ``http.client`` sends in ``request``, then reads the
    response in ``getresponse``."""
    __tracebackhide__ = True
    response: R | None = None
    try:
        step = next(flow)
        while True:
            try:
                if step is Step.SEND:
                    response = yield from send()
                elif step is Step.READ:
                    read()
                elif response is not None:
                    close(response)
            except BaseException as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(response if step is Step.SEND else None)
    except StopIteration as done:
        answer: R = done.value
        return answer


async def drive_async(
    flow: Flow[R],
    send: Callable[[], Awaitable[R]],
    read: Callable[[], Awaitable[object]],
    close: Callable[[R], Awaitable[None]],
) -> R:
    """Run ``flow`` for an asynchronous client, as :func:`driven` for a synchronous one."""
    __tracebackhide__ = True
    response: R | None = None
    try:
        step = next(flow)
        while True:
            try:
                if step is Step.SEND:
                    with sending_beneath():
                        response = await send()
                elif step is Step.READ:
                    await read()
                elif response is not None:
                    await close(response)
            except BaseException as exc:
                step = flow.throw(exc)
            else:
                step = flow.send(response if step is Step.SEND else None)
    except StopIteration as done:
        answer: R = done.value
        return answer


def _start(
    boundary: HttpBoundary,
    sections: dict[str, Any],
    redactor: SecretRedactor,
    library: ClientLibrary[Any],
) -> HttpCallRecorder:
    writer = boundary.writer
    assert writer is not None  # HttpBoundary checks a record boundary has one
    row = {"boundary": "http", **sections}
    try:
        call = writer.open_call(  # JSON parsed by orjson (the codec)
            row, checked=True, redact=redactor.redact_http_request, redaction=redactor.rules
        )
    except OpenProgramError as exc:
        raise RecordReplayEscape(exc) from None
    return HttpCallRecorder(call, redactor, library)


_SIGNATURE_PARTS = re.compile(r"(?:Credential=|Signature=)([^/,\s]{8,})")
"""The access key id and the signature of an AWS SigV4 ``Authorization`` value."""


def call_redactor(
    headers: Iterable[tuple[str, str]], user: UserRedaction | None = None
) -> SecretRedactor:
    """The redactor of one call: the known credentials of the process, and the values of the
    request's own credential headers (``Authorization``, ``x-api-key``, …, and AWS's
    ``x-amz-security-token``; of an AWS signature, its access key id and signature too), so a key
    the program passed to its SDK is removed wherever it appears; then ``user``'s redaction."""
    known = known_secret_values()
    sent: set[str] = set()
    for name, value in headers:
        if is_secret_field_name(name) or name == "x-amz-security-token":
            sent.add(value)
            _, _, credential = value.partition(" ")  # "Bearer <token>"
            if credential:
                sent.add(credential.strip())
            # an AWS signature: "AWS4-HMAC-SHA256 Credential=<key id>/…, …, Signature=<hex>"
            sent.update(match.group(1) for match in _SIGNATURE_PARTS.finditer(value))
    return SecretRedactor(known | sent if sent else known, user=user)


class HttpCallRecorder:
    """The rows of one HTTP call after its request row: its response, its body, its end."""

    def __init__(
        self, call: CallWriter, redactor: SecretRedactor, library: ClientLibrary[Any]
    ) -> None:
        self.call = call
        self.redactor = redactor
        self.library = library
        self._decoder: ContentDecoder | None = None
        """The client library's content decoder, for an encoded body."""
        self._text: codecs.IncrementalDecoder | None = None
        self._parser: SseParser | None = None
        self._messages: MessageSplitter | None = None
        """For an AWS event stream (and a recording that can hold its rows)."""
        self._content_type: str | None = None
        self._body: list[bytes] = []
        self._length: int | None = None
        """The body's ``content-length``, when the response gave a valid one."""
        self._received = 0
        """The bytes of the body that came off the wire (before the content decoder)."""
        self._terminal = False
        """The last event dispatched was the stream's terminal one."""
        self._keep_raw = False
        """Rows may hold the ``raw`` text of what came (the file announces the feature)."""

    def respond(self, status: int, headers: HttpHeaders) -> None:
        """Write the ``http_response`` event of a response's head (before its body is read)."""
        self._content_type = headers.get("content-type")
        self._length = _content_length(headers.get("content-length"))
        self._write(response_event(status, headers.multi_items(), self.redactor))
        encoding = headers.get("content-encoding")
        self._decoder = self.library.content_decoder(encoding) if encoding else None
        self._keep_raw = _announces(self.call, RAW_TEXT_FEATURE)
        if is_event_stream(self._content_type):
            self._parser = SseParser(keep_raw=self._keep_raw)
            self._text = codecs.getincrementaldecoder("utf-8")("replace")
        elif is_amazon_event_stream(self._content_type) and _announces(
            self.call, EVENTSTREAM_FEATURE
        ):
            self._messages = MessageSplitter()

    def feed(self, chunk: bytes) -> None:
        """Take the next chunk of the body as it came off the wire; write the events it
        completes."""
        if self.call.ended:
            return
        self._received += len(chunk)
        try:
            data = chunk if self._decoder is None else self._decoder.decompress(chunk)
        except Exception as exc:  # the client library fails on these bytes too
            self.stop(exc)
            return
        if self._messages is not None:
            messages = self._messages.feed(data)
            self._write_all([eventstream_row(message, self.redactor) for message in messages])
            return
        if self._parser is None or self._text is None:
            self._body.append(data)
            return
        events = self._parser.feed(self._text.decode(data))
        # The events one read completes are written in one go: one lock, one write.
        keep_raw = self._keep_raw
        self._write_all([sse_event_row(e, self.redactor, keep_raw=keep_raw) for e in events])
        if events:
            self._terminal = is_terminal_event(events[-1])

    def ended_by(self, error: BaseException) -> bool:
        """The body's source raised ``error``: the end of the body (True, the call is
        finished) or a failure (False, it is stopped)."""
        if isinstance(error, StopIteration | StopAsyncIteration):
            self.finish()
            return True
        self.stop(error)
        return False

    def complete(self, content: bytes) -> None:
        """The whole body, already read and decoded when the transport returned it: write
        it, and end the call ``complete``."""
        self._decoder = None
        self.feed(content)
        self.finish()

    def finish(self, *, flush: bool = True) -> None:
        """The body has ended: write what it held last, and end the call ``complete``
        (``flush``: the content decoder is flushed — not when the client closed the body
        after its terminal event, before the encoding's own end may have arrived)."""
        if self.call.ended:
            return
        try:
            decoder = self._decoder if flush else None
            tail = b"" if decoder is None else decoder.decompress(b"") + decoder.flush()
        except Exception as exc:
            self.stop(exc)
            return
        if self._messages is not None:
            for message in self._messages.feed(tail):
                self._write(eventstream_row(message, self.redactor))
            self._write_body()
        elif self._parser is None or self._text is None:
            self._body.append(tail)
            self._write_body()
        else:
            events = self._parser.feed(self._text.decode(tail, final=True))
            events.extend(self._parser.finish())
            for event in events:
                self._write(sse_event_row(event, self.redactor, keep_raw=self._keep_raw))
            self._write_rest()
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

    def closed(self) -> None:
        """The client closed the body: ``complete`` when the whole body had arrived, else
        ``abandoned`` (whatever arrived is written first)."""
        if self.call.ended:
            return
        if self._length is not None and self._received >= self._length:
            self.finish()
        elif self._after_terminal_event():
            self.finish(flush=False)
        else:
            self._write_body()
            self._end("abandoned")

    def _after_terminal_event(self) -> bool:
        """Whether the body is an event stream whose last event was its terminal one, and
        nothing of a further event (nor half a character) has arrived since."""
        parser, text = self._parser, self._text
        return (
            parser is not None
            and text is not None
            and self._terminal
            and parser.between_events
            and not text.getstate()[0]
        )

    def _write_rest(self) -> None:
        """The text the event stream held after its last event (a file announcing the raw
        text), as one ``sse_rest`` event: a final block cut short, a trailing comment."""
        if self._parser is None or not self._keep_raw:
            return
        row = sse_rest_row(self._parser.rest(), self.redactor)
        if row is not None:
            self._write(row)

    def _write_body(self) -> None:
        self._write_rest()
        rest = b"" if self._messages is None else self._messages.rest()
        if rest:  # not a whole message: the stream ended inside one
            self._write(eventstream_row(rest, self.redactor))
        if self._parser is not None or not self._body:
            return
        body, self._body = b"".join(self._body), []
        event = body_event(self._content_type, body, self.redactor, keep_raw=self._keep_raw)
        if event is not None:
            self._write(event)

    def _write(self, event: dict[str, Any]) -> None:
        try:
            self.call.write_event(event, checked=True)  # JSON parsed by orjson: finite, and
        except OpenProgramError as exc:  # no deeper than a row may hold (codec)
            raise RecordReplayEscape(exc) from None

    def _write_all(self, events: list[dict[str, Any]]) -> None:
        try:
            self.call.write_events(events, checked=True)
        except OpenProgramError as exc:
            raise RecordReplayEscape(exc) from None

    def _end(self, outcome: Outcome, error: BaseException | None = None) -> None:
        recorded = None if error is None else recorded_error(error, self.redactor)
        try:
            self.call.end_call(outcome, error=recorded)
        except OpenProgramError as exc:
            raise RecordReplayEscape(exc) from None


def _announces(call: CallWriter, feature: str) -> bool:
    """Whether the file ``call`` is written to announces ``feature`` (a file an older
    openprogram created, appended to, does not: its rows are written as it can read them)."""
    return call.file is not None and feature in call.file.features


def _content_length(value: str | None) -> int | None:
    """A ``content-length`` header's value as a number of bytes (None when absent or not
    one number)."""
    digits = (value or "").strip()
    return int(digits) if digits.isascii() and digits.isdigit() else None


def response_of_call(
    call: RecordedCall,
    session: ReplaySession,
    library: ClientLibrary[R],
    request: HttpRequest,
    *,
    asynchronous: bool,
    relayed: bool = False,
) -> R:
    """The response to ``request`` of ``call``, a recorded HTTP call of ``session`` already
    taken (``relayed``: see :attr:`HttpBoundary.relays`)."""
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
    # One chunk: a client parses the same events from it as from the recorded pieces, and a
    # chunk per event would cost more in the client than the events themselves.
    content = b"".join(
        [
            encode_eventstream_row(row) if row["type"] == "eventstream" else encode_http_row(row)
            for row in events[1:]
        ]
    )
    headers = replayed_headers(
        status, head["headers"], content, method=request.method, complete=call.outcome == "complete"
    )
    body = _body(content, call, session, library, request, relayed=relayed)
    return library.response(request, status, headers, body, asynchronous=asynchronous)


def _body(
    content: bytes,
    call: RecordedCall,
    session: ReplaySession,
    library: ClientLibrary[Any],
    request: HttpRequest,
    *,
    relayed: bool,
) -> Iterator[bytes]:
    if content:
        yield content
    _end(call, session, library, request, responded=True, relayed=relayed)


def _end(
    call: RecordedCall,
    session: ReplaySession,
    library: ClientLibrary[Any],
    request: HttpRequest,
    *,
    responded: bool,
    relayed: bool = False,
) -> None:
    """End the replayed exchange as the recorded one ended (returns for a body that simply ends)."""
    count = len(call.event_rows)
    if call.outcome is None:
        raise RecordReplayEscape(
            session.keep(RecordingTruncatedError(str(session.path), call.call_index, count))
        )
    if call.outcome == "error" and call.error is not None:
        raise library.rebuild_error(call.error, request)
    if call.outcome == "cancelled" and not responded:
        raise asyncio.CancelledError()
    if call.outcome == "abandoned" and relayed:
        raise ConnectionResetError(
            f"the recorded client stopped reading the response after {plural(count, 'event')}"
        )
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
