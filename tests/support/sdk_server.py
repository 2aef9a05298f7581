"""A loopback HTTP server that speaks what the official ``openai`` and ``anthropic`` SDKs
expect, for driving the real SDKs (both generations) over a real socket.

It answers ``POST /v1/chat/completions``, ``/v1/responses`` and ``/v1/messages`` as the
vendors do (see :mod:`tests.support.sdk_replies` for the bodies and streams): streamed
answers are ``text/event-stream``, sent with chunked transfer encoding, one TCP write per
event; whole JSON bodies are gzip-encoded when the request's ``Accept-Encoding`` allows it
(the SDKs' clients ask for gzip). Each response carries the headers the vendor sends, with
the values that change on every response made anew: ``date``, request ids
(``x-request-id``, ``request-id``), ``openai-processing-ms``, ``cf-ray``, rate-limit counts and
resets, a ``set-cookie`` — and, in bodies, object ids, ``created`` and tool-call ids — so
that a test can check those stay out of a recording's hash.

A test makes the next requests fail by queueing faults, each taken by one request:

* :class:`ErrorReply`: the vendor's error body for a status (400/401/404/429/500/529), with
  the headers given (``retry-after``, ``retry-after-ms``…);
* :class:`CutAfter`: the stream is cut after N events (the socket closed without the end of
  the chunked body);
* :class:`StallAfter`: the server goes silent — before the status line, or after N events —
  until the client gives up (a read timeout) or the server stops.

A connection refused is a port nobody listens on: :func:`refused_base_url`. The server, the
request log and the ways of writing an answer are :mod:`tests.support.loopback_server`'s.

    with SdkServer() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.openai_url)
        server.queue(ErrorReply(429))
        client.chat.completions.create(...)   # a 429, retried, then the answer
        assert [r.path for r in server.received] == ["/v1/chat/completions"] * 2
"""

from __future__ import annotations

import gzip
import json
import random
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tests.support import sdk_replies as replies
from tests.support.loopback_server import (
    LoopbackHandler,
    LoopbackServer,
    Received,
    sse_event,
    unused_port,
)

__all__ = [
    "CutAfter",
    "ErrorReply",
    "Fault",
    "Received",
    "SdkServer",
    "Sent",
    "StallAfter",
    "refused_base_url",
]

ROUTES = {
    "/v1/chat/completions": ("openai", "chat"),
    "/v1/responses": ("openai", "responses"),
    "/v1/messages": ("anthropic", "messages"),
}


@dataclass(frozen=True)
class ErrorReply:
    """The vendor's error answer to one request."""

    status: int
    headers: Mapping[str, str] = field(default_factory=dict)
    echo_key: bool = False
    """The 401 message quotes the whole key the request sent."""


@dataclass(frozen=True)
class CutAfter:
    """The stream of one request is cut after ``events`` SSE events."""

    events: int


@dataclass(frozen=True)
class StallAfter:
    """The server goes silent on one request: before its status line (``events`` None) or
    after ``events`` SSE events."""

    events: int | None = None


Fault = ErrorReply | CutAfter | StallAfter
"""What the server does to one request instead of answering it."""


@dataclass
class Sent:
    """What the server answered one request with: status, headers and how the body went."""

    status: int
    headers: dict[str, str]
    gzipped: bool = False
    events: int = 0
    """SSE events written."""


def refused_base_url() -> str:
    """A base URL on 127.0.0.1 where a connection is refused (nothing listens there)."""
    return f"http://127.0.0.1:{unused_port()}"


class SdkServer(LoopbackServer):
    """The vendors' APIs on ``127.0.0.1``; a context manager (started on creation)."""

    path_with_query = False

    def __init__(self, port: int = 0) -> None:
        """``port``: 0 for any free one, or a given one — that of an earlier server, so that
        a second run of a session sends its requests to the same URLs."""
        self.sent: list[Sent] = []
        self.faults: deque[Fault] = deque()
        self.run = replies.PerRun()
        super().__init__(port)

    @property
    def base_url(self) -> str:
        """The ``base_url`` of an Anthropic client (the SDK adds ``/v1/messages``)."""
        return super().base_url

    @property
    def openai_url(self) -> str:
        """The ``base_url`` of an OpenAI client (it holds the ``/v1``)."""
        return f"{self.base_url}/v1"

    def queue(self, *faults: Fault) -> None:
        """The next requests fail as ``faults`` say, one fault each, in order."""
        with self.lock:
            self.faults.extend(faults)

    def next_fault(self) -> Fault | None:
        with self.lock:
            return self.faults.popleft() if self.faults else None

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        fault = self.next_fault()
        if isinstance(fault, StallAfter) and fault.events is None:
            http.hold()
            return
        vendor, api = ROUTES.get(received.path, ("openai", None))
        body = received.json() if received.body and api is not None else {}
        if api is None:  # any body (an upload's multipart one too): 404
            self._send_json(http, vendor, 404, _not_found(received.path), received, {})
        elif isinstance(fault, ErrorReply):
            error = replies.error_body(
                vendor,
                fault.status,
                model=str(body.get("model")),
                key=_key_sent(received.headers),
                run=self.run,
                echo_key=fault.echo_key,
            )
            extra = {**_should_retry(vendor, fault.status), **fault.headers}
            self._send_json(http, vendor, fault.status, error, received, extra)
        else:
            plan = replies.plan_reply(api, body)
            if body.get("stream"):
                self._send_events(http, vendor, _events(api, plan, body, self.run), fault)
            else:
                self._send_json(http, vendor, 200, _whole(api, plan, self.run), received, {})

    def _send_json(
        self,
        http: LoopbackHandler,
        vendor: str,
        status: int,
        value: Any,
        received: Received,
        extra: Mapping[str, str],
    ) -> None:
        raw = json.dumps(value).encode()
        headers = {**_vendor_headers(vendor, self), **extra}
        headers["content-type"] = "application/json"
        gzipped = "gzip" in received.headers.get("accept-encoding", "")
        if gzipped:
            raw = gzip.compress(raw)
            headers["content-encoding"] = "gzip"
        headers["content-length"] = str(len(raw))
        http.send_head(status, headers)  # adds Date and Server
        self.sent.append(Sent(status, headers, gzipped=gzipped))
        http.send_body(raw)

    def _send_events(
        self, http: LoopbackHandler, vendor: str, events: list[bytes], fault: Fault | None
    ) -> None:
        headers = _vendor_headers(vendor, self)
        headers["content-type"] = "text/event-stream; charset=utf-8"
        headers["transfer-encoding"] = "chunked"
        http.send_head(200, headers)
        sent = Sent(200, headers)
        self.sent.append(sent)
        limit = fault.events if isinstance(fault, CutAfter | StallAfter) else None
        for event in events[:limit]:
            http.send_chunk(event)
            sent.events += 1
            time.sleep(0.0005)
        if isinstance(fault, CutAfter):
            http.cut()
        elif isinstance(fault, StallAfter):
            http.hold()
        else:
            http.end_chunks()


def _events(api: str, plan: replies.Plan, body: dict[str, Any], run: replies.PerRun) -> list[bytes]:
    if api == "chat":
        options = body.get("stream_options") or {}
        chunks = replies.chat_chunks(plan, run, include_usage=bool(options.get("include_usage")))
        return [*(_sse(chunk) for chunk in chunks), _sse("[DONE]")]
    if api == "responses":
        typed = replies.response_events(plan, run)
    else:
        typed = replies.message_events(plan, run)
    return [_sse(event, event["type"]) for event in typed]


def _whole(api: str, plan: replies.Plan, run: replies.PerRun) -> dict[str, Any]:
    if api == "chat":
        return replies.chat_completion(plan, run)
    if api == "responses":
        return replies.response(plan, run)
    return replies.message(plan, run)


def _sse(data: Any, event: str | None = None) -> bytes:
    return sse_event(data, event, ensure_ascii=True, separators=(",", ":"))


def _key_sent(headers: Mapping[str, str]) -> str:
    bearer = headers.get("authorization", "")
    return headers.get("x-api-key") or bearer.removeprefix("Bearer ").strip()


def _not_found(path: str) -> dict[str, Any]:
    message = f"Invalid URL (POST {path})"
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }


def _should_retry(vendor: str, status: int) -> dict[str, str]:
    if vendor != "anthropic":
        return {}
    return {"x-should-retry": "true" if status in (429, 500, 529) else "false"}


def _vendor_headers(vendor: str, owner: SdkServer) -> dict[str, str]:
    """The headers each vendor sends with every response; the per-response values new."""
    run = owner.run
    count = len(owner.received)
    ray = f"{run.token('', 16)}-LHR"
    if vendor == "openai":
        return {
            "x-request-id": run.token("req_", 32),
            "openai-organization": "user-loopback",
            "openai-processing-ms": str(random.randint(40, 900)),
            "openai-version": "2020-10-01",
            "x-ratelimit-limit-requests": "10000",
            "x-ratelimit-remaining-requests": str(10000 - count),
            "x-ratelimit-reset-requests": f"{random.randint(2, 9)}ms",
            "cf-ray": ray,
            "set-cookie": f"__cf_bm={run.token('', 40)}; path=/; HttpOnly; Secure",
        }
    reset = datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    return {
        "request-id": run.token("req_", 24),
        "anthropic-organization-id": "4f1c2a9e-loopback",
        "anthropic-ratelimit-requests-limit": "4000",
        "anthropic-ratelimit-requests-remaining": str(4000 - count),
        "anthropic-ratelimit-requests-reset": reset,
        "cf-ray": ray,
    }
