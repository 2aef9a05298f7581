"""The server of ``openprogram serve``: an aiohttp application that records, replays or
refuses each request, by its session.

Each request is routed (:mod:`~openprogram.serving.routes`) and given to its session
(:mod:`~openprogram.serving.sessions`), whose HTTP boundary takes it exactly as it takes a
request an SDK sends in-process — the same rows, redaction, per-run rules, matching and
report — through a ``CapturingTransport`` over the upstream's connections: under record the
request is forwarded and the response relayed to the client as its bytes arrive, each chunk
written to the recording before it is passed on; under replay it is answered from the
recording and no upstream connection is opened.

What the client is answered when it is not the upstream's answer — always a JSON error body in the
vendor's own shape, so the SDK shows its message, with ``x-should-retry: false`` where no retry can
help (the SDKs honour it before their status rules) and the kind in ``x-openprogram-error``:

====  =========================================  ==============================================
412   ``openprogram_replay_mismatch``            the two-line report of the first difference
                                                 (its first line only, to a client without
                                                 the token)
412   ``openprogram_blocked``, ``…_no_recording``  record/replay blocked; no recording to use
404   ``openprogram_no_route``, ``…_no_session``   a path under no vendor; a session not open
413   ``openprogram_request_too_large``          a request body over the server's limit
500   ``openprogram_recording_error``            the recording cannot be written
502   ``openprogram_upstream_error``             the upstream could not be reached, or failed
504   ``openprogram_upstream_timeout``           the upstream did not answer in time
====  =========================================  ==============================================

A failure of the upstream is recorded as the call's transport error and replayed as the same
answer (502/504 with the same body before a response, a cut connection in the middle of one).
The client going away in the middle of a response closes the upstream's response: the call
is recorded as abandoned.

Before any of that, the request passes the server's checks of whom it answers
(:mod:`~openprogram.serving.trust`: its ``Host``, its ``Origin``, the token of a request that
names a recording or a session, a control request's content type): a refusal is answered
421, 403, 401 or 415 in the same shapes, the control API's own for a control path. The
control API itself is :mod:`~openprogram.serving.control`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any, cast

import httpx
from aiohttp import web

from openprogram.body_limit import MAX_BODY_SIZE
from openprogram.errors import RecordingFileError, ReplayMismatch
from openprogram.http_boundary.clients.httpx_clients import HttpxLibrary
from openprogram.http_boundary.codec import request_sections
from openprogram.http_boundary.exchange import (
    CapturingTransport,
    call_redactor,
    captured_request,
    captures,
)
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.serving.control import TRUSTED, ControlApi, control_error
from openprogram.serving.forwarding import Upstreams, client_headers, upstream_headers
from openprogram.serving.replay_passes import RequestSections
from openprogram.serving.routes import CONTROL_PREFIX, SESSION_PREFIX, VENDORS, RouteError, route_of
from openprogram.serving.sessions import (
    MODE_HEADER,
    RECORDING_HEADER,
    ProxySession,
    SessionRefused,
    SessionTable,
)
from openprogram.serving.trust import Refusal, TrustRules, mismatch_for_stranger
from openprogram.vendors.wire import ServedApi

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from openprogram.errors import OpenProgramError
    from openprogram.http_boundary.clients import AsyncTransport

    Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

__all__ = ["DEFAULT_MAX_REQUEST_SIZE", "ProxyServer", "logger"]

logger = logging.getLogger("openprogram.serve")
logger.addHandler(logging.NullHandler())  # silent unless the command line gives it a handler

DEFAULT_MAX_REQUEST_SIZE = MAX_BODY_SIZE
"""The largest request body the server reads (64 MiB: a conversation with images)."""
_NO_RETRY = {"x-should-retry": "false"}
_LIBRARY = HttpxLibrary.bound_to(httpx)


class ProxyServer:
    """The application of one server: ``table``'s sessions, forwarding to ``upstreams``."""

    def __init__(
        self,
        table: SessionTable,
        upstreams: Upstreams,
        *,
        trust: TrustRules,
        max_request_size: int = DEFAULT_MAX_REQUEST_SIZE,
    ) -> None:
        self.table = table
        self.upstreams = upstreams
        self.trust = trust
        """Whom it answers; :meth:`TrustRules.closed` until it knows where it listens."""
        self.max_request_size = max_request_size
        self.in_flight = 0
        self.relaying: set[httpx.Response] = set()
        """The upstream responses being relayed now."""

    def application(self) -> web.Application:
        app = web.Application(
            client_max_size=self.max_request_size, handler_args=None, middlewares=[self._guard]
        )
        ControlApi(self.table).add_routes(app)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        app.on_response_prepare.append(self._allow_origin)
        return app

    # --- whom it answers ----------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """Refuse what :class:`TrustRules` refuses, answer an allowed origin's preflight;
        else the handler, the request marked trusted when it carried the token."""
        paths = (request.rel_url.raw_path, request.path)
        refusal = self.trust.refusal(
            request.method, paths, request.headers, has_body=request.body_exists
        )
        if refusal is not None:
            logger.warning("refused %s %s: %s", request.method, _where(request), refusal.message)
            return _refusal_answer(request, refusal)
        preflight = self.trust.preflight_headers(request.method, request.headers)
        if preflight is not None:
            return web.Response(status=204, headers=preflight)
        request[TRUSTED] = self.trust.holds_token(request.headers)
        return await handler(request)

    async def _allow_origin(self, request: web.Request, response: web.StreamResponse) -> None:
        """An allowed page may read the answer: the CORS headers, on every response."""
        origin = self.trust.allowed_origin(request.headers)
        if origin is not None:
            response.headers.update(self.trust.cors_headers(origin))
            if "origin" not in response.headers.get("Vary", "").lower():
                response.headers.add("Vary", "Origin")

    # --- forwarding ---------------------------------------------------------------------

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        started = time.perf_counter()
        self.in_flight += 1
        try:
            response, what = await self._answer(request)
        finally:
            self.in_flight -= 1
        elapsed = (time.perf_counter() - started) * 1000
        logger.info("%s %s → %d %s (%.0f ms)", request.method, _where(request),
                    response.status, what, elapsed)  # fmt: skip
        return response

    async def _answer(self, request: web.Request) -> tuple[web.StreamResponse, str]:
        try:
            route = route_of(request.rel_url.raw_path, request.rel_url.raw_query_string)
        except RouteError as error:
            return _error(None, error.status, "openprogram_no_route", str(error)), "no route"
        vendor = route.vendor
        try:
            session = self.table.for_request(
                route.session,
                request.headers.get(RECORDING_HEADER),
                request.headers.get(MODE_HEADER),
            )
        except SessionRefused as refused:
            logger.warning("refused %s %s: %s", request.method, _where(request), refused)
            return _error(vendor, refused.status, refused.kind, str(refused)), "refused"
        if session.missing is not None:
            session.refuse(session.missing)
            logger.warning("refused %s %s: %s", request.method, _where(request), session.missing)
            return _error(vendor, 412, "openprogram_no_recording", session.missing), "refused"
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            message = (
                f"the request body is over the server's limit of {self.max_request_size} bytes: "
                "start it with a larger --max-request-size"
            )
            return _error(vendor, 413, "openprogram_request_too_large", message), "too large"
        url = route.upstream_url(self.upstreams.urls)
        outgoing = httpx.Request(
            request.method,
            url,
            headers=upstream_headers(request.headers.items()),
            content=body,
            extensions={"timeout": self.upstreams.timeout.as_dict()},
        )
        transport = self._transport(session, outgoing)
        recorded = session.mode == "record" and isinstance(transport, CapturingTransport)
        try:
            upstream = await transport.handle_async_request(outgoing)
        except RecordReplayEscape as escape:
            trusted = bool(request.get(TRUSTED))
            return self._refused(session, vendor, escape.error, trusted=trusted), "refused"
        except Exception as error:  # the upstream failed (live or as recorded)
            session.calls += recorded  # the failure is a recorded call too
            return _upstream_failed(session, vendor, outgoing, error), "upstream failed"
        session.calls += recorded
        what = "recorded" if session.mode == "record" else f"replayed from {session.name}"
        return await self._relay(request, upstream, session), what

    def _transport(self, session: ProxySession, outgoing: httpx.Request) -> Any:
        """The session's capturing transport for ``outgoing`` (the upstream's own for a
        passthrough host, whose requests go live uncaptured); a replay begins a new pass over
        its recording first when the request begins one."""
        upstream = self.upstreams.transport_for(str(outgoing.url))
        if not captures(None, outgoing.url, session.boundary, _LIBRARY):
            return upstream
        boundary, began = session.boundary_for(lambda: _sections_of(outgoing, session))
        if began is not None:
            assert session.passes is not None
            logger.info("%s: pass %d begins: %s", session.name, len(session.passes.passes),
                        began)  # fmt: skip
        return CapturingTransport(cast("AsyncTransport", upstream), boundary, _LIBRARY)

    async def _relay(
        self, request: web.Request, upstream: httpx.Response, session: ProxySession
    ) -> web.StreamResponse:
        """Pass ``upstream``'s response to the client as it arrives; a failure in the middle
        cuts the client's connection, as the upstream cut the server's."""
        relayed = web.StreamResponse(status=upstream.status_code, reason=upstream.reason_phrase)
        for name, value in client_headers(upstream.headers.multi_items()):
            relayed.headers.add(name, value)
        left = asyncio.Event()
        watch = asyncio.create_task(_watch_client(request, upstream, left))
        self.relaying.add(upstream)
        try:
            await relayed.prepare(request)
            async for chunk in upstream.aiter_raw():
                await relayed.write(chunk)
        except RecordReplayEscape as escape:
            logger.warning("%s: %s", _where(request), escape.error)
            self._note_refusal(session, escape.error)
            _cut(request)
            return relayed
        except Exception as error:
            if left.is_set() or (isinstance(error, ConnectionResetError) and _gone(request)):
                # closing the upstream's response records the call as abandoned and closes
                # that connection (the watch did, or the ``finally`` does)
                logger.info("the client of %s went away in the middle of the response",
                            _where(request))  # fmt: skip
            else:  # the upstream failed in the middle (live or as recorded)
                logger.warning("%s: the response was cut: %s: %s", _where(request),
                               type(error).__name__, error)  # fmt: skip
                _cut(request)
            return relayed
        finally:
            self.relaying.discard(upstream)
            watch.cancel()
            await upstream.aclose()
        with contextlib.suppress(ConnectionResetError):  # a client gone after the last byte
            await relayed.write_eof()
        return relayed

    def _refused(
        self, session: ProxySession, vendor: ServedApi, error: OpenProgramError, *, trusted: bool
    ) -> web.Response:
        """The answer to a request the session refused; a mismatch is told whole only to a
        client with the token (another is told where, not what the recording holds)."""
        self._note_refusal(session, error)
        if isinstance(error, ReplayMismatch):
            logger.warning("%s", error)
            told = str(error) if trusted else mismatch_for_stranger(error)
            return _error(vendor, 412, "openprogram_replay_mismatch", told)
        logger.warning("refused: %s", error)
        if isinstance(error, RecordingFileError):
            return _error(vendor, 500, "openprogram_recording_error", str(error))
        return _error(vendor, 412, "openprogram_blocked", str(error))

    @staticmethod
    def _note_refusal(session: ProxySession, error: OpenProgramError) -> None:
        """A refusal other than a mismatch (which the replay keeps) goes into the account."""
        if not isinstance(error, ReplayMismatch):
            session.refuse(str(error))


def _sections_of(outgoing: httpx.Request, session: ProxySession) -> RequestSections:
    """``outgoing`` as the session's boundary compares it: its sections and its redactor, as
    the exchange makes them."""
    captured = captured_request(outgoing)
    boundary = session.boundary
    sections = request_sections(captured.method, captured.url, captured.headers, captured.body,
                                boundary.extra_headers)  # fmt: skip
    redactor = call_redactor(captured.headers, boundary.user_redaction)
    return RequestSections(sections, redactor.redact_http_request)


def _error(vendor: ServedApi | None, status: int, kind: str, message: str) -> web.Response:
    """An answer of the server's own, in ``vendor``'s error shape (OpenAI's for none)."""
    shape = vendor if vendor is not None else VENDORS[0]
    headers = {"x-openprogram-error": kind}
    if status < 500 or kind.startswith("openprogram_recording"):
        headers.update(_NO_RETRY)
    return web.json_response(
        shape.error_body(status, kind, message), status=status, headers=headers
    )


def _where(request: web.Request) -> str:
    """``request``'s path for the log: as it came, still escaped (a line stays one line),
    without its query (which may hold a key)."""
    return request.rel_url.raw_path


def _refusal_answer(request: web.Request, refusal: Refusal) -> web.Response:
    """``refusal`` in the control API's shape for a control path, else in the vendor's (the
    path's, OpenAI's for a path under none)."""
    path = request.rel_url.raw_path
    if path.startswith(CONTROL_PREFIX) and not path.startswith(SESSION_PREFIX):
        return control_error(refusal.status, refusal.kind, refusal.message)
    try:
        vendor: ServedApi | None = route_of(path).vendor
    except RouteError:
        vendor = None
    return _error(vendor, refusal.status, refusal.kind, refusal.message)


def _upstream_failed(
    session: ProxySession, vendor: ServedApi, outgoing: httpx.Request, error: Exception
) -> web.Response:
    """The answer to a request whose upstream failed before answering: 504 for a timeout,
    else 502, naming the error as it was recorded (redacted the same way)."""
    redactor = call_redactor(outgoing.headers.multi_items(), session.boundary.user_redaction)
    detail = redactor.redact_text(f"{type(error).__name__}: {error}")
    host = outgoing.url.host
    logger.warning("%s %s: the upstream failed: %s", outgoing.method, host, detail)
    if isinstance(error, httpx.TimeoutException):
        status, kind = 504, "openprogram_upstream_timeout"
    else:
        status, kind = 502, "openprogram_upstream_error"
    response = _error(vendor, status, kind, f"upstream {host}: {detail}")
    if session.mode == "replay":
        response.headers["retry-after-ms"] = "1"  # replay need not wait out a back-off
    return response


_CLIENT_CHECK = 0.2
"""How often (seconds) a relay looks whether its client is still there."""


def _gone(request: web.Request) -> bool:
    """Whether the client of ``request`` closed its connection."""
    return request.transport is None


async def _watch_client(
    request: web.Request, upstream: httpx.Response, left: asyncio.Event
) -> None:
    """For as long as a response is relayed: when its client goes away — also while the
    upstream is silent (a model thinking), when no write would tell — set ``left`` and close
    the upstream's response under the pending read (the call is recorded as abandoned)."""
    while not _gone(request):
        await asyncio.sleep(_CLIENT_CHECK)
    left.set()
    await upstream.aclose()


def _cut(request: web.Request) -> None:
    """Close the client's connection without ending the response: the client sees it cut."""
    if request.transport is not None:
        request.transport.abort()


async def finish_in_flight(server: ProxyServer, grace: float) -> None:
    """Wait up to ``grace`` seconds for the requests in flight to finish, then close the
    upstream responses still being relayed: their calls are recorded as abandoned, and their
    clients' connections cut."""
    deadline = time.monotonic() + grace
    while server.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    for upstream in list(server.relaying):
        await upstream.aclose()
    while server.relaying and time.monotonic() < deadline + 1:
        await asyncio.sleep(0.01)  # the relays see their responses closed, and end
