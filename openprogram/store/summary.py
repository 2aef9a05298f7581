"""What ``openprogram recordings list`` shows about each recording.

:func:`summarize_recording` reads a file once. When the digests its writer stored in each
``call_end`` vouch for every call (:mod:`~openprogram.store.summary`: each call's rows lie together
and hash to what the writer wrote), only the header, the requests and the call ends are parsed;
otherwise the strict reader parses it all (events left as plain rows). Either way a summary says
exactly what replay would find: the calls (and how many of them are HTTP calls), events, tape
entries and models (an HTTP call's is its host and the ``model`` its JSON body names:
``api.openai.com:gpt-4o-mini``), whether a call was cut short, and the transcript hash. A bad file
gives ``valid=False`` and a one-line ``problem``, never an error.

:func:`~openprogram.store.summary_cache.summarize_store` summarizes a whole store and
keeps the summaries in a cache, so a file is parsed again only when it changes.

A recording's summary from the digests its writer stored, without parsing its events.

Every ``call_end`` a writer writes holds the call's digest and the SHA-256 of the call's rows as
written (``{"version", "call", "rows"}``: :class:`~openprogram.recording.call_digest. CallDigest`).
When each call's rows lie together — its request line, its event lines, then its ``call_end`` — the
bytes before the ``call_end`` can be hashed as they are, with the call's ending and digest, and
compared with ``rows``: equal, they are exactly the rows the writer wrote and digested, so the
transcript hash can be taken over the stored digests, and only the header, the request rows (small:
they store what a request adds), the ``call_end`` rows and the tape rows (whole lines between calls,
hashed as the transcript hash hashes them) are parsed. The cost of a summary is then the cost of
reading the bytes and hashing them.

:func:`summary_from_digests` returns None, and the caller parses the file with the strict
reader, at the first thing that is not so: a digest missing, of another hash version or not
matching the bytes, a digest whose writer did not know every id the calls before it made up
(its ``minted_before``: an id an earlier call made up is renamed inside a later request's
text), calls whose rows interleave (a concurrent session), a call cut short, a blank line or
a ``\r\n`` line end among a call's rows, anything the strict reader would refuse."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from openprogram.errors import RecordingFileError
from openprogram.json_nesting import exceeds_nesting_limit, json_text_may_exceed_nesting_limit
from openprogram.recording.call_digest import TRANSCRIPT_HASH_VERSION, ending_text, rows_seal
from openprogram.recording.format import OUTCOMES, RecordedCall, RecordedError
from openprogram.recording.minted_ids import LinkedCall, linked_digests
from openprogram.recording.reader import RecordingParser, parse_recording, read_recording_file
from openprogram.store.hashing import hash_of_digests, tape_entry_digest, transcript_hash

__all__ = [
    "DigestedRecording",
    "RecordingSummary",
    "call_label",
    "model_label",
    "summarize_recording",
    "summary_from_digests",
]


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
    calls: list[LinkedCall] = []
    events = 0
    minted: set[str] = set()  # the hashes of the ids the calls so far made up
    while position < len(data):
        if data.startswith(_TAPE, position):  # a tape entry between calls
            after = data.find(b"\n", position) + 1
            if not _add_row(parser, line, data[position : after - 1]):
                return None
            line += 1
            position = after
            continue
        call_index = len(calls)
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
        count, digest, rows_digest, ending_text_, ids, before = stored
        if rows_seal(hashlib.sha256(rows), count, ending_text_, digest, ids, before) != (
            rows_digest
        ):
            return None  # the rows, the count, the ending, the digest or the ids changed since
        if before != len(minted):
            # Its writer did not know every id the calls before it made up (a file written
            # before ids were renamed inside text, or partly by another process), so its
            # digest may leave one unrenamed that the strict reader's walk renames.
            return None
        if ids is not None:
            minted.update(ids["minted"])
        if not _add_row(parser, line, data[position : request_end - 1]):
            return None
        calls.append(LinkedCall(digest, ids))
        events += count
        line += count + 2
        position = after
    digests = linked_digests(calls)
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


def _call_end(text: bytes) -> tuple[int, str, str, bytes, dict[str, Any] | None, int] | None:
    """A ``call_end`` row's event count, call digest, rows digest, ending (as the digest
    hashes it), ids and ``minted_before`` (0 when absent), when it is a row the strict
    reader accepts holding a digest of this hash version."""
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
    ids = digest.get("ids")
    if ids is not None and not _ids_field(ids):
        return None
    before = digest.get("minted_before", 0)
    if type(before) is not int or before < 0:
        return None
    return count, call, rows, ending_text(outcome, recorded), ids, before


def _ids_field(value: object) -> bool:
    """Whether ``value`` is the ``ids`` of a digest: ``refs`` and ``minted``, each a list of
    16 hex digits, and ``request`` (16 hex digits) when ``minted`` is not empty."""
    if not isinstance(value, dict):
        return False
    refs, minted = value.get("refs"), value.get("minted")
    if not isinstance(refs, list) or not isinstance(minted, list):
        return False
    if set(value) != ({"refs", "minted", "request"} if minted else {"refs", "minted"}):
        return False
    hashes = [*refs, *minted, value["request"]] if minted else [*refs]
    return all(isinstance(h, str) and len(h) == 16 and set(h) <= _HEX for h in hashes)


def _sha256(value: object) -> str | None:
    """``value`` if it is 64 lower-case hex digits, else None."""
    return value if isinstance(value, str) and len(value) == 64 and set(value) <= _HEX else None


@dataclass(frozen=True)
class RecordingSummary:
    """One recording as ``list`` shows it. ``problem`` says, on one line, why it is invalid."""

    name: str
    path: Path
    size: int
    mtime: float
    created_at: str | None
    calls: int
    events: int
    models: list[str]
    """Distinct :func:`call_label` in call order: ``api:model-id`` of a provider call,
    ``host:model`` of an HTTP call."""
    format_version: int | None
    valid: bool
    truncated: bool
    """A call has no ``call_end``, or the last line was cut off mid-write."""
    problem: str | None
    transcript_hash: str | None = None
    """The SHA-256 transcript hash (see :mod:`openprogram.store.hashing`), if valid."""
    http_calls: int = 0
    """How many of ``calls`` were made at the HTTP boundary (the rest at the provider registry)."""
    tape_entries: int = 0
    """How many tape entries (calls of taped functions and agent tools) the recording holds,
    besides its calls."""

    @property
    def created_time(self) -> float:
        """POSIX time of ``created_at`` from the header, or the file's mtime without one."""
        if self.created_at is not None:
            try:
                created = datetime.fromisoformat(self.created_at)
            except ValueError:
                return self.mtime
            if created.tzinfo is None:
                created = created.replace(tzinfo=UTC)
            return created.timestamp()
        return self.mtime

    def to_json(self) -> dict[str, Any]:
        """A plain, JSON-safe dict (``--json`` output and the summary cache)."""
        values = {item.name: getattr(self, item.name) for item in fields(self)}
        return values | {"path": str(self.path), "models": list(self.models)}

    @classmethod
    def from_json(cls, data: dict[str, Any], path: Path) -> RecordingSummary:
        """Rebuild a summary from :meth:`to_json`; raises ``ValueError`` if a field is off."""
        for key, types in _JSON_TYPES.items():
            if type(data.get(key)) not in types:
                raise ValueError(f"summary field {key!r}")
        models = data["models"]
        if not all(type(model) is str for model in models):
            raise ValueError("summary field 'models'")
        fields = {key: data[key] for key in _JSON_TYPES}
        fields["mtime"] = float(fields["mtime"])
        return cls(name=path.stem, path=path, **fields)


_NONE = type(None)


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "size": (int,),
    "mtime": (float, int),
    "created_at": (str, _NONE),
    "calls": (int,),
    "events": (int,),
    "models": (list,),
    "format_version": (int, _NONE),
    "valid": (bool,),
    "truncated": (bool,),
    "problem": (str, _NONE),
    "transcript_hash": (str, _NONE),
    "http_calls": (int,),
    "tape_entries": (int,),
}
"""The exact JSON types of the fields :meth:`RecordingSummary.from_json` reads back."""


@dataclass(frozen=True, slots=True)
class _File:
    path: Path
    size: int
    mtime: float

    def summary(self, header: dict[str, Any] | None, **facts: Any) -> RecordingSummary:
        created_at = header.get("created_at") if header is not None else None
        version = header.get("format_version") if header is not None else None
        fields: dict[str, Any] = {
            "created_at": created_at if isinstance(created_at, str) else None,
            "calls": 0,
            "events": 0,
            "models": [],
            "format_version": version if type(version) is int else None,
            "valid": False,
            "truncated": False,
            "problem": None,
        }
        fields.update(facts)
        return RecordingSummary(
            name=self.path.stem, path=self.path, size=self.size, mtime=self.mtime, **fields
        )


def summarize_recording(path: Path) -> RecordingSummary:
    """Summarize one recording, reading it once; a bad file gives ``valid=False``.

    Never raises for what the file holds: a FIFO or a device is refused without being read,
    and a row nested too deeply is refused by the reader, so one bad file cannot break a
    listing of the others."""
    path = Path(os.path.abspath(path))
    try:
        data, info = read_recording_file(path)
    except RecordingFileError as exc:
        return _unreadable(path, exc)
    found = _File(path, info.st_size, info.st_mtime)
    digested = summary_from_digests(path, data)
    if digested is not None:  # the writer's digests vouch for every call: nothing parsed
        calls = digested.parser.calls
        return found.summary(
            digested.header,
            calls=len(calls),
            http_calls=sum(call.boundary == "http" for call in calls),
            events=digested.events,
            tape_entries=len(digested.parser.tapes),
            models=_models(calls),
            valid=True,
            transcript_hash=hash_of_digests(digested.digests),
        )
    _, cut_off = _complete_lines(data)
    try:
        # The transcript hash needs every row parsed, so the strict reader does the work
        # (from the bytes already read): the summary is exactly what replay would see.
        recording = parse_recording(path, data)
        digest = transcript_hash(recording)
    except RecordingFileError as exc:
        return found.summary(_first_row(data), problem=_one_line(exc))
    return found.summary(
        recording.header,
        calls=len(recording.calls),
        http_calls=sum(call.boundary == "http" for call in recording.calls),
        events=recording.event_count,
        tape_entries=len(recording.tapes),
        models=_models(recording.calls),
        valid=True,
        truncated=bool(recording.truncated_calls) or cut_off,
        transcript_hash=digest,
    )


def _unreadable(path: Path, exc: RecordingFileError) -> RecordingSummary:
    try:
        info = os.lstat(path)
        found = _File(path, info.st_size, info.st_mtime)
    except OSError:
        found = _File(path, 0, 0.0)
    return found.summary(None, problem=_one_line(exc))


def _complete_lines(data: bytes) -> tuple[bytes, bool]:
    """The file's complete lines, and whether a last line was cut off mid-write."""
    if not data or data.endswith(b"\n"):
        return data, False
    start = data.rfind(b"\n") + 1
    tail = data[start:]
    if not tail.strip():
        return data[:start], False
    try:
        orjson.loads(tail)
    except orjson.JSONDecodeError:
        return data[:start], True
    return data + b"\n", False  # a whole row that only lacks its newline


def _first_row(body: bytes) -> dict[str, Any] | None:
    end = body.find(b"\n")
    try:
        row = orjson.loads(body[: end if end >= 0 else len(body)])
    except orjson.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def _models(calls: list[RecordedCall]) -> list[str]:
    models: list[str] = []
    for call in calls:
        label = call_label(call)
        if label not in models:
            models.append(label)
    return models


def model_label(model: dict[str, Any]) -> str:
    """``api:model-id`` of a recorded request's model."""
    return f"{model.get('api', '?')}:{model.get('id', '?')}"


def call_label(call: RecordedCall) -> str:
    """What a call asked for, in a few characters: ``api:model-id`` for a provider call; for an HTTP
    call ``host:model`` when its JSON body names a ``model`` (``api.openai.com:gpt-4o-mini``) or its
    path does, as Gemini's and Bedrock's do (``…/models/gemini-2.5-flash:generateContent``,
    ``…/model/<id>/converse``), else ``METHOD host/path``."""
    if call.boundary != "http":
        return model_label(call.request["model"])
    try:
        url = urlsplit(call.request["url"])
        host = url.hostname or "?"
    except ValueError:
        url, host = None, "?"
    body = call.request.get("body")
    model = body.get("model") if isinstance(body, dict) else None
    if not isinstance(model, str) and url is not None:
        named = next(filter(None, (path.search(url.path) for path in _model_in_path())), None)
        model = None if named is None else unquote(named[1])
    if isinstance(model, str):
        return f"{host}:{model}"
    return f"{call.request['method']} {host}{url.path if url is not None else ''}"


@functools.cache
def _model_in_path() -> tuple[re.Pattern[str], ...]:
    """The model a Gemini (``/models/<model>:generateContent``) or Bedrock runtime
    (``/model/<id>/converse``) URL path names: each vendor's ``model_path`` (the vendors are
    read for a call whose body names no model; ``recordings list`` starts without them)."""
    from openprogram.vendors import VENDOR_WIRES

    return tuple(re.compile(wire.model_path) for wire in VENDOR_WIRES if wire.model_path)


def _one_line(exc: RecordingFileError) -> str:
    where = "" if exc.line is None else f"line {exc.line}: "
    call = "" if exc.call_index is None else f" (call {exc.call_index})"
    return " ".join(f"{where}{exc.problem}{call}".split())
