"""HTTP for the vendor providers: one POST, a server-sent event stream back, and every way
it can fail turned into an ``error`` event that keeps the reply streamed so far.

Each call opens its own ``httpx.AsyncClient`` inside the stream and closes it there, so no
connection outlives the call or crosses event loops (only the TLS settings, which hold no
connection, are built once); a consumer that stops early (``aclose()``) closes the
response. The server-sent events are read with httpx-sse and handed, one at a time, to the
reply's :class:`~openprogram.providers.builtins.reply_assembly.ReplyAssembler`, which reads
them through the vendor's own reader.

What a failure looks like (every message starts with the api, e.g. ``openai-completions:``):

    HTTP status not 2xx    HTTP 429 Too Many Requests: <the server's message> (retry after 3 s)
    connection refused     could not connect to <url> (connection refused)
    read timeout           no data from the server for 600 s (read timeout) …
    dropped mid-stream     the connection was dropped mid-stream (…)
    not an event stream    expected a server-sent event stream, got Content-Type '…' …
    bad data, early end    the reader's message (see ``reply_assembly.VendorStreamError``)
    options.signal set     reason ``aborted``: request aborted by signal

No message holds a credential: every one goes through the redactor, which removes the call's
key, the known keys, a password in a URL (``https://user:pass@host``) and secret-named query
parameters (``?api_key=…``), so neither a ``base_url`` nor a server's reply can leak one."""

from __future__ import annotations

import asyncio
import errno
import functools
import os
import ssl
from collections.abc import AsyncIterator, Callable, Coroutine
from http import HTTPStatus
from typing import Any, TypeVar

import httpx
import orjson
from httpx_sse import EventSource, ServerSentEvent

from openprogram.http_boundary.boundary import PROVIDER_CLIENT_MARK
from openprogram.providers.builtins.reply_assembly import (
    SNIPPET_LENGTH,
    ReplyAssembler,
    VendorStreamError,
)
from openprogram.providers.builtins.vendor_provider import CONNECT_TIMEOUT, HttpRequest
from openprogram.providers.events import AssistantMessageEvent, ErrorEvent
from openprogram.providers.types import is_loopback_url
from openprogram.recording.redaction import SecretRedactor

T = TypeVar("T")

ERROR_BODY_LIMIT = 64 * 1024
"""Bytes of an error response read to find the server's message."""


class _Aborted(Exception):
    """``options.signal`` was set."""


async def stream_reply(
    prepare: Callable[[], HttpRequest],
    reply: ReplyAssembler,
    *,
    signal: asyncio.Event | None = None,
    on_payload: Callable[[dict[str, Any]], None] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
) -> AsyncIterator[AssistantMessageEvent]:
    """Send the request ``prepare()`` builds (through ``transport`` if given, else the
    network) and yield the reply's events: ``start``, the content, then ``done`` or
    ``error``. Never raises for a network, HTTP or stream problem; what ``prepare`` raises
    (a missing key) is raised by the first ``__anext__``, before any event, so that a
    recorder wrapping this stream records it as the call's error."""
    request = prepare()
    yield reply.start()
    responded = False
    failure: ErrorEvent | None = None
    try:
        if signal is not None and signal.is_set():
            raise _Aborted
        if on_payload is not None:
            on_payload(request.body)
        content = orjson.dumps(request.body)
        async with httpx.AsyncClient(
            transport=transport,
            timeout=httpx.Timeout(request.timeout, connect=min(CONNECT_TIMEOUT, request.timeout)),
            verify=_tls_context(),
            # A server on this machine is never reached through an HTTP(S)_PROXY.
            trust_env=not is_loopback_url(request.url),
        ) as client:
            setattr(client, PROVIDER_CLIENT_MARK, True)  # recorded at the registry, not at HTTP
            outgoing = client.build_request(
                "POST", request.url, content=content, headers=request.headers
            )
            response = await _until_aborted(client.send(outgoing, stream=True), signal)
            responded = True
            try:
                await _check_response(response, request)
                events = EventSource(response).aiter_sse()
                try:
                    while True:
                        sse = await _until_aborted(_next_event(events), signal)
                        if sse is None:
                            break
                        for event in reply.feed(sse.event, sse.data):
                            yield event
                        if reply.finished:
                            return
                    for event in reply.end_of_stream():
                        yield event
                finally:
                    await events.aclose()
            finally:
                await response.aclose()
    except _Aborted:
        failure = reply.failure("aborted", f"{reply.api}: request aborted by signal")
    except VendorStreamError as exc:
        failure = reply.failure("error", _scrub(f"{reply.api}: {exc}", request))
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        problem = describe_transport_error(exc, request, responded=responded, api=reply.api)
        failure = reply.failure("error", _scrub(f"{reply.api}: {problem}", request))
    if failure is not None:
        for event in reply.take_events():  # blocks closed before the stream stopped
            yield event
        yield failure


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for the process: building one loads the CA bundle (~0.1 s), too slow
    to repeat per call. It holds no connection, so sharing it leaks nothing between calls."""
    return httpx.create_ssl_context()


async def _next_event(events: AsyncIterator[ServerSentEvent]) -> ServerSentEvent | None:
    try:
        return await events.__anext__()
    except StopAsyncIteration:
        return None


async def _until_aborted(work: Coroutine[Any, Any, T], signal: asyncio.Event | None) -> T:
    """Await ``work``, or raise :class:`_Aborted` as soon as ``signal`` is set (``work`` is
    then cancelled and has unwound before this returns)."""
    if signal is None:
        return await work
    if signal.is_set():
        work.close()
        raise _Aborted
    task = asyncio.ensure_future(work)
    stop = asyncio.ensure_future(signal.wait())
    try:
        await asyncio.wait({task, stop}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stop.cancel()
        if not task.done():
            task.cancel()
            await asyncio.wait({task})
    if task.cancelled():
        raise _Aborted
    return task.result()  # a result that arrived with the signal is kept, not leaked


async def _check_response(response: httpx.Response, request: HttpRequest) -> None:
    if not response.is_success:
        body = await _read_some(response)
        raise VendorStreamError(describe_http_error(response, body, request))
    content_type = response.headers.get("content-type", "")
    if "text/event-stream" not in content_type.partition(";")[0].lower():
        body = await _read_some(response)
        raise VendorStreamError(
            f"expected a server-sent event stream, got Content-Type {content_type!r}"
            + (f": {_body_snippet(body)}" if body.strip() else "")
        )


async def _read_some(response: httpx.Response) -> bytes:
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) >= ERROR_BODY_LIMIT:
            break
    return bytes(body[:ERROR_BODY_LIMIT])


def describe_http_error(response: httpx.Response, body: bytes, request: HttpRequest) -> str:
    """``HTTP 429 Too Many Requests: <server message> (retry after 3 s)``, plus a hint."""
    status = response.status_code
    phrase = response.reason_phrase or _standard_phrase(status)
    text = f"HTTP {status} {phrase}".rstrip()
    server_message = _server_message(body)
    if server_message:
        text += f": {server_message}"
    retry_after = response.headers.get("retry-after", "").strip()
    if retry_after:
        seconds = retry_after.isdigit()
        text += f" (retry after {retry_after} s)" if seconds else f" (retry after {retry_after})"
    hint = _hint(response, request)
    return f"{text} ({hint})" if hint else text


def _standard_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _server_message(body: bytes) -> str | None:
    if not body.strip():
        return None
    try:
        message = _error_message(orjson.loads(body))
    except orjson.JSONDecodeError:
        message = None
    return message if message is not None else _body_snippet(body)


def _error_message(payload: Any) -> str | None:
    """The server's own message in an error body: ``{"error": {"message": …}}`` (OpenAI,
    Anthropic; its ``type`` when it has no message), ``{"error": "…"}``, ``{"message": "…"}``
    or ``{"detail": "…"}`` (some compatible servers)."""
    if not isinstance(payload, dict):
        return None
    error = payload.get("error")
    if isinstance(error, dict):
        for key in ("message", "type"):
            if isinstance(error.get(key), str) and error[key]:
                return str(error[key])
    if isinstance(error, str) and error:
        return error
    for key in ("message", "detail"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _body_snippet(body: bytes) -> str:
    text = " ".join(body.decode("utf-8", errors="replace").split())
    return text[:SNIPPET_LENGTH]


def _hint(response: httpx.Response, request: HttpRequest) -> str | None:
    status = response.status_code
    if status in (401, 403):
        if request.key_source is None:
            return f"no API key was sent; set {request.api_key_env} or pass options.api_key"
        return f"check the API key from {request.key_source}"
    if status == 404:
        return f"check the model id and base_url; the request went to {request.url}"
    if 300 <= status < 400:
        location = response.headers.get("location")
        target = f", the server points to {location}" if location else ""
        return f"check base_url; the request went to {request.url}{target}"
    return None


def describe_transport_error(
    exc: Exception, request: HttpRequest, *, responded: bool, api: str
) -> str:
    """What went wrong on the wire, in words, with what to do next where there is a choice."""
    read_limit = f"{request.timeout:g} s"
    if isinstance(exc, httpx.ConnectTimeout):
        seconds = min(CONNECT_TIMEOUT, request.timeout)
        return f"could not connect to {request.url} within {seconds:g} s (connect timeout)"
    if isinstance(exc, httpx.ReadTimeout):
        return (
            f"no data from the server for {read_limit} (read timeout); a slow server needs a "
            f"larger timeout in [providers.{api}]"
        )
    if isinstance(exc, httpx.TimeoutException):
        return f"the request timed out after {read_limit} ({type(exc).__name__})"
    if isinstance(exc, httpx.ConnectError):
        return f"could not connect to {request.url} ({_os_reason(exc)})"
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        if responded:
            return f"the connection was dropped mid-stream ({_os_reason(exc)})"
        return f"the server closed the connection without replying ({_os_reason(exc)})"
    if isinstance(exc, httpx.UnsupportedProtocol | httpx.InvalidURL):
        return f"cannot send a request to {request.url!r} ({exc}); check base_url"
    return f"{type(exc).__name__}: {_os_reason(exc)}"


def _os_reason(exc: BaseException) -> str:
    """The most specific reason in the exception chain: an OS error's own words if any."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        code = getattr(current, "errno", None)
        if isinstance(current, OSError) and isinstance(code, int) and code in errno.errorcode:
            return os.strerror(code).lower()
        pending.extend([current.__context__, current.__cause__])
    return str(exc) or type(exc).__name__


def _scrub(message: str, request: HttpRequest) -> str:
    return SecretRedactor.for_request(request.api_key).redact_text(message)
