r"""What of a call is compared, and its digest: the SHA-256 of its request, its events and how
it ended, without what changes from run to run.

**The fields that change from run to run** are left out of every comparison: replay's, the
transcript hash's and ``diff``'s, so two recordings of the same session made on different
runs match.

**Provider calls.** The field ``timestamp``, at any depth (the creation time of each message):
:data:`~openprogram.recording.difference.NON_DETERMINISTIC_FIELD_NAMES`.

**HTTP calls.** In a request, nothing is left out but the port of a loopback server's URL
(:func:`with_loopback_port_left_out`): the stored request headers are only those
that change what the request means, and the SDKs put their per-run values (idempotency keys,
retry counts, user agents, trace ids) in headers that are not stored. In a response:

* of the ``http_response`` headers, only those that change what the client does are
  compared — :data:`COMPARED_RESPONSE_HEADERS` (``content-type``, ``content-encoding``,
  ``content-disposition``, ``location``, ``www-authenticate``) and those the vendor APIs'
  clients act on (``x-should-retry``, which the OpenAI and Anthropic SDKs retry on). Every
  other header — ``date``, request and trace ids of any server or gateway, rate-limit
  counters, processing times, ``retry-after`` — is kept in the recording and replayed, and
  left out of the comparison;
* in an ``http_body`` event's ``body`` and an ``sse`` event's ``data``, the times and the
  build of the object the response is about, as each vendor API names them (``created``,
  ``created_at``, ``completed_at``, Gemini's ``createTime``, ``system_fingerprint``), at the
  top level (an OpenAI chat completion or chunk, an Anthropic message, an OpenAI response, a
  Gemini response) and in the top-level objects the APIs wrap one in (the Anthropic
  ``message_start`` event's ``message``, the OpenAI Responses stream events' ``response``);
  and how long the run took (Bedrock Converse's ``metrics.latencyMs``);
* of an ``eventstream`` event (AWS's binary event stream), its ``base64`` bytes when its
  headers and payload are decoded beside them, and the random padding of its payload
  (Bedrock's ``p``);
* of an ``sse``, ``sse_rest`` or ``http_body`` event, its ``raw`` text (the bytes as they
  came, beside the parsed value): the same content written with other white space compares
  equal.

**Ids** in an HTTP call — the values of keys named ``id``, ``…_id`` or ``…Id`` at any depth
of its request and of its response's JSON: the response's own id, the Responses stream's
``item_id``\ s, tool-call ids, Gemini's ``responseId`` — are compared up to consistent
renaming (:mod:`~openprogram.recording.minted_ids`): within a call each is named by the order
it is first seen in, and across calls the digest of a call whose request carries ids links
each to the call whose response made it up. An id an earlier call's response made up is
renamed inside a request's text too, where a session copied it (so what a call's digest
hashes depends on the ids the calls before it made up: :class:`~openprogram.recording.
minted_ids.MintedIds`, given by whoever walks the calls in order). So two runs against a
server that mints fresh ids compare equal, and a session that answers a tool call with
another call's result, or names another response, does not.

What is particular to one vendor API — its per-run fields, the objects holding them, its
padding and timings, the headers its clients act on — is that API's module's, handed down
to the core as data (:class:`~openprogram.recording.wire_rules.WireRules`).

**The digest** of a call is taken over lines (see :func:`call_rows`): ``R <request>``, then
``E <event_index> <event>`` for each event and ``X <ending>``, each value as canonical JSON
(keys sorted, compact) of its *deterministic part*: without the fields above, without entries
holding null (an absent key equals null), with ``-0.0`` as ``0.0``. Two calls have the same
digest exactly when ``recordings diff`` finds nothing between them; the transcript hash
(:mod:`openprogram.store.hashing`) combines the digests of a recording's calls.

The digest is computed in three places that must agree: the writer, as a call's rows are
written (:class:`CallDigest`, stored in the ``call_end`` row so that ``list`` need not parse
the events; with ``minted_before``, how many ids the calls before it had made up, as far as
the writer knew); :func:`rewrite_recording <openprogram.recording.rewriting.rewrite_recording>`;
and from a parsed call (:func:`call_digest`; a recording's calls in order:
:func:`session_identities`). :class:`DeterministicParts` keeps the
deterministic part of each list item it has seen, by identity, so the items that requests of
one session share (the reader rebuilds them shared) are walked once, not once per call."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.recording.difference import NON_DETERMINISTIC_FIELD_NAMES
from openprogram.recording.minted_ids import CallIds, LinkedCall, MintedIds, may_hold_ids
from openprogram.recording.shared_lists import shared_section
from openprogram.recording.url_comparison import without_loopback_port
from openprogram.recording.wire_rules import WireRules, wire_rules

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, RecordedError
    from openprogram.recording.request_delta import StoredRequest

__all__ = [
    "COMPARED_RESPONSE_HEADERS",
    "TRANSCRIPT_HASH_VERSION",
    "CallDigest",
    "DeterministicParts",
    "call_digest",
    "call_ending",
    "call_identity",
    "call_rows",
    "canonical_part",
    "comparable_events",
    "comparable_request",
    "deterministic_event",
    "deterministic_part",
    "ending_text",
    "event_text",
    "is_non_deterministic_header",
    "request_ignore_fields",
    "request_text",
    "request_text_with_parts",
    "rows_seal",
    "session_identities",
    "with_loopback_port_left_out",
]

COMPARED_RESPONSE_HEADERS: frozenset[str] = frozenset(
    {"content-type", "content-encoding", "content-disposition", "location", "www-authenticate"}
)
"""The response headers (lower-case) compared and hashed: those that change what any client
does with the response, besides those of the wire rules. The others are stored and
replayed, not compared."""


def request_ignore_fields(boundary: str) -> frozenset[str]:
    """The fields left out when a request of ``boundary`` is compared."""
    return NON_DETERMINISTIC_FIELD_NAMES if boundary == "provider" else frozenset()


def is_non_deterministic_header(name: str) -> bool:
    """Whether a response header (lower-case ``name``) is left out of the comparison: any
    header but the :data:`COMPARED_RESPONSE_HEADERS` and those of the wire rules."""
    return (
        name not in COMPARED_RESPONSE_HEADERS and name not in wire_rules().compared_response_headers
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
    if kind in ("sse", "sse_rest", "http_body") and "raw" in event:
        # The parsed value is compared; the text it came as is served, not compared.
        event = {k: v for k, v in event.items() if k != "raw"}
    rules = wire_rules()
    if kind == "eventstream" and ("data" in event or "headers" in event):
        # The decoded message is compared; its bytes differ by the padding AWS adds.
        event = {k: v for k, v in event.items() if k != "base64"}
        data = event.get("data")
        padding = rules.per_run_padding
        if isinstance(data, dict) and not padding.isdisjoint(data):
            event["data"] = {k: v for k, v in data.items() if k not in padding}
    key = "body" if kind == "http_body" else "data" if kind in ("sse", "eventstream") else None
    if key is None or not isinstance(event.get(key), dict):
        return event
    stripped = _without_identity(event[key], rules)
    return event if stripped is event[key] else {**event, key: stripped}


def _without_identity(value: dict[str, Any], rules: WireRules) -> dict[str, Any]:
    """A response object without its per-run identity (nor that of its top-level objects
    that have one, nor its timings); ``value`` itself when it has none."""
    changed: dict[str, Any] = {}
    for holder, timing in rules.per_run_timings:
        timings = changed.get(holder, value.get(holder))
        if isinstance(timings, dict) and timing in timings:
            changed[holder] = {k: v for k, v in timings.items() if k != timing}
    for name in rules.per_run_objects:
        inner = value.get(name)
        if isinstance(inner, dict):
            stripped = _without_identity_fields(inner, rules.per_run_fields)
            if stripped is not inner:
                changed[name] = stripped
    result = _without_identity_fields(value, rules.per_run_fields)
    if not changed:
        return result
    return {**result, **changed}


def _without_identity_fields(value: dict[str, Any], fields: frozenset[str]) -> dict[str, Any]:
    if fields.isdisjoint(value):
        return value
    return {k: v for k, v in value.items() if k not in fields}


TRANSCRIPT_HASH_VERSION = 4
"""Part of the hashed text: bumped only if what is hashed changes meaning. Version 1 hashed
the calls in recorded order; version 2 hashes them in any order; version 3 hashes the tape
entries too (a call's digest is the same as in version 2); version 4 compares an HTTP
response's headers by an allowlist and an HTTP call's ids up to consistent renaming. Renaming
an id an earlier response made up inside a request's text too, added later, changed the hash
only of the recordings whose requests repeat one in their text (two runs of them never hashed
alike before), so the version stayed, and every other recording's hash with it."""


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
    say there may be something to strip."""
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"null" in encoded or b"-0.0" in encoded or any(name.encode() in encoded for name in names):
        encoded = orjson.dumps(deterministic_part(value, names), option=orjson.OPT_SORT_KEYS)
    return encoded


class DeterministicParts:
    """:func:`deterministic_part` of requests, each shared list item walked once.

    The items of the lists a request may share with an earlier one (``context.messages``,
    an HTTP body's ``messages``, …) are kept by identity with their deterministic part; an
    item is never changed once read or written, so the same object has the same part."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: dict[int, tuple[Any, Any]] = {}

    def request_text(
        self, boundary: str, request: dict[str, Any], ids: CallIds | None = None
    ) -> bytes:
        """:func:`request_text` of a request of ``boundary`` (its sections), its ids named in
        ``ids`` (an HTTP request's)."""
        names = request_ignore_fields(boundary)
        holder = request.get(shared_section(boundary))
        parts: dict[str, list[Any]] = {}
        if type(holder) is dict:
            for key, items in holder.items():
                if type(items) is list:
                    parts[key] = [self.item(item, names) for item in items]
        return request_text_with_parts(boundary, request, parts, ids)

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
    boundary: str, request: dict[str, Any], parts: dict[str, list[Any]], ids: CallIds | None = None
) -> bytes:
    """:func:`request_text` of a request whose shared lists (by key, in its shared section)
    have the deterministic parts ``parts`` already (each item's); an HTTP request's ids are
    named in ``ids`` (a fresh :class:`CallIds` when None)."""
    names = request_ignore_fields(boundary)
    section = shared_section(boundary)
    holder = request.get(section)
    value = request
    if parts and type(holder) is dict:
        value = {**request, section: {k: v for k, v in holder.items() if k not in parts}}
    if boundary != "provider":
        value = {"boundary": boundary, **value}
    if boundary == "http":
        value = with_loopback_port_left_out(value)
    part = deterministic_part(value, names)
    if parts and type(holder) is dict:
        kept = part[section]
        for key, items in parts.items():
            if key not in names:
                kept[key] = items
    text = orjson.dumps(part, option=orjson.OPT_SORT_KEYS)
    if boundary == "http":
        ids = ids or CallIds()
        if may_hold_ids(text) or ids.after_minted:
            text = orjson.dumps(ids.request(part), option=orjson.OPT_SORT_KEYS)
    return text


def with_loopback_port_left_out(request: dict[str, Any]) -> dict[str, Any]:
    """An HTTP request with its URL's port left out when its host is a loopback one (a
    local server restarted on another port serves the same session:
    :mod:`~openprogram.recording.url_comparison`); a copy when that changes it."""
    url = request.get("url")
    if type(url) is not str:
        return request
    compared = without_loopback_port(url)
    return request if compared is url else {**request, "url": compared}


def request_text(
    call: RecordedCall, parts: DeterministicParts | None = None, ids: CallIds | None = None
) -> bytes:
    """The canonical JSON of the deterministic part of ``call``'s request (an HTTP call's
    with ``"boundary": "http"`` and its ids renamed): two calls made the same request exactly
    when these bytes are equal (and their ids link to the same calls)."""
    return (parts or DeterministicParts()).request_text(call.boundary, call.request, ids)


def event_text(boundary: str, event: dict[str, Any], ids: CallIds | None = None) -> bytes:
    """The canonical JSON of the deterministic part of one event of a call at ``boundary``
    (an HTTP event's ids named in ``ids``, the call's, fed its request first)."""
    if boundary == "provider":
        return canonical_part(event)
    kept = deterministic_event(boundary, event)
    if ids is None:
        return canonical_part(kept, request_ignore_fields(boundary))
    encoded = orjson.dumps(kept, option=orjson.OPT_SORT_KEYS)
    if may_hold_ids(encoded):  # one walk: nulls, negative zeros and ids at once
        return orjson.dumps(ids.event_part(kept), option=orjson.OPT_SORT_KEYS)
    if b"null" in encoded or b"-0.0" in encoded:
        return orjson.dumps(deterministic_part(kept, frozenset()), option=orjson.OPT_SORT_KEYS)
    return encoded


def comparable_request(call: RecordedCall, session: MintedIds | None = None) -> tuple[Any, CallIds]:
    """What is compared of ``call``'s request (its deterministic part, an HTTP call's ids
    renamed, the boundary named) and the names given its ids, with where each was seen.
    ``session``: the ids its recording's responses made up (:func:`session_identities`),
    those of the calls before it renamed inside the request's text too."""
    names = request_ignore_fields(call.boundary)
    value: Any = call.request
    if call.boundary != "provider":
        value = {"boundary": call.boundary, **value}
    ids = CallIds(session, call.call_index)
    part = deterministic_part(value, names)
    if call.boundary == "http":
        part = ids.request(part, "")
    return part, ids


def comparable_events(call: RecordedCall, session: MintedIds | None = None) -> list[Any]:
    """What is compared of each of ``call``'s events: its deterministic part, an HTTP
    event's ids renamed (named after its request's, :func:`comparable_request`)."""
    names = request_ignore_fields(call.boundary)
    if call.boundary != "http":
        return [
            deterministic_part(deterministic_event(call.boundary, e), names)
            for e in call.event_rows
        ]
    ids = comparable_request(call, session)[1]
    return [ids.event_part(deterministic_event(call.boundary, e)) for e in call.event_rows]


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


def call_rows(
    call: RecordedCall, parts: DeterministicParts | None = None, ids: CallIds | None = None
) -> list[bytes]:
    """The lines a call's digest is computed over: ``R <request>`` (see
    :func:`request_text`), ``E <event_index> <event>`` for each event and ``X <ending>``, each
    value as canonical JSON of its deterministic part, an HTTP call's ids named in ``ids``.
    The call's index is not among them."""
    if ids is None and call.boundary == "http":
        ids = CallIds()
    rows = [b"R " + request_text(call, parts, ids)]
    boundary = call.boundary
    for event_index, event in enumerate(call.event_rows):
        rows.append(b"E %d %s" % (event_index, event_text(boundary, event, ids)))
    rows.append(b"X " + ending_text(call.outcome, call.error))
    return rows


def call_identity(
    call: RecordedCall, parts: DeterministicParts | None = None, session: MintedIds | None = None
) -> LinkedCall:
    """``call``'s digest (:func:`call_digest`) with what it keeps of its ids, as the transcript hash
    links calls (:func:`~openprogram.recording.minted_ids.linked_digests`). ``session``: the ids the
    responses of the calls before it made up (and those of its own are added): give one to every
    call of a recording, in order (:func:`session_identities`)."""
    ids = CallIds(session, call.call_index) if call.boundary == "http" else None
    digest = hashlib.sha256()
    rows = call_rows(call, parts, ids)
    for row in rows:
        digest.update(row)
        digest.update(b"\n")
    return LinkedCall(digest.hexdigest(), None if ids is None else ids.digest_field(rows[0]))


def call_digest(call: RecordedCall, parts: DeterministicParts | None = None) -> str:
    """The SHA-256 of ``call``'s request, events and ending (:func:`call_rows`), as 64 hex
    digits: equal for two calls exactly when ``diff`` finds nothing between them, but for
    which earlier calls their ids link to. Of a call alone: an id an earlier call made up is
    renamed inside its text only by :func:`session_identities`."""
    return call_identity(call, parts).digest


def session_identities(
    calls: Iterable[RecordedCall], parts: DeterministicParts | None = None
) -> tuple[list[LinkedCall], MintedIds]:
    """:func:`call_identity` of each of a recording's ``calls``, in call order, and the ids
    their responses made up (each with the first call that did), for :func:`comparable_request`
    and :func:`comparable_events` of any of them."""
    session = MintedIds()
    parts = parts or DeterministicParts()
    return [call_identity(call, parts, session) for call in calls], session


class CallDigest:
    """:func:`call_digest` of a call being written, fed its request, then each event as it
    is written, then its ending; also the SHA-256 of the exact lines written for it (the
    ``rows`` a reader checks the stored digest against)."""

    __slots__ = ("_boundary", "_call", "_events", "_ids", "_minted_before", "_request", "_rows")

    def __init__(
        self,
        boundary: str,
        request_text: bytes,
        request_line: bytes,
        ids: CallIds | None,
        minted_before: int = 0,
    ) -> None:
        self._boundary = boundary
        self._request = b"R " + request_text
        self._call = hashlib.sha256(self._request + b"\n")
        self._rows = hashlib.sha256(request_line)
        self._events = 0
        self._ids = ids
        self._minted_before = minted_before

    @classmethod
    def of_stored(
        cls,
        stored: StoredRequest,
        line: bytes,
        session: MintedIds | None = None,
        call_index: int = 0,
    ) -> CallDigest:
        """The digest of call ``call_index``, whose request row, ``line``, stores
        ``stored``; ``session``: the ids the responses of the file's calls made up, as far
        as the caller knows them (its own are added as its events are)."""
        parts = {key: kept.parts for key, kept in stored.lists.items()}
        ids = CallIds(session, call_index) if stored.boundary == "http" else None
        text = request_text_with_parts(stored.boundary, stored.sections, parts, ids)
        return cls(stored.boundary, text, line, ids, len(session) if session else 0)

    def add_event(self, event: dict[str, Any], line: bytes) -> None:
        """The call's next event (as written) and its line."""
        text = event_text(self._boundary, event, self._ids)
        self._call.update(b"E %d %s\n" % (self._events, text))
        self._rows.update(line)
        self._events += 1

    def finish(self, outcome: str, error: RecordedError | None) -> dict[str, Any]:
        """The ``digest`` field of the call's ``call_end`` (with ``ids`` when the call has
        any: what the transcript hash links calls by)."""
        ending = ending_text(outcome, error)
        self._call.update(b"X " + ending + b"\n")
        call = self._call.hexdigest()
        ids = None if self._ids is None else self._ids.digest_field(self._request)
        before = self._minted_before
        digest: dict[str, Any] = {
            "version": TRANSCRIPT_HASH_VERSION,
            "call": call,
            "rows": rows_seal(self._rows, self._events, ending, call, ids, before),
        }
        if ids is not None:
            digest["ids"] = ids
        if before:
            digest["minted_before"] = before
        return digest


def rows_seal(
    rows: Any,
    event_count: int,
    ending: bytes,
    call: str,
    ids: dict[str, Any] | None = None,
    minted_before: int = 0,
) -> str:
    """The ``rows`` digest of a call: the SHA-256 of the lines written for it (``rows``, a
    ``hashlib`` hash fed them), then its event count, its ending, its call digest, its
    ``ids`` and its ``minted_before`` — so a ``call_end`` whose count, outcome, digest or ids
    were changed by hand no longer matches."""
    rows.update(b"X %d %s\n%s" % (event_count, ending, call.encode()))
    if ids is not None:
        rows.update(b"\n" + orjson.dumps(ids, option=orjson.OPT_SORT_KEYS))
    if minted_before:
        rows.update(b"\nM %d" % minted_before)
    return str(rows.hexdigest())
