"""Which recorded calls drift re-sends, and sending one: its recorded request, live, with its
credentials, the answer made into event rows by the recorder's own code (redaction
included), so that it compares with the recorded rows as one recording's call with another's.

A call is not sent (and the report counts it, with the reason) when:

* the origin it was recorded to is not trusted for its vendor (its official API, or one the
  user named: :mod:`openprogram.drift.origins`) — checked before anything else, so that
  such a call opens no connection and carries no credential, and a recording pointed at
  another host names it in one reason;
* it depends on state the server keeps — a stored response it continues
  (``previous_response_id``), a conversation, thread, assistant, file or vector store it
  names, Gemini's ``cachedContent``, or an endpoint that manages such state (``/files``,
  ``/threads``, ``/batches``…) — or its method changes server state (``DELETE``, ``PUT``,
  ``PATCH``): the live answer would depend on what the server holds today;
* its recorded request holds a redacted value (``[secret removed]``) anywhere but where drift
  puts the credential back: sending it would not be the recorded request;
* the recorded call got no answer (a refused connection, a timeout), or its answer was a
  transient error the client retried (408, 409, 429, 5xx): there is nothing stable to
  compare with;
* there is no credential for its vendor (:mod:`openprogram.drift.credentials`).

HTTP calls are sent with httpx (a client the HTTP boundary leaves alone, as it leaves
openprogram's own providers' clients, so a drift check made inside a replayed test is never
served from the recording). openprogram's own provider calls are re-sent through their
built-in provider, rebuilt from the recorded request, and compared on the event rows."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import orjson

from openprogram.drift.credentials import (
    Credentials,
    MissingCredentials,
    apply_credentials,
    sent_key,
    vendor_of,
)
from openprogram.drift.origins import BaseUrls, UntrustedOrigin, vendor_names
from openprogram.recording.token_shapes import PLACEHOLDER

if TYPE_CHECKING:
    import httpx

    from openprogram.recording.format import RecordedCall
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "STATE_FIELDS",
    "LiveRequest",
    "Unsent",
    "destination",
    "live_request",
    "provider_base_url",
    "send_http",
    "send_provider_call",
]

STATE_FIELDS: Final = frozenset(
    {
        "previous_response_id",
        "conversation",
        "conversation_id",
        "thread_id",
        "assistant_id",
        "file_id",
        "file_ids",
        "vector_store_id",
        "vector_store_ids",
        "cachedContent",
        "cached_content",
    }
)
"""Request fields that name state the server keeps."""

_STATE_PATHS: Final = frozenset(
    {
        "files",
        "uploads",
        "threads",
        "assistants",
        "vector_stores",
        "batches",
        "fine_tuning",
        "conversations",
        "cachedContents",
    }
)
_TRANSIENT: Final = frozenset({408, 409, 429})
_STATELESS_METHODS: Final = frozenset({"GET", "POST", "HEAD", "OPTIONS"})
_USER_AGENT: Final = "openprogram-drift"


class Unsent(Exception):
    """A call drift does not send, and why."""


@dataclass(frozen=True)
class LiveRequest:
    """A recorded HTTP request made ready to send: where, with which headers and body."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes


def destination(call: RecordedCall, base_urls: BaseUrls) -> str | None:
    """Where ``call`` is sent: its request's URL (an HTTP call) or its provider's base URL, on the
    origin trusted for its vendor (:meth:`BaseUrls.destination`) — None for a provider call that
    reaches no server (``echo``) or that openprogram does not re-send; raises :class:`Unsent` when
    the origin it was recorded to is not trusted for its vendor."""
    request = call.request
    if call.boundary == "http":
        url: str | None = str(request.get("url"))
        vendor = vendor_of(request)
    else:
        from openprogram.providers.builtins import VENDOR_OF_API

        model = request.get("model")
        model = model if isinstance(model, dict) else {}
        vendor = VENDOR_OF_API.get(str(model.get("api")))
        # echo reaches no server; a provider openprogram does not ship is not re-sent
        url = provider_base_url(model) if vendor in vendor_names() else None
    if url is None:
        return None
    try:
        return base_urls.destination(url, vendor)
    except UntrustedOrigin as untrusted:
        raise Unsent(str(untrusted)) from None


def live_request(call: RecordedCall, credentials: Credentials, base_urls: BaseUrls) -> LiveRequest:
    """The request to send for ``call``; raises :class:`Unsent` when it is not to be sent.
    ``base_urls``: the origins the user named (:mod:`openprogram.drift.origins`)."""
    request = call.request
    url = destination(call, base_urls)
    assert url is not None  # an HTTP call has its URL
    _check_sendable(call)
    method = str(request["method"]).upper()
    vendor = vendor_of(request)
    headers = {str(name): str(value) for name, value in dict(request["headers"]).items()}
    headers.setdefault("user-agent", _USER_AGENT)
    body = _body_bytes(request)
    try:
        url = apply_credentials(vendor, method, url, headers, body, credentials)
    except MissingCredentials as missing:
        raise Unsent(str(missing)) from None
    redacted = _redacted_field(url, headers, request)
    if redacted is not None:
        raise Unsent(
            f"{redacted} holds a redacted value ({PLACEHOLDER}): sending it would not be the "
            "recorded request"
        )
    return LiveRequest(method, url, headers, body)


def _check_sendable(call: RecordedCall) -> None:
    if call.truncated:
        raise Unsent("the recording stops inside this call")
    response = next((row for row in call.event_rows if row.get("type") == "http_response"), None)
    if response is None:
        error = call.error
        what = f" ({error.type})" if error is not None else ""
        raise Unsent(f"the recorded call got no response{what}: nothing to compare with")
    status = response.get("status")
    if isinstance(status, int) and (status in _TRANSIENT or status >= 500):
        raise Unsent(f"the recorded answer was a transient {status}: nothing stable to compare")
    request = call.request
    method = str(request.get("method", "")).upper()
    if method not in _STATELESS_METHODS:
        raise Unsent(f"a {method} changes what the server holds")
    segments = [part for part in urlsplit(str(request.get("url"))).path.split("/") if part]
    for position, segment in enumerate(segments):
        name = segment.partition(":")[0]
        if name in _STATE_PATHS:
            raise Unsent(f"it calls /{name}, which manages state the server keeps")
        if name == "responses" and position + 1 < len(segments):
            raise Unsent("it names a stored response, which the server keeps")
    field = _state_field(request.get("body"), "body")
    if field is not None:
        raise Unsent(f"it depends on state the server keeps ({field})")


def _state_field(value: Any, path: str) -> str | None:
    """The first field of ``value`` that names server-side state, as a path."""
    return _first_path(
        value, path, lambda key, item: key in STATE_FIELDS and item not in (None, "", [], {})
    )


def _first_path(value: Any, path: str, holds: Callable[[str | None, Any], bool]) -> str | None:
    """The path of the first place in the JSON ``value`` (at ``path``) that ``holds``: each
    key with its value, each string (``key`` None) as found, depth first."""
    if isinstance(value, str):
        return path if holds(None, value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if holds(str(key), item):
                return f"{path}.{key}"
            found = _first_path(item, f"{path}.{key}", holds)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _first_path(item, f"{path}[{index}]", holds)
            if found is not None:
                return found
    return None


def _body_bytes(request: Mapping[str, Any]) -> bytes:
    if "body" in request:
        return orjson.dumps(request["body"])
    if "body_text" in request:
        return str(request["body_text"]).encode()
    if "body_base64" in request:
        return base64.b64decode(str(request["body_base64"]))
    return b""


def _redacted_field(url: str, headers: Mapping[str, str], request: Mapping[str, Any]) -> str | None:
    """The first part of a request about to be sent that holds the redaction placeholder."""
    if PLACEHOLDER in url or PLACEHOLDER.replace(" ", "%20") in url:
        return "url"
    for name, value in headers.items():
        if PLACEHOLDER in value:
            return f"headers.{name}"
    if "body_text" in request and PLACEHOLDER in str(request["body_text"]):
        return "body_text"
    return _first_path(
        request.get("body"), "body", lambda key, item: PLACEHOLDER in (item if key is None else key)
    )


# --- sending -------------------------------------------------------------------------------


def send_http(
    client: httpx.Client, request: LiveRequest, user: UserRedaction | None = None
) -> list[dict[str, Any]]:
    """Send ``request`` and read its whole answer into event rows, as the recorder writes them
    (redacted, the credentials sent known as secrets). A transport failure raises httpx's error."""
    from openprogram.http_boundary.exchange import call_redactor
    from openprogram.http_boundary.whole_answers import answer_rows

    headers = [(name.lower(), value) for name, value in request.headers.items()]
    redactor = call_redactor(headers, user)
    with client.stream(
        request.method, request.url, headers=request.headers, content=request.body or None
    ) as response:
        # httpx decodes the body; the head's content-encoding (and the encoded length) are
        # left out of its row, as the recorder leaves them out
        received = [(name.lower(), value) for name, value in response.headers.multi_items()]
        return answer_rows(response.status_code, received, response.iter_bytes(), redactor)


def provider_base_url(model: Mapping[str, Any]) -> str | None:
    """Where a recorded provider call is re-sent: its model's ``base_url``, else the default
    of openprogram's own provider for its api (None for one without a server, as echo)."""
    from openprogram.providers.builtins import BUILTIN_PROVIDER_FACTORIES

    if model.get("base_url"):
        return str(model["base_url"])
    factory = BUILTIN_PROVIDER_FACTORIES.get(str(model.get("api")))
    default = getattr(factory(None), "base_url", None) if factory is not None else None
    return default if isinstance(default, str) else None


def send_provider_call(
    call: RecordedCall, credentials: Credentials, base_urls: BaseUrls
) -> list[dict[str, Any]]:
    """Re-send a provider call through openprogram's built-in provider for its api, rebuilt
    from the recorded request, to its :func:`destination`, and return the events it streamed
    as event rows (redacted as the recorder redacts them); raises :class:`Unsent` for an
    origin not trusted for its vendor, an api openprogram does not ship, a request that no
    longer validates, or a missing key."""
    from pydantic import ValidationError

    from openprogram.providers.builtins import BUILTIN_PROVIDER_FACTORIES, VENDOR_OF_API
    from openprogram.providers.types import Context, Model, SimpleStreamOptions
    from openprogram.recording.redaction import SecretRedactor

    request = call.request
    try:
        model = Model.model_validate(request["model"])
        context = Context.model_validate(request["context"])
        # the options of either entry point (``stream_simple``'s hold ``reasoning`` too)
        options = SimpleStreamOptions.model_validate(request["options"])
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        problem = f"{where}: {first['msg']}"
        raise Unsent(f"its recorded request no longer validates ({problem})") from None
    factory = BUILTIN_PROVIDER_FACTORIES.get(model.api)
    if factory is None:
        raise Unsent(f"api {model.api!r} is not one of openprogram's own providers")
    vendor = VENDOR_OF_API.get(model.api, model.api)
    sent_to = destination(call, base_urls)
    key: str | None = None
    if sent_to is not None:
        try:
            headers: dict[str, str] = {}
            apply_credentials(vendor, "POST", sent_to, headers, b"", credentials)
        except MissingCredentials as missing:
            raise Unsent(str(missing)) from None
        key = sent_key(headers)
        model = model.model_copy(update={"base_url": sent_to})
    if key:
        options = options.model_copy(update={"api_key": key})
    redactor = SecretRedactor.for_request(key)

    async def streamed() -> list[dict[str, Any]]:
        provider = factory(None)
        events = provider.stream_simple(model, context, options)
        rows = [event.model_dump(mode="json") async for event in events]
        return [redactor.redact_model_output(row) for row in rows]

    return asyncio.run(streamed())
