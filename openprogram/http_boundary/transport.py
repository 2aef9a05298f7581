"""The capturing transport: what a patched client sends a captured request through.

:func:`capture_transport` decides, for each request while a boundary is active, whether
the client's real transport is wrapped: not for a transport that never touches the network
(``MockTransport``, ``ASGITransport``, ``WSGITransport`` of either library), not for a client
of openprogram's own vendor providers (their calls are recorded at the provider registry),
not for a passthrough host, and not, under record, for a request a taped function sends
while it runs (``openprogram.recording.tape_rows``: its tape covers it).
:class:`CapturingTransport` then records the exchange through the real transport, answers it
from the recording, or refuses it, by the boundary's mode.

A WebSocket handshake (a request with ``Upgrade: websocket``, as ``httpx2.websockets`` sends)
is not an exchange a recording can hold: it is sent uncaptured when recording (and logged),
and refused under replay (:mod:`~openprogram.http_boundary.websocket_refusal`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.errors import OpenProgramError, RecordReplayBlockedError
from openprogram.http_boundary.boundary import PROVIDER_CLIENT_MARK, HttpBoundary
from openprogram.http_boundary.codec import request_sections
from openprogram.http_boundary.recording import HttpCallRecorder
from openprogram.http_boundary.replay import replayed_response, response_of_call
from openprogram.http_boundary.websocket_refusal import check_websocket
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.redaction import (
    SecretRedactor,
    is_secret_field_name,
    known_secret_values,
)
from openprogram.recording.tape_rows import taped_function_running

if TYPE_CHECKING:
    from openprogram.http_boundary.library import HttpLibrary
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["CapturingTransport", "capture_transport"]


def capture_transport(
    client: Any, transport: Any, url: Any, boundary: HttpBoundary, library: HttpLibrary
) -> Any:
    """The transport ``client`` sends a request for ``url`` through while ``boundary`` is
    active: ``transport`` itself when the request is left alone, else a capturing one."""
    if (
        isinstance(transport, library.in_process_transports)
        or getattr(client, PROVIDER_CLIENT_MARK, False)
        or (boundary.mode == "record" and taped_function_running() is not None)
    ):
        return transport
    hosts = boundary.passthrough_hosts
    if hosts:
        host = url.host.lower()
        if host in hosts or f"{host}:{url.port}" in hosts:
            return transport
    return CapturingTransport(transport, boundary, library)


class CapturingTransport:
    """Records, replays or refuses one request by ``boundary``'s mode; ``transport`` is the
    one the client would have used."""

    __slots__ = ("boundary", "library", "transport")

    def __init__(self, transport: Any, boundary: HttpBoundary, library: HttpLibrary) -> None:
        self.transport = transport
        self.boundary = boundary
        self.library = library

    def handle_request(self, request: Any) -> Any:
        __tracebackhide__ = True  # pytest: show the caller's line, not the boundary's
        if self._sent_uncaptured(request):
            return self.transport.handle_request(request)
        request.read()
        sections, redactor = self._sections(request)
        if self.boundary.mode == "replay":
            return self._replay(sections, redactor, request, asynchronous=False)
        if self.boundary.mode == "replay_or_record":
            replayed = self._replay_recorded(sections, redactor, request, asynchronous=False)
            if replayed is not None:
                return replayed
        recorder = self._start(sections, redactor)
        try:
            response = self.transport.handle_request(request)
        except BaseException as exc:
            recorder.stop(exc)
            raise
        try:
            recorder.respond(response)
        except BaseException:
            response.close()
            raise
        response.stream = self.library.recording_sync(response.stream, recorder)
        return response

    async def handle_async_request(self, request: Any) -> Any:
        __tracebackhide__ = True
        if self._sent_uncaptured(request):
            return await self.transport.handle_async_request(request)
        await request.aread()
        sections, redactor = self._sections(request)
        if self.boundary.mode == "replay":
            return self._replay(sections, redactor, request, asynchronous=True)
        if self.boundary.mode == "replay_or_record":
            replayed = self._replay_recorded(sections, redactor, request, asynchronous=True)
            if replayed is not None:
                return replayed
        recorder = self._start(sections, redactor)
        try:
            response = await self.transport.handle_async_request(request)
        except BaseException as exc:
            recorder.stop(exc)
            raise
        try:
            recorder.respond(response)
        except BaseException:
            await response.aclose()
            raise
        response.stream = self.library.recording_async(response.stream, recorder)
        return response

    def _sent_uncaptured(self, request: Any) -> bool:
        """Refuse every request of a blocked boundary; whether this request is a WebSocket
        handshake, sent uncaptured (see :mod:`~openprogram.http_boundary.websocket_refusal`, which
        refuses it under replay)."""
        boundary = self.boundary
        if boundary.mode == "blocked":
            raise RecordReplayEscape(RecordReplayBlockedError(boundary.blocked_reason or ""))
        if request.headers.get("upgrade", "").lower() != "websocket":
            return False
        redactor = call_redactor(request.headers, boundary.user_redaction)
        check_websocket(boundary, redactor.redact_text(str(request.url)))
        return True

    def _sections(self, request: Any) -> tuple[dict[str, Any], SecretRedactor]:
        sections = request_sections(
            request.method,
            str(request.url),
            request.headers.multi_items(),
            request.content,
            self.boundary.extra_headers,
        )
        return sections, call_redactor(request.headers, self.boundary.user_redaction)

    def _replay(
        self,
        sections: dict[str, Any],
        redactor: SecretRedactor,
        request: Any,
        *,
        asynchronous: bool,
    ) -> Any:
        session = self.boundary.session
        assert session is not None  # HttpBoundary checks a replay boundary has one
        response = replayed_response(
            session, sections, redactor, self.library, request, asynchronous=asynchronous
        )
        response.request = request
        return response

    def _replay_recorded(
        self,
        sections: dict[str, Any],
        redactor: SecretRedactor,
        request: Any,
        *,
        asynchronous: bool,
    ) -> Any:
        """replay_or_record: the recorded response when the merge's recording holds an equal
        unconsumed call, else None (the request is then sent and recorded)."""
        merge = self.boundary.merge
        assert merge is not None  # HttpBoundary checks a replay_or_record boundary has one
        call = merge.take_recorded("http", sections, redactor=redactor.redact_http_request)
        if call is None:
            return None
        response = response_of_call(
            call, merge.session, self.library, request, asynchronous=asynchronous
        )
        response.request = request
        return response

    def _start(self, sections: dict[str, Any], redactor: SecretRedactor) -> HttpCallRecorder:
        writer = self.boundary.writer
        assert writer is not None  # HttpBoundary checks a record boundary has one
        row = {"boundary": "http", **sections}
        try:
            call = writer.open_call(  # JSON parsed by orjson (the codec)
                row, checked=True, redact=redactor.redact_http_request, redaction=redactor.rules
            )
        except OpenProgramError as exc:
            raise RecordReplayEscape(exc) from None
        return HttpCallRecorder(call, redactor, self.library)


def call_redactor(headers: Any, user: UserRedaction | None = None) -> SecretRedactor:
    """The redactor of one call: the known credentials of the process, and the values of
    the request's own credential headers (``Authorization``, ``x-api-key``, …), so a key the
    program passed to its SDK is removed wherever it appears; then ``user``'s redaction."""
    known = known_secret_values()
    sent: set[str] = set()
    for name, value in headers.multi_items():
        if is_secret_field_name(name):
            sent.add(value)
            _, _, credential = value.partition(" ")  # "Bearer <token>"
            if credential:
                sent.add(credential.strip())
    return SecretRedactor(known | sent if sent else known, user=user)
