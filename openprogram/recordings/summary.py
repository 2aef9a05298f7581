"""What ``openprogram recordings list`` shows about each recording, read fast.

:func:`summarize_recording` reads a file once and parses only a few lines. The rows
openprogram writes are compact with ``type`` first (``{"type":"request","call_index":…``),
so the request and ``call_end`` rows are found by their prefix; the head of each request
(its model, not its context) and each small ``call_end`` row are parsed, and the events are
counted as the remaining lines, which must add up to what the ``call_end`` rows count. A file
laid out any other way (written by hand, blank lines, or damaged so the sums differ) is read
by the strict reader instead. Damage inside an event row is not seen here; the strict reader
finds it when the recording is shown, checked or replayed. A bad file gives ``valid=False``
and a one-line ``problem``, never an error.

:func:`~openprogram.recordings.summary_cache.summarize_store` summarizes a whole store.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from openprogram.errors import RecordingFileError
from openprogram.providers.recording import (
    OUTCOMES,
    RECORDING_FORMAT_VERSION,
    Recording,
    read_recording,
)

__all__ = ["RecordingSummary", "model_label", "summarize_recording"]

# Longer patterns are found faster (the search skips further between candidates).
_REQUEST_START = b'\n{"type":"request","call_index":'
_EVENT_START = b'\n{"type":"event","call_index":'
_CALL_END_START = b'\n{"type":"call_end","call_index":'
_CONTEXT_KEY = b',"context":'


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
    """Distinct ``api:model-id`` in call order."""
    format_version: int | None
    valid: bool
    truncated: bool
    """A call has no ``call_end``, or the last line was cut off mid-write."""
    problem: str | None

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
        return {
            "name": self.name,
            "path": str(self.path),
            "size": self.size,
            "mtime": self.mtime,
            "created_at": self.created_at,
            "calls": self.calls,
            "events": self.events,
            "models": list(self.models),
            "format_version": self.format_version,
            "valid": self.valid,
            "truncated": self.truncated,
            "problem": self.problem,
        }

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
    """Summarize one recording, reading it once; a bad file gives ``valid=False``."""
    path = Path(os.path.abspath(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return _unreadable(path, exc)
    try:
        info = os.fstat(fd)
        found = _File(path, info.st_size, info.st_mtime)
        if not stat.S_ISREG(info.st_mode):
            return found.summary(None, problem="not a regular file")
        with open(fd, "rb", buffering=0, closefd=False) as file:
            data = file.readall()
    except OSError as exc:
        return _unreadable(path, exc)
    finally:
        os.close(fd)
    body, cut_off = _complete_lines(data)
    header = _first_row(body)
    if header is not None and header.get("type") == "header":
        version = header.get("format_version")
        if type(version) is not int or version != RECORDING_FORMAT_VERSION:
            return found.summary(
                header,
                problem=f"format_version {version!r}, but this openprogram reads "
                f"format_version {RECORDING_FORMAT_VERSION}",
            )
        summary = _scan_rows(found, header, body, cut_off)
        if summary is not None:
            return summary
    return _read_strictly(found, header, cut_off)


def _unreadable(path: Path, exc: OSError) -> RecordingSummary:
    try:
        info = os.stat(path)
        found = _File(path, info.st_size, info.st_mtime)
    except OSError:
        found = _File(path, 0, 0.0)
    reason = "no such file" if isinstance(exc, FileNotFoundError) else exc.strerror or str(exc)
    return found.summary(None, problem=f"cannot read it ({reason})")


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


def _scan_rows(
    found: _File, header: dict[str, Any], body: bytes, cut_off: bool
) -> RecordingSummary | None:
    """Count the rows without parsing the events; None when the lines do not add up.

    Every line but the header is a request, a call_end or an event. With every call ended,
    the event lines must number exactly what the call_end rows count, so a line of any
    other kind (written by hand, or blank) makes the sums differ. With a call left open,
    the event rows are counted by their prefix instead.
    """
    lines = body.count(b"\n")
    heads = _request_heads(body)
    if heads is None:
        return None
    positions, models = heads
    ends = _call_ends(body, positions)
    if ends is None:
        return None
    ended, counted = ends
    requests = len(positions)
    events = lines - 1 - requests - ended
    open_calls = requests - ended
    if open_calls == 0:
        consistent = events == counted
    else:
        consistent = counted <= events and body.count(_EVENT_START) == events
    if not consistent:
        return None
    return found.summary(
        header,
        calls=requests,
        events=events,
        models=models,
        valid=True,
        truncated=open_calls > 0 or cut_off,
    )


def _request_heads(body: bytes) -> tuple[list[int], list[str]] | None:
    """Where each request row starts, and the distinct models in call order."""
    positions: list[int] = []
    models: list[str] = []
    start = body.find(_REQUEST_START)
    while start >= 0:
        end = body.find(b"\n", start + 1)
        row = _request_head(body, start + 1, end)
        if row is None:
            return None
        index, model = row.get("call_index"), row.get("model")
        if type(index) is not int or index != len(positions) or not isinstance(model, dict):
            return None
        label = model_label(model)
        if label not in models:
            models.append(label)
        positions.append(start)
        start = body.find(_REQUEST_START, end)
    return positions, models


def _request_head(body: bytes, start: int, end: int) -> dict[str, Any] | None:
    """The request row on ``body[start:end]`` up to its ``model``, leaving out the context.

    Quotes inside JSON strings are escaped, so ``,"context":`` is a key; cut there, the
    prefix plus ``}`` parses only when that key is the row's own (not one nested deeper).
    The context, most of a late request's bytes, is neither parsed nor copied.
    """
    cut = body.find(_CONTEXT_KEY, start, end)
    if cut > 0:
        try:
            head = orjson.loads(body[start:cut] + b"}")
        except orjson.JSONDecodeError:
            pass
        else:
            return head if isinstance(head, dict) else None
    try:
        row = orjson.loads(body[start:end])
    except orjson.JSONDecodeError:
        return None
    return row if isinstance(row, dict) else None


def _call_ends(body: bytes, requests: list[int]) -> tuple[int, int] | None:
    """How many calls ended and the events their ``call_end`` rows count; None if off."""
    starts = _call_ends_in_sequence(body, requests)
    if starts is None:
        starts = []
        start = body.find(_CALL_END_START)
        while start >= 0:
            starts.append(start)
            start = body.find(_CALL_END_START, start + 1)
    ended: set[int] = set()
    counted = 0
    for start in starts:
        try:
            row = orjson.loads(body[start + 1 : body.find(b"\n", start + 1)])
        except orjson.JSONDecodeError:
            return None
        if not _ends_a_call(row, requests, start, ended):
            return None
        ended.add(row["call_index"])
        counted += row["event_count"]
    return len(ended), counted


def _call_ends_in_sequence(body: bytes, requests: list[int]) -> list[int] | None:
    """Where the call_end rows are when the calls ran one after another, without a search.

    Then each call's ``call_end`` is the line just before the next request, and the last
    call's is the last line. None when the file is laid out otherwise (calls interleaved,
    or one left open); any call_end row elsewhere unbalances the line count later.
    """
    if not requests:
        return None
    starts: list[int] = []
    for line_end in [*requests[1:], len(body) - 1]:
        start = body.rfind(b"\n", 0, line_end)
        if start < 0 or not body.startswith(_CALL_END_START, start):
            return None
        starts.append(start)
    return starts


def _ends_a_call(row: Any, requests: list[int], start: int, ended: set[int]) -> bool:
    """A well-formed ``call_end`` row for a call whose request came before it, once."""
    if not isinstance(row, dict):
        return False
    index, count, outcome = row.get("call_index"), row.get("event_count"), row.get("outcome")
    error = row.get("error")
    return (
        type(index) is int
        and 0 <= index < len(requests)
        and requests[index] < start
        and index not in ended
        and type(count) is int
        and count >= 0
        and isinstance(outcome, str)
        and outcome in OUTCOMES
        and (
            outcome != "error"
            or (
                isinstance(error, dict)
                and isinstance(error.get("type"), str)
                and isinstance(error.get("message"), str)
            )
        )
    )


def _read_strictly(found: _File, header: dict[str, Any] | None, cut_off: bool) -> RecordingSummary:
    try:
        recording = read_recording(found.path, validate_events=False)
    except RecordingFileError as exc:
        return found.summary(header, problem=_one_line(exc))
    return found.summary(
        recording.header,
        calls=len(recording.calls),
        events=recording.event_count,
        models=_models(recording),
        valid=True,
        truncated=bool(recording.truncated_calls) or cut_off,
    )


def _models(recording: Recording) -> list[str]:
    models: list[str] = []
    for call in recording.calls:
        label = model_label(call.request["model"])
        if label not in models:
            models.append(label)
    return models


def model_label(model: dict[str, Any]) -> str:
    """``api:model-id`` of a recorded request's model."""
    return f"{model.get('api', '?')}:{model.get('id', '?')}"


def _one_line(exc: RecordingFileError) -> str:
    where = "" if exc.line is None else f"line {exc.line}: "
    call = "" if exc.call_index is None else f" (call {exc.call_index})"
    return " ".join(f"{where}{exc.problem}{call}".split())
