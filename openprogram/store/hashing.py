"""Canonical JSON and the transcript hash: the same behaviour gives the same hash, forever.

Canonical JSON is compact UTF-8 with the keys of every object sorted. It refuses what JSON
cannot carry faithfully — NaN and infinities (orjson alone would write them as ``null``),
non-string keys, integers beyond 64 bits, and any non-JSON type (tuples, sets, bytes,
dates) — with :class:`CanonicalJSONError` naming where the value sits.

The *transcript hash* is a SHA-256 over a recording's calls — each request, each event and how the
call ended — in any order: each call has its own digest, and the hash is taken over the digests
sorted, so two runs of a concurrent session whose calls interleaved differently hash alike. It
leaves out the header and the non-deterministic fields (:mod:`openprogram.recording.call_digest`:
``timestamp`` at any depth in a provider call; in an HTTP call the response headers and the per-run
ids a server sets anew each time, and each id a server made up compared by where it comes from,
inside a later request's text too). Entries whose value is ``null`` are left out too, since replay
treats an absent key and an explicit null as equal: two recordings have the same hash exactly when
``openprogram recordings diff`` finds no difference between them. Two recordings of the same session
made at different times, on different machines, hash alike; any change to a request or an event
changes the hash. An HTTP call's request line also names its boundary. The hash is versioned
(:data:`TRANSCRIPT_HASH_VERSION`): a hash printed by an earlier version (1 hashed the calls in
recorded order, 2 no tape entries) differs from the same recording's hash today.

The recording's tape entries (taped functions, agent tools, the clock and randomness) are
hashed as calls are, each with a digest of its own in the same sorted list — so each tape
counts as a multiset of (arguments, result) — leaving out the results marked
non-deterministic (the clock, random draws: ``"nondeterministic": true``). Two recordings of
one session made a day apart therefore hash alike although the clock read differently."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.errors import CanonicalJSONError
from openprogram.recording.call_digest import (
    TRANSCRIPT_HASH_VERSION,
    DeterministicParts,
    canonical_part,
    session_identities,
)
from openprogram.recording.difference import join_field_path
from openprogram.recording.format import TapeEntry
from openprogram.recording.minted_ids import linked_digests
from openprogram.recording.tape_rows import comparable_entry

if TYPE_CHECKING:
    from openprogram.recording.format import Recording

__all__ = [
    "SHORT_HASH_LENGTH",
    "canonical_json",
    "hash_of_digests",
    "recording_digests",
    "short_hash",
    "tape_entry_digest",
    "transcript_hash",
]

SHORT_HASH_LENGTH = 12
_NO_NAMES: frozenset[str] = frozenset()
_INT64 = range(-(2**63), 2**64)


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
    digest = hashlib.sha256(b"T ")
    digest.update(canonical_json(entry.tape))
    digest.update(b" ")
    digest.update(canonical_part(comparable_entry(entry), _NO_NAMES))
    return digest.hexdigest()


def recording_digests(recording: Recording) -> list[str]:
    """The digests the transcript hash is taken over: each call's and each tape entry's. The
    list items its calls' requests share are walked once (see
    :class:`~openprogram.recording.call_digest.DeterministicParts`)."""
    identities, _ = session_identities(recording.calls, DeterministicParts())
    digests = linked_digests(identities)
    digests.extend(tape_entry_digest(entry) for entry in recording.tapes)
    return digests


def transcript_hash(recording: Recording) -> str:
    """The SHA-256 transcript hash of ``recording``, as 64 hex digits."""
    return hash_of_digests(recording_digests(recording))


def short_hash(full: str) -> str:
    """The first characters of a transcript hash, for tables."""
    return full[:SHORT_HASH_LENGTH]
