"""A recording's summary from the digests its writer stored, without parsing its events.

Every ``call_end`` a writer writes holds the call's digest and the SHA-256 of the call's
rows as written (``{"version", "call", "rows"}``: :class:`~openprogram.recording.call_digest.
CallDigest`). When each call's rows lie together — its request line, its event lines, then
its ``call_end`` — the bytes before the ``call_end`` can be hashed as they are, with the
call's ending and digest, and compared with ``rows``: equal, they are exactly the rows the
writer wrote and digested, so the transcript hash can be taken over the stored digests, and
only the header, the request rows (small: they store what a request adds), the
``call_end`` rows and the tape rows (whole lines between calls, hashed as the transcript hash
hashes them) are parsed. The cost of a summary is then the cost of reading the bytes
and hashing them.

:func:`summary_from_digests` returns None, and the caller parses the file with the strict
reader, at the first thing that is not so: a digest missing, of another hash version or not
matching the bytes, calls whose rows interleave (a concurrent session), a call cut short, a
blank line or a ``\\r\\n`` line end among a call's rows, anything the strict reader would
refuse.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import orjson

from openprogram.errors import RecordingFileError
from openprogram.json_nesting import exceeds_nesting_limit, json_text_may_exceed_nesting_limit
from openprogram.recording.call_digest import TRANSCRIPT_HASH_VERSION, ending_text, rows_seal
from openprogram.recording.format import OUTCOMES, RecordedError
from openprogram.recording.reader import RecordingParser
from openprogram.store.hashing import tape_entry_digest

__all__ = ["DigestedRecording", "summary_from_digests"]

_REQUEST = b'{"type":"request","call_index":%d,'
_TAPE = b'{"type":"tape",'
_CALL_END = b'\n{"type":"call_end","call_index":%d,'
_HEX = frozenset("0123456789abcdef")


class DigestedRecording:
    """What a summary needs of a recording read through its digests."""

    __slots__ = ("digests", "events", "header", "parser")

    def __init__(self, parser: RecordingParser, digests: list[str], events: int) -> None:
        self.parser = parser
        self.header: dict[str, Any] = parser.header or {}
        self.digests = digests
        self.events = events


def summary_from_digests(path: Path, data: bytes) -> DigestedRecording | None:
    """``data`` (the bytes of the recording at ``path``) read through its stored digests,
    or None when they cannot vouch for it (see the module's docstring)."""
    if not data.endswith(b"\n"):
        return None
    parser = RecordingParser(path)
    end = data.find(b"\n")
    try:
        header = orjson.loads(data[:end])
        if not isinstance(header, dict) or header.get("type") != "header":
            return None
        parser.add_header(1, header)
    except (orjson.JSONDecodeError, RecordingFileError):
        return None
    position = end + 1
    line = 2
    digests: list[str] = []
    events = 0
    while position < len(data):
        if data.startswith(_TAPE, position):  # a tape entry between calls
            after = data.find(b"\n", position) + 1
            if not _add_row(parser, line, data[position : after - 1]):
                return None
            line += 1
            position = after
            continue
        call_index = len(digests)
        if not data.startswith(_REQUEST % call_index, position):
            return None
        ending = data.find(_CALL_END % call_index, position)
        if ending < 0:
            return None
        rows = memoryview(data)[position : ending + 1]
        after = data.find(b"\n", ending + 1) + 1
        request_end = data.find(b"\n", position) + 1
        stored = _call_end(data[ending + 1 : after - 1])
        if stored is None:
            return None
        count, digest, rows_digest, ending_text_ = stored
        if rows_seal(hashlib.sha256(rows), count, ending_text_, digest) != rows_digest:
            return None  # the rows, the count, the ending or the digest changed since
        if not _add_row(parser, line, data[position : request_end - 1]):
            return None
        digests.append(digest)
        events += count
        line += count + 2
        position = after
    digests.extend(tape_entry_digest(entry) for entry in parser.tapes)
    return DigestedRecording(parser, digests, events)


def _add_row(parser: RecordingParser, line: int, text: bytes) -> bool:
    """Give the strict reader one row (a request, a tape entry); False if it refuses it."""
    try:
        row = orjson.loads(text)
        if json_text_may_exceed_nesting_limit(text) and exceeds_nesting_limit(row):
            return False
        if not isinstance(row, dict):
            return False
        parser.add_row(line, row)
    except (orjson.JSONDecodeError, RecordingFileError):
        return False
    return True


def _call_end(text: bytes) -> tuple[int, str, str, bytes] | None:
    """A ``call_end`` row's event count, call digest, rows digest and ending (as the digest
    hashes it), when it is a row the strict reader accepts holding a digest of this hash
    version."""
    try:
        row = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(row, dict):
        return None
    count = row.get("event_count")
    outcome = row.get("outcome")
    digest = row.get("digest")
    if type(count) is not int or count < 0 or not isinstance(outcome, str):
        return None
    if outcome not in OUTCOMES:
        return None
    recorded = None
    if outcome == "error":
        recorded = RecordedError.from_row(row.get("error"))
        if recorded is None:
            return None
    if not isinstance(digest, dict) or digest.get("version") != TRANSCRIPT_HASH_VERSION:
        return None
    call, rows = _sha256(digest.get("call")), _sha256(digest.get("rows"))
    if call is None or rows is None:
        return None
    return count, call, rows, ending_text(outcome, recorded)


def _sha256(value: object) -> str | None:
    """``value`` if it is 64 lower-case hex digits, else None."""
    return value if isinstance(value, str) and len(value) == 64 and set(value) <= _HEX else None
