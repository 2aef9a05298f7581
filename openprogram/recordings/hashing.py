"""Canonical JSON and the transcript hash: the same behaviour gives the same hash, forever.

Canonical JSON is compact UTF-8 with the keys of every object sorted. It refuses what JSON
cannot carry faithfully — NaN and infinities (orjson alone would write them as ``null``),
non-string keys, integers beyond 64 bits, and any non-JSON type (tuples, sets, bytes,
dates) — with :class:`CanonicalJSONError` naming where the value sits.

The *transcript hash* is a SHA-256 over a recording's calls — each request, each event and
how the call ended — in any order: each call has its own digest, and the hash is taken over
the digests sorted, so two runs of a concurrent session whose calls interleaved differently
hash alike. It leaves out the header and the non-deterministic fields
(:mod:`openprogram.recording.nondeterministic`: ``timestamp`` at any depth in a provider
call; in an HTTP call the response headers and the per-run ids a server sets anew each
time). Entries whose value is ``null`` are left out too, since replay treats an absent key
and an explicit null as equal: two recordings have the same hash exactly when
``openprogram recordings diff`` finds no difference between them. Two recordings of the same
session made at different times, on different machines, hash alike; any change to a request
or an event changes the hash. An HTTP call's request line also names its boundary. The hash
is versioned (:data:`TRANSCRIPT_HASH_VERSION`): a hash printed by an earlier version (1
hashed the calls in recorded order, 2 no tape entries) differs from the same recording's hash
today.

The recording's tape entries (taped functions, agent tools, the clock and randomness) are
hashed as calls are, each with a digest of its own in the same sorted list — so each tape
counts as a multiset of (arguments, result) — leaving out the results marked
non-deterministic (the clock, random draws: ``"nondeterministic": true``). Two recordings of
one session made a day apart therefore hash alike although the clock read differently.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.errors import OpenProgramError
from openprogram.recording.difference import join_field_path
from openprogram.recording.nondeterministic import (
    NON_DETERMINISTIC_FIELD_NAMES,
    deterministic_event,
    request_ignore_fields,
)

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, Recording
    from openprogram.recording.tape_rows import TapeEntry

TRANSCRIPT_HASH_VERSION = 3
"""Part of the hashed text: bumped only if what is hashed changes meaning. Version 1 hashed
the calls in recorded order; version 2 hashes them in any order; version 3 hashes the tape
entries too."""
SHORT_HASH_LENGTH = 12
_NO_NAMES: frozenset[str] = frozenset()
_INT64 = range(-(2**63), 2**64)


class CanonicalJSONError(OpenProgramError, ValueError):
    """A value that canonical JSON cannot carry faithfully."""

    def __init__(self, field_path: str, problem: str) -> None:
        self.field_path = field_path
        self.problem = problem
        where = f" at {field_path}" if field_path else ""
        super().__init__(f"cannot write canonical JSON{where}: {problem}")


def canonical_json(value: Any) -> bytes:
    """``value`` as canonical JSON bytes; raises :class:`CanonicalJSONError`."""
    _check(value, "")
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _check(value: Any, path: str) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int):
        if type(value) is not int or value not in _INT64:
            raise CanonicalJSONError(path, f"integer {value} does not fit in 64 bits")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CanonicalJSONError(path, f"{value!r} is not a JSON number")
        return
    if type(value) is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise CanonicalJSONError(path, f"key {key!r} is not a string")
            _check(item, join_field_path(path, key))
        return
    if type(value) is list:
        for index, item in enumerate(value):
            _check(item, join_field_path(path, index))
        return
    raise CanonicalJSONError(path, f"a {type(value).__name__} is not a JSON value")


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


def _canonical_part(value: Any, names: frozenset[str] = NON_DETERMINISTIC_FIELD_NAMES) -> bytes:
    """Canonical JSON of the deterministic part of a value read from a recording.

    Values parsed from JSON need no checking, and most rows (text deltas) hold neither a
    null, a timestamp nor a negative zero: serialize first, and strip only when the bytes
    say there may be something to strip.
    """
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"null" in encoded or b"-0.0" in encoded or any(name.encode() in encoded for name in names):
        encoded = orjson.dumps(deterministic_part(value, names), option=orjson.OPT_SORT_KEYS)
    return encoded


def request_text(call: RecordedCall) -> bytes:
    """The canonical JSON of the deterministic part of ``call``'s request (an HTTP call's
    with ``"boundary": "http"``): two calls made the same request exactly when these bytes
    are equal."""
    if call.boundary == "provider":
        return _canonical_part(call.request)
    request = {"boundary": call.boundary, **call.request}
    return _canonical_part(request, request_ignore_fields(call.boundary))


def call_rows(call: RecordedCall) -> Iterator[bytes]:
    """The lines a call's digest is computed over: ``R <request>`` (see
    :func:`request_text`), ``E <event_index> <event>`` for each event and ``X <ending>``, each
    value as canonical JSON of its deterministic part. The call's index is not among them."""
    yield b"R " + request_text(call)
    if call.boundary == "provider":
        for event_index, event in enumerate(call.event_rows):
            yield b"E %d %s" % (event_index, _canonical_part(event))
    else:
        names = request_ignore_fields(call.boundary)
        for event_index, event in enumerate(call.event_rows):
            row = deterministic_event(call.boundary, event)
            yield b"E %d %s" % (event_index, _canonical_part(row, names))
    ending: dict[str, Any] = {"outcome": call.outcome}
    if call.error is not None:
        ending["error"] = {"type": call.error.type, "message": call.error.message}
    yield b"X " + _canonical_part(ending)


def call_digest(call: RecordedCall) -> str:
    """The SHA-256 of ``call``'s request, events and ending (:func:`call_rows`), as 64 hex
    digits: equal for two calls exactly when ``diff`` finds nothing between them."""
    digest = hashlib.sha256()
    for row in call_rows(call):
        digest.update(row)
        digest.update(b"\n")
    return digest.hexdigest()


def hash_of_digests(digests: Iterable[str]) -> str:
    """The transcript hash of a recording whose calls have these digests (in any order): the
    SHA-256 of a version line and the digests sorted, one a line."""
    digest = hashlib.sha256(b"openprogram-transcript-%d\n" % TRANSCRIPT_HASH_VERSION)
    for call in sorted(digests):
        digest.update(call.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def tape_entry_digest(entry: TapeEntry) -> str:
    """The SHA-256 of a tape entry's tape name and what of it is compared
    (:func:`~openprogram.recording.tape_rows.comparable_entry`: its arguments, and its result
    or error unless they are non-deterministic by nature), as 64 hex digits: equal for two
    entries exactly when ``diff`` finds nothing between them. The entry's index is not part
    of it, so a tape hashes as a multiset of its entries."""
    from openprogram.recording.tape_rows import comparable_entry

    digest = hashlib.sha256(b"T ")
    digest.update(canonical_json(entry.tape))
    digest.update(b" ")
    digest.update(_canonical_part(comparable_entry(entry), _NO_NAMES))
    return digest.hexdigest()


def recording_digests(recording: Recording) -> list[str]:
    """The digests the transcript hash is taken over: each call's and each tape entry's."""
    digests = [call_digest(call) for call in recording.calls]
    digests.extend(tape_entry_digest(entry) for entry in recording.tapes)
    return digests


def transcript_hash(recording: Recording) -> str:
    """The SHA-256 transcript hash of ``recording``, as 64 hex digits."""
    return hash_of_digests(recording_digests(recording))


def short_hash(full: str) -> str:
    """The first characters of a transcript hash, for tables."""
    return full[:SHORT_HASH_LENGTH]
