"""The fields that change from run to run: replay's comparison, the transcript hash and
``diff`` leave them out, so two recordings of the same session made on different runs match.

**Provider calls.** The field ``timestamp``, at any depth (the creation time of each message):
:data:`NON_DETERMINISTIC_FIELD_NAMES`.

**HTTP calls.** Nothing in a request: the stored request headers are only those that change
what the request means, and the SDKs put their per-run values (idempotency keys, retry counts,
user agents, trace ids) in headers that are not stored. In a response:

* the ``http_response`` headers a server sets anew for every response: ``date``,
  ``openai-processing-ms``, ``cf-ray``, ``server-timing``, every ``x-envoy-…`` header, every
  name ending in ``request-id`` or ``requestid`` (``x-request-id``, ``request-id``), the
  rate-limit headers that count down (a name holding ``ratelimit`` and ``remaining`` or
  ``reset``: ``x-ratelimit-remaining-tokens``, ``anthropic-ratelimit-requests-reset``) and
  the retry hints ``retry-after`` and ``retry-after-ms``;
* in an ``http_body`` event's ``body`` and an ``sse`` event's ``data``, the per-run identity
  of the object the response is about: its ``id``, ``created``, ``created_at``,
  ``completed_at``, ``system_fingerprint`` and ``request_id`` (an Anthropic error body names
  the request it answers), at the top level (an OpenAI chat completion or chunk, an Anthropic
  message, an OpenAI response) and in a top-level ``message`` or ``response`` object (the
  Anthropic ``message_start`` event, the OpenAI Responses stream events).

Tool-call ids stay: the next request sends them back to link each tool result to its call,
so replay hands the agent the recorded ones and the next request carries them again; they are
part of what the session did. Ids deeper in a body (choices, content blocks, output items)
stay for the same reason.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "HTTP_BODY_IDENTITY_FIELDS",
    "HTTP_RESPONSE_HEADERS",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "deterministic_event",
    "is_non_deterministic_header",
    "request_ignore_fields",
]

NON_DETERMINISTIC_FIELD_NAMES: frozenset[str] = frozenset({"timestamp"})
"""Field names skipped at any depth in a provider call's request and events."""

HTTP_RESPONSE_HEADERS: frozenset[str] = frozenset(
    {
        "date",
        "openai-processing-ms",
        "cf-ray",
        "server-timing",
        "retry-after",
        "retry-after-ms",
    }
)
"""Response headers left out by name (lower-case); :func:`is_non_deterministic_header` adds
the ``x-envoy-`` prefix, request ids and the counting-down rate-limit headers."""

HTTP_BODY_IDENTITY_FIELDS: tuple[str, ...] = (
    "id",
    "created",
    "created_at",
    "completed_at",
    "system_fingerprint",
    "request_id",
)
"""The fields of a response object that name this run's instance of it."""
_OBJECTS_WITH_IDENTITY = ("message", "response")


def request_ignore_fields(boundary: str) -> frozenset[str]:
    """The fields left out when a request of ``boundary`` is compared."""
    return NON_DETERMINISTIC_FIELD_NAMES if boundary == "provider" else frozenset()


def is_non_deterministic_header(name: str) -> bool:
    """Whether a response header (lower-case ``name``) changes from run to run."""
    return (
        name in HTTP_RESPONSE_HEADERS
        or name.startswith("x-envoy-")
        or name.endswith(("request-id", "requestid"))
        or ("ratelimit" in name and ("remaining" in name or "reset" in name))
    )


def deterministic_event(boundary: str, event: dict[str, Any]) -> dict[str, Any]:
    """An event row without the fields of it that change from run to run (a copy where
    something is left out; the row itself when nothing is). A provider event is returned as
    it is: its ``timestamp`` fields are skipped by name where it is compared or hashed."""
    if boundary != "http":
        return event
    kind = event.get("type")
    if kind == "http_response":
        headers = event.get("headers")
        if isinstance(headers, dict) and any(map(is_non_deterministic_header, headers)):
            kept = {k: v for k, v in headers.items() if not is_non_deterministic_header(k)}
            return {**event, "headers": kept}
        return event
    key = "data" if kind == "sse" else "body" if kind == "http_body" else None
    if key is None or not isinstance(event.get(key), dict):
        return event
    stripped = _without_identity(event[key])
    return event if stripped is event[key] else {**event, key: stripped}


def _without_identity(value: dict[str, Any]) -> dict[str, Any]:
    """A response object without its per-run identity (nor that of its top-level
    ``message`` / ``response`` object); ``value`` itself when it has none."""
    changed: dict[str, Any] = {}
    for name in _OBJECTS_WITH_IDENTITY:
        inner = value.get(name)
        if isinstance(inner, dict):
            stripped = _without_identity_fields(inner)
            if stripped is not inner:
                changed[name] = stripped
    result = _without_identity_fields(value)
    if not changed:
        return result
    return {**result, **changed}


def _without_identity_fields(value: dict[str, Any]) -> dict[str, Any]:
    if not any(field in value for field in HTTP_BODY_IDENTITY_FIELDS):
        return value
    return {k: v for k, v in value.items() if k not in HTTP_BODY_IDENTITY_FIELDS}
