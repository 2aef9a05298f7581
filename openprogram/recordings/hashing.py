"""Canonical JSON and the transcript hash: the same behaviour gives the same hash, forever.

Canonical JSON is compact UTF-8 with the keys of every object sorted. It refuses what JSON
cannot carry faithfully — NaN and infinities (orjson alone would write them as ``null``),
non-string keys, integers beyond 64 bits, and any non-JSON type (tuples, sets, bytes,
dates) — with :class:`CanonicalJSONError` naming where the value sits.

The *transcript hash* is a SHA-256 over a recording's calls — each request, each event and
how the call ended — leaving out the header and the non-deterministic fields
(:mod:`openprogram.recording.nondeterministic`: ``timestamp`` at any depth in a provider
call; in an HTTP call the response headers and the per-run ids a server sets anew each
time). Entries whose value is ``null`` are left out too, since replay treats an absent key
and an explicit null as equal: two recordings have the same hash exactly when
``openprogram recordings diff`` finds no difference between them. Two recordings of the same
session made at different times, on different machines, hash alike; any change to a request
or an event changes the hash. An HTTP call's request line also names its boundary; a
provider call's lines are as they always were, so a provider recording's hash never changed.
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

TRANSCRIPT_HASH_VERSION = 1
"""Part of the hashed text: bumped only if what is hashed changes meaning."""
SHORT_HASH_LENGTH = 12
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
    null-valued entries."""
    if isinstance(value, dict):
        return {
            key: deterministic_part(item, names)
            for key, item in value.items()
            if item is not None and key not in names
        }
    if isinstance(value, list):
        return [deterministic_part(item, names) for item in value]
    return value


def _canonical_part(value: Any, names: frozenset[str] = NON_DETERMINISTIC_FIELD_NAMES) -> bytes:
    """Canonical JSON of the deterministic part of a value read from a recording.

    Values parsed from JSON need no checking, and most rows (text deltas) hold neither a
    null nor a timestamp: serialize first, and strip only when the bytes say there is
    something to strip.
    """
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    if b"null" in encoded or any(name.encode() in encoded for name in names):
        encoded = orjson.dumps(deterministic_part(value, names), option=orjson.OPT_SORT_KEYS)
    return encoded


def transcript_rows(calls: Iterable[RecordedCall]) -> Iterator[bytes]:
    """The lines the transcript hash is computed over, in order: a version line, then for
    each call ``R <call> <request>`` (an HTTP call's request with ``"boundary": "http"``),
    ``E <call> <event_index> <event>`` for each event and ``X <call> <ending>``, each value as
    canonical JSON of its deterministic part."""
    yield b"openprogram-transcript-%d" % TRANSCRIPT_HASH_VERSION
    for call in calls:
        index = call.call_index
        if call.boundary == "provider":
            yield b"R %d %s" % (index, _canonical_part(call.request))
            for event_index, event in enumerate(call.event_rows):
                yield b"E %d %d %s" % (index, event_index, _canonical_part(event))
        else:
            names = request_ignore_fields(call.boundary)
            request = {"boundary": call.boundary, **call.request}
            yield b"R %d %s" % (index, _canonical_part(request, names))
            for event_index, event in enumerate(call.event_rows):
                row = deterministic_event(call.boundary, event)
                yield b"E %d %d %s" % (index, event_index, _canonical_part(row, names))
        ending: dict[str, Any] = {"outcome": call.outcome}
        if call.error is not None:
            ending["error"] = {"type": call.error.type, "message": call.error.message}
        yield b"X %d %s" % (index, _canonical_part(ending))


def transcript_hash(recording: Recording) -> str:
    """The SHA-256 transcript hash of ``recording``, as 64 hex digits."""
    digest = hashlib.sha256()
    for row in transcript_rows(recording.calls):
        digest.update(row)
        digest.update(b"\n")
    return digest.hexdigest()


def short_hash(full: str) -> str:
    """The first characters of a transcript hash, for tables."""
    return full[:SHORT_HASH_LENGTH]
