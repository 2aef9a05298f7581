"""What of a call is compared, and its digest: the SHA-256 of its request, its events and how
it ended, without what changes from run to run.

**The fields that change from run to run** are left out of every comparison: replay's, the
transcript hash's and ``diff``'s, so two recordings of the same session made on different
runs match.

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

**The digest** of a call is taken over lines (see :func:`call_rows`): ``R <request>``, then
``E <event_index> <event>`` for each event and ``X <ending>``, each value as canonical JSON
(keys sorted, compact) of its *deterministic part*: without the fields above, without entries
holding null (an absent key equals null), with ``-0.0`` as ``0.0``. Two calls have the same
digest exactly when ``recordings diff`` finds nothing between them; the transcript hash
(:mod:`openprogram.store.hashing`) combines the digests of a recording's calls.

The digest is computed in three places that must agree: the writer, as a call's rows are
written (:class:`CallDigest`, stored in the ``call_end`` row so that ``list`` need not parse
the events); :func:`rewrite_recording <openprogram.recording.rewriting.rewrite_recording>`;
and from a parsed call (:func:`call_digest`). :class:`DeterministicParts` keeps the
deterministic part of each list item it has seen, by identity, so the items that requests of
one session share (the reader rebuilds them shared) are walked once, not once per call.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.recording.shared_lists import shared_section

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, RecordedError
    from openprogram.recording.request_delta import StoredRequest

__all__ = [
    "HTTP_BODY_IDENTITY_FIELDS",
    "HTTP_RESPONSE_HEADERS",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "TRANSCRIPT_HASH_VERSION",
    "CallDigest",
    "DeterministicParts",
    "call_digest",
    "call_ending",
    "call_rows",
    "canonical_part",
    "deterministic_event",
    "deterministic_part",
    "ending_text",
    "event_text",
    "is_non_deterministic_header",
    "request_ignore_fields",
    "request_text",
    "request_text_with_parts",
    "rows_seal",
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


TRANSCRIPT_HASH_VERSION = 3
"""Part of the hashed text: bumped only if what is hashed changes meaning. Version 1 hashed
the calls in recorded order; version 2 hashes them in any order; version 3 hashes the tape
entries too (a call's digest is the same as in version 2)."""


def deterministic_part(value: Any, names: frozenset[str] = NON_DETERMINISTIC_FIELD_NAMES) -> Any:
    """``value`` without its fields called one of ``names`` (at any depth) and its
    null-valued entries, with ``-0.0`` as ``0.0`` (the comparison finds them equal)."""
    if isinstance(value, dict):
        return {
            key: deterministic_part(item, names)
            for key, item in value.items()
            if item is not None and key not in names
        }
    if isinstance(value, list):
        return [deterministic_part(item, names) for item in value]
    if type(value) is float and value == 0.0:
        return 0.0
    return value


def canonical_part(value: Any, names: frozenset[str] = NON_DETERMINISTIC_FIELD_NAMES) -> bytes:
    """Canonical JSON of the deterministic part of a value read from a recording.

    Values parsed from JSON need no checking, and most rows (text deltas) hold neither a
    null, a timestamp nor a negative zero: serialize first, and strip only when the bytes
    say there may be something to strip.
    """
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"null" in encoded or b"-0.0" in encoded or any(name.encode() in encoded for name in names):
        encoded = orjson.dumps(deterministic_part(value, names), option=orjson.OPT_SORT_KEYS)
    return encoded


class DeterministicParts:
    """:func:`deterministic_part` of requests, each shared list item walked once.

    The items of the lists a request may share with an earlier one (``context.messages``,
    an HTTP body's ``messages``, …) are kept by identity with their deterministic part; an
    item is never changed once read or written, so the same object has the same part.
    """

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, Any]] = {}

    def request_text(self, boundary: str, request: dict[str, Any]) -> bytes:
        """:func:`request_text` of a request of ``boundary`` (its sections)."""
        names = request_ignore_fields(boundary)
        holder = request.get(shared_section(boundary))
        parts: dict[str, list[Any]] = {}
        if type(holder) is dict:
            for key, items in holder.items():
                if type(items) is list:
                    parts[key] = [self.item(item, names) for item in items]
        return request_text_with_parts(boundary, request, parts)

    def item(self, item: Any, names: frozenset[str]) -> Any:
        """The deterministic part of one list item (scalars are their own)."""
        if type(item) is not dict and type(item) is not list:
            return deterministic_part(item, names)
        known = self._items.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        part = deterministic_part(item, names)
        self._items[id(item)] = (item, part)
        return part


def request_text_with_parts(
    boundary: str, request: dict[str, Any], parts: dict[str, list[Any]]
) -> bytes:
    """:func:`request_text` of a request whose shared lists (by key, in its shared section)
    have the deterministic parts ``parts`` already (each item's)."""
    names = request_ignore_fields(boundary)
    section = shared_section(boundary)
    holder = request.get(section)
    value = request
    if parts and type(holder) is dict:
        value = {**request, section: {k: v for k, v in holder.items() if k not in parts}}
    if boundary != "provider":
        value = {"boundary": boundary, **value}
    part = deterministic_part(value, names)
    if parts and type(holder) is dict:
        kept = part[section]
        for key, items in parts.items():
            if key not in names:
                kept[key] = items
    return orjson.dumps(part, option=orjson.OPT_SORT_KEYS)


def request_text(call: RecordedCall, parts: DeterministicParts | None = None) -> bytes:
    """The canonical JSON of the deterministic part of ``call``'s request (an HTTP call's
    with ``"boundary": "http"``): two calls made the same request exactly when these bytes
    are equal."""
    return (parts or DeterministicParts()).request_text(call.boundary, call.request)


def event_text(boundary: str, event: dict[str, Any]) -> bytes:
    """The canonical JSON of the deterministic part of one event of a call at ``boundary``."""
    if boundary == "provider":
        return canonical_part(event)
    return canonical_part(deterministic_event(boundary, event), request_ignore_fields(boundary))


def call_ending(outcome: str | None, error: RecordedError | None) -> dict[str, Any]:
    """How a call ended, as the digest and ``diff`` compare it: its ``outcome`` (None: cut
    short) and, for an error, the error's type and message."""
    ending: dict[str, Any] = {"outcome": outcome}
    if error is not None:
        ending["error"] = {"type": error.type, "message": error.message}
    return ending


def ending_text(outcome: str | None, error: RecordedError | None) -> bytes:
    """The canonical JSON of :func:`call_ending`."""
    return canonical_part(call_ending(outcome, error))


def call_rows(call: RecordedCall, parts: DeterministicParts | None = None) -> list[bytes]:
    """The lines a call's digest is computed over: ``R <request>`` (see
    :func:`request_text`), ``E <event_index> <event>`` for each event and ``X <ending>``, each
    value as canonical JSON of its deterministic part. The call's index is not among them."""
    rows = [b"R " + request_text(call, parts)]
    boundary = call.boundary
    for event_index, event in enumerate(call.event_rows):
        rows.append(b"E %d %s" % (event_index, event_text(boundary, event)))
    rows.append(b"X " + ending_text(call.outcome, call.error))
    return rows


def call_digest(call: RecordedCall, parts: DeterministicParts | None = None) -> str:
    """The SHA-256 of ``call``'s request, events and ending (:func:`call_rows`), as 64 hex
    digits: equal for two calls exactly when ``diff`` finds nothing between them."""
    digest = hashlib.sha256()
    for row in call_rows(call, parts):
        digest.update(row)
        digest.update(b"\n")
    return digest.hexdigest()


class CallDigest:
    """:func:`call_digest` of a call being written, fed its request, then each event as it
    is written, then its ending; also the SHA-256 of the exact lines written for it (the
    ``rows`` a reader checks the stored digest against)."""

    __slots__ = ("_boundary", "_call", "_events", "_rows")

    def __init__(self, boundary: str, request_text: bytes, request_line: bytes) -> None:
        self._boundary = boundary
        self._call = hashlib.sha256(b"R " + request_text + b"\n")
        self._rows = hashlib.sha256(request_line)
        self._events = 0

    @classmethod
    def of_stored(cls, stored: StoredRequest, line: bytes) -> CallDigest:
        """The digest of a call whose request row, ``line``, stores ``stored``."""
        parts = {key: kept.parts for key, kept in stored.lists.items()}
        text = request_text_with_parts(stored.boundary, stored.sections, parts)
        return cls(stored.boundary, text, line)

    def add_event(self, event: dict[str, Any], line: bytes) -> None:
        """The call's next event (as written) and its line."""
        self._call.update(b"E %d %s\n" % (self._events, event_text(self._boundary, event)))
        self._rows.update(line)
        self._events += 1

    def finish(self, outcome: str, error: RecordedError | None) -> dict[str, Any]:
        """The ``digest`` field of the call's ``call_end``."""
        ending = ending_text(outcome, error)
        self._call.update(b"X " + ending + b"\n")
        call = self._call.hexdigest()
        return {
            "version": TRANSCRIPT_HASH_VERSION,
            "call": call,
            "rows": rows_seal(self._rows, self._events, ending, call),
        }


def rows_seal(rows: Any, event_count: int, ending: bytes, call: str) -> str:
    """The ``rows`` digest of a call: the SHA-256 of the lines written for it (``rows``, a
    ``hashlib`` hash fed them), then its event count, its ending and its call digest — so a
    ``call_end`` whose count, outcome or digest was changed by hand no longer matches."""
    rows.update(b"X %d %s\n%s" % (event_count, ending, call.encode()))
    return str(rows.hexdigest())
