"""The recording format: its rows, its header, its version and features, and the parsed form.

A recording is one JSON object a line, in the order things happened::

    {"type":"header","format_version":2,"features":["http","request_deltas"],"created_at":…,…}
    {"type":"request","call_index":0,"model":{…},"context":{…},"options":{…}}
    {"type":"event","call_index":0,"event_index":0,"event":{"type":"start",…}}
    {"type":"call_end","call_index":0,"event_count":5,"outcome":"complete"}
    {"type":"request","call_index":1,"boundary":"http","method":"POST","url":…,"headers":{…},"body":{…}}
    {"type":"event","call_index":1,"event_index":0,"event":{"type":"http_response","status":200,…}}
    {"type":"tape","tape":"clock","args":{},"result":1767225600.5,"nondeterministic":true}
    …

Calls are made at one of two *boundaries*, in one call sequence: the provider registry (a request
row without ``boundary``: sections ``model``, ``context``, ``options``) and HTTP
(``"boundary": "http"``: sections ``method``, ``url``, ``headers`` and at most one body form). Calls
recorded concurrently may interleave their event rows; each call's rows stay in order. Tape rows
(:mod:`openprogram.recording.tape_rows`) record the calls of taped functions and agent tools, one
row each, between the call rows. A request row may store only what its lists add to an earlier
call's (its ``base``: :mod:`~openprogram.recording.request_delta`); the reader rebuilds it whole.
``docs/recording-format.md`` is the full description.

**What a row can hold** is checked before it is written. JSON has no ``inf`` or ``NaN``: orjson
writes them as ``null`` (and pydantic's JSON dump turns those inside free-form fields such as
``metadata`` or tool-call arguments into ``None``), so a request with ``temperature=inf`` would be
recorded as ``temperature: null`` and the identical run could never replay its own recording, and a
tool would be replayed ``None`` where the model gave ``NaN``. And the reader refuses a row nested
deeper than :data:`~openprogram.json_nesting.MAX_NESTING_DEPTH`, so a row nested deeper must not be
written. The recorder checks each request and event as the caller and the provider gave it
(:func:`check_recordable`, before pydantic's dump can hide a ``NaN``, and before a deep value
reaches code that recurses), and refuses such a value with :class:`UnrecordableValueError` naming
the field, before anything of that row reaches disk. Rows given to the writer directly are checked
as they are encoded (:func:`encode_recordable_row`).

The walk knows JSON values (dicts, lists, tuples, scalars); a boundary whose requests are
objects (the provider boundary's pydantic models) passes ``fields_of`` to walk into them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal, get_args

import orjson

from openprogram import __version__
from openprogram.errors import RecordingFileError, UnrecordableValueError
from openprogram.json_nesting import MAX_NESTING_DEPTH, json_text_may_exceed_nesting_limit
from openprogram.recording.difference import join_field_path
from openprogram.recording.http_rows import EVENTSTREAM_FEATURE, RAW_TEXT_FEATURE, SSE_REST
from openprogram.recording.not_recorded import NOT_RECORDED_FEATURE
from openprogram.recording.redaction import REDACTION_VERSION
from openprogram.recording.request_delta import DELTA_FEATURE

__all__ = [
    "BOUNDARIES",
    "BOUNDARY_FEATURES",
    "HTTP_EVENT_TYPES",
    "HTTP_REQUEST_SECTIONS",
    "KNOWN_FEATURES",
    "OUTCOMES",
    "PROVIDER_EVENT_TYPES",
    "PROVIDER_REQUEST_SECTIONS",
    "RECORDING_FORMAT_VERSION",
    "SNAPSHOT_FEATURE",
    "TOOL_TAPE_PREFIX",
    "UPGRADE",
    "WRITTEN_FEATURES",
    "Boundary",
    "FieldsOf",
    "Outcome",
    "RecordedCall",
    "RecordedError",
    "Recording",
    "TapeEntry",
    "check_recordable",
    "encode_recordable_row",
    "encode_row",
    "new_header",
    "refuse_a_snapshot",
    "request_sections",
    "snapshot_refusal",
    "version_refusal",
]


RECORDING_FORMAT_VERSION = 2
"""The version every file this openprogram creates or rewrites says; it reads every version
from 1 up to this one, and appends only to a file of this one.

The rule is the first seed's: the version changes when the required fields of a ``request``,
``event`` or ``call_end`` row change, or their meaning does; optional header metadata a
reader may ignore does not change it. A reader that knows one version compares it for
equality and refuses any other, so a file written after a change of meaning is refused, not
misread. Version 2 changed three meanings since 1: a request row may name a ``base`` and hold
only what it adds to that call's request; a request row may be an HTTP call (``"boundary":
"http"``, without ``model``, ``context`` and ``options``) whose events are HTTP events; and
the ``raw`` text of an ``sse`` or ``http_body`` event, when there is one, is what replay
serves. Every new file says 2, whichever of them it comes to use: its header is written
before its first call, and a call of any kind may be appended to it later.

Header ``features`` (:data:`KNOWN_FEATURES`) are this openprogram's own finer list of what a
file may hold, which its reader refuses when it does not know one; they say nothing to a
reader that knows only the version, and never stand in for a change of version."""

SNAPSHOT_FEATURE: Final = "drift_snapshot"
"""The header feature, and the header field, of a drift snapshot: a file of a drift check's
live answers (:mod:`openprogram.drift.snapshot`), which replay refuses."""

KNOWN_FEATURES: frozenset[str] = frozenset(
    {
        "http",
        "tapes",
        DELTA_FEATURE,
        NOT_RECORDED_FEATURE,
        EVENTSTREAM_FEATURE,
        RAW_TEXT_FEATURE,
        SNAPSHOT_FEATURE,
    }
)
"""The header ``features`` this openprogram reads: the row types and fields added within a
format version, each by name (in version 1 the changes of meaning of version 2 were
announced this way too). A recording announcing any other was written by a newer
openprogram and is refused, with the advice to upgrade.

``http``: request rows with ``"boundary": "http"`` and the HTTP event types. ``tapes``: ``tape``
rows, the entries of taped functions and agent tools (:mod:`openprogram.recording.tape_rows`).
``request_deltas``: request rows that store only what they add to an earlier request, named by their
``base`` field (:mod:`openprogram.recording.request_delta`). ``not_recorded``: ``not_recorded``
rows, the connections a recorded session opened that no boundary captured
(:mod:`openprogram.recording.not_recorded`). ``eventstream``: ``eventstream`` events of HTTP calls,
one per message of an AWS event stream (:mod:`openprogram.recording.http_rows`). ``raw_text``: the
``raw`` field of ``sse`` and ``http_body`` events, the text of an event or a JSON body exactly as it
came, where re-serializing the parsed value would not give its bytes back, and the ``sse_rest``
event, the text after a stream's last event; replay serves them, so the client reads the bytes it
read live (:mod:`openprogram.http_boundary.codec`). ``drift_snapshot``: the file is a drift
snapshot, not a recording of a session (:data:`SNAPSHOT_FEATURE`); it is read to show and diff,
never replayed."""

WRITTEN_FEATURES: tuple[str, ...] = (
    "http",
    "tapes",
    DELTA_FEATURE,
    NOT_RECORDED_FEATURE,
    EVENTSTREAM_FEATURE,
    RAW_TEXT_FEATURE,
)
"""The features a file created by this openprogram announces (it may write them)."""

TOOL_TAPE_PREFIX: Final = "tool:"
"""The tapes of agent tools are named ``tool:<tool name>``."""

UPGRADE = "it was written by a newer openprogram: upgrade openprogram to read it"

Outcome = Literal["complete", "error", "cancelled", "abandoned"]

OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))

Boundary = Literal["provider", "http"]

BOUNDARIES: frozenset[str] = frozenset(get_args(Boundary))

BOUNDARY_FEATURES: dict[str, str] = {"http": "http"}
"""The header feature a file must announce before calls of a boundary are appended to it
(the provider boundary predates features and needs none)."""

PROVIDER_REQUEST_SECTIONS = ("model", "context", "options")
"""A provider call's request sections, in the order replay compares them."""

HTTP_REQUEST_SECTIONS = ("method", "url", "headers", "body", "body_text", "body_base64")
"""An HTTP call's request sections, in the order replay compares them. ``method``, ``url``
and ``headers`` are always present; of the three body forms at most one is (none: no body);
an absent section equals null."""

PROVIDER_EVENT_TYPES: frozenset[str] = frozenset(
    {
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
        "error",
    }
)
"""The event types of a provider call (``openprogram.providers.events`` models them)."""

HTTP_EVENT_TYPES: frozenset[str] = frozenset(
    {"http_response", "sse", SSE_REST, "eventstream", "http_body"}
)
"""The event types of an HTTP call: the response's status and headers, then one ``sse``
event per dispatched server-sent event (and an ``sse_rest`` holding the text after the last
one), one ``eventstream`` event per message of an AWS event stream, or one ``http_body``
holding the whole body."""


def version_refusal(version: object) -> str | None:
    """Why nothing may be appended to a recording whose header says ``version`` — another version
    than this openprogram writes, whose rows would not all mean what the file says — or None."""
    if type(version) is int and version == RECORDING_FORMAT_VERSION:
        return None
    return (
        f"cannot append to a recording of format_version {version!r} (this openprogram"
        f" writes format_version {RECORDING_FORMAT_VERSION})"
    )


def request_sections(boundary: str) -> tuple[str, ...]:
    """The request sections of a call at ``boundary``, in comparison order."""
    return HTTP_REQUEST_SECTIONS if boundary == "http" else PROVIDER_REQUEST_SECTIONS


def new_header(
    recording_id: str | None = None, *, redaction_fingerprint: str | None = None
) -> dict[str, Any]:
    """The header row a new recording starts with. ``redaction_fingerprint``: the
    fingerprint of the user redaction its calls are recorded with (none: no key, which
    means no user redaction, as a null does)."""
    header: dict[str, Any] = {
        "type": "header",
        "format_version": RECORDING_FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    if recording_id is not None:
        header["recording_id"] = recording_id
    header["openprogram_version"] = __version__
    header["redaction_version"] = REDACTION_VERSION
    if redaction_fingerprint is not None:
        header["redaction_fingerprint"] = redaction_fingerprint
    if WRITTEN_FEATURES:
        header["features"] = list(WRITTEN_FEATURES)
    return header


def snapshot_refusal(header: dict[str, Any]) -> str | None:
    """Why a recording with ``header`` cannot be replayed — it is a drift snapshot — or None."""
    snapshot = header.get(SNAPSHOT_FEATURE)
    features = header.get("features")
    if not isinstance(snapshot, dict) and not (
        isinstance(features, list) and SNAPSHOT_FEATURE in features
    ):
        return None
    taken = snapshot if isinstance(snapshot, dict) else {}
    return (
        f"it is a drift snapshot (the live answers of {taken.get('recording', 'a recording')}, "
        f"taken {taken.get('taken_at', 'by a drift check')}), which replay refuses: replay "
        "the recording itself, or re-record it to accept the new answers"
    )


def refuse_a_snapshot(recording: Recording) -> None:
    """Raise :class:`~openprogram.errors.RecordingFileError` when ``recording`` is a drift
    snapshot: every way into replay asks this before anything runs."""
    refusal = snapshot_refusal(recording.header)
    if refusal is not None:
        raise RecordingFileError(str(recording.path), refusal, advice="")


def encode_row(row: dict[str, Any]) -> bytes:
    """One row as a complete line, ready for a single ``write``."""
    return orjson.dumps(row) + b"\n"


@dataclass(frozen=True, slots=True)
class RecordedError:
    """An exception, as recorded: its qualified type name and redacted message."""

    type: str
    message: str
    reason: str | None = None
    """The redacted message of the operating system's error the exception wraps (the
    ``OSError`` beneath an ``httpx.ConnectError``: ``[Errno 111] Connect call failed …``),
    when it says more than ``message``: an SDK that reads the exception's chain shows it, so
    replay puts it back beneath the rebuilt exception. Not compared, not hashed."""

    @classmethod
    def from_row(cls, value: object) -> RecordedError | None:
        """The error a row's ``error`` value holds, or None when it is not an object with
        a string ``type`` and ``message`` (a ``reason`` that is not a string is left out)."""
        if not isinstance(value, dict):
            return None
        type_name, message = value.get("type"), value.get("message")
        if not isinstance(type_name, str) or not isinstance(message, str):
            return None
        reason = value.get("reason")
        return cls(type_name, message, reason if isinstance(reason, str) else None)

    def to_row(self) -> dict[str, str]:
        """The ``error`` value of a ``call_end`` row."""
        row = {"type": self.type, "message": self.message}
        if self.reason is not None:
            row["reason"] = self.reason
        return row


@dataclass(slots=True)
class RecordedCall:
    """One call: its request, the events it streamed, how it ended."""

    call_index: int
    line: int
    """The line of its ``request`` row."""
    request: dict[str, Any]
    """The request sections of its boundary as stored (already redacted): ``{"model",
    "context", "options"}`` for a provider call; ``{"method", "url", "headers"}`` and the
    body form, if any, for an HTTP call."""
    event_rows: list[dict[str, Any]] = field(default_factory=list)
    """The events as stored, for hashing and diffing."""
    events: list[Any] = field(default_factory=list)
    """A provider call's events decoded by the provider codec (``AssistantMessageEvent``
    models), when the recording was read with it; empty otherwise and for HTTP calls."""
    outcome: Outcome | None = None
    """None when the call has no ``call_end``: the recording was cut short."""
    error: RecordedError | None = None
    boundary: Boundary = "provider"
    """Where the call was made: the provider registry, or HTTP."""
    within: str | None = None
    """The tape whose call was being recorded when this call was made (a tool that calls a
    model or a web API), from the request row's optional ``within``; None otherwise."""
    starts_session: bool = False
    """Whether its ``call_end`` says it began a session appended to a file that held calls
    (the optional ``new_session``): the file holds one session more from here."""

    @property
    def truncated(self) -> bool:
        return self.outcome is None


@dataclass(frozen=True, slots=True)
class TapeEntry:
    """One call on a tape, as recorded (its row: :mod:`~openprogram.recording.tape_rows`)."""

    tape: str
    index: int
    """Its position among its tape's entries."""
    line: int
    """The line of its row."""
    args: dict[str, Any]
    result: Any = None
    error: RecordedError | None = None
    typed: bool = False
    nondeterministic: bool = False
    within: str | None = None
    """The tape whose call was being recorded when this one was made (a clock read inside a
    tool), or None."""

    @property
    def label(self) -> str:
        """``clock[3]``: how reports name the entry."""
        return f"{self.tape}[{self.index}]"

    @property
    def tool(self) -> str | None:
        """The agent tool whose results the tape holds, or None."""
        tape = self.tape
        return tape.removeprefix(TOOL_TAPE_PREFIX) if tape.startswith(TOOL_TAPE_PREFIX) else None


@dataclass(slots=True)
class Recording:
    """A parsed recording: its header, its calls in ``call_index`` order and its tape
    entries in the order they were written."""

    path: Path
    header: dict[str, Any]
    calls: list[RecordedCall]
    events_decoded: bool = False
    """Whether the provider calls' ``events`` were decoded as the file was read."""
    tapes: list[TapeEntry] = field(default_factory=list)
    """Every tape entry, in file order (each knows its tape and its index on it)."""
    not_recorded: list[dict[str, Any]] = field(default_factory=list)
    """The connections the recorded session opened that no boundary captured (each host
    and port once; see :mod:`openprogram.recording.not_recorded`)."""

    @property
    def format_version(self) -> int:
        return int(self.header["format_version"])

    @property
    def truncated_calls(self) -> list[int]:
        return [call.call_index for call in self.calls if call.truncated]

    @property
    def appended_sessions(self) -> list[int]:
        """The first call of each session recorded into the file after its first one (a
        second ``record_replay()`` block, a second process of the configured record mode),
        as the ``call_end`` rows mark them; empty for a file of one session."""
        return [call.call_index for call in self.calls if call.starts_session]

    @property
    def event_count(self) -> int:
        return sum(len(call.event_rows) for call in self.calls)

    @property
    def boundaries(self) -> frozenset[str]:
        """The boundaries its calls were made at."""
        return frozenset(call.boundary for call in self.calls)


FieldsOf = Callable[[object], Iterable[tuple[str, Any]] | None]
"""The fields of an object that is not a JSON value, by their JSON names (None: the object
is not one to walk into)."""


_TOO_DEEP = f"is nested deeper than {MAX_NESTING_DEPTH} levels, which a recording cannot hold"


def encode_recordable_row(path: str, row: dict[str, Any], *, checked: bool = False) -> bytes:
    """``row`` as one complete line; raises :class:`UnrecordableValueError` if it holds a
    non-finite number or nests deeper than the reader accepts (``path``: the recording).

    ``checked``: the values in ``row`` already passed :func:`check_recordable`. Otherwise
    the encoded line decides cheaply whether the row needs walking at all: a non-finite
    number is encoded as ``null``, and deep nesting needs many brackets."""
    try:
        line = orjson.dumps(row) + b"\n"
    except orjson.JSONEncodeError as exc:  # nested past orjson's own limit, or not JSON
        _check_row(path, row)
        raise UnrecordableValueError(
            path, "", f"cannot be written as JSON ({exc})", "report this", None
        ) from None
    if not checked and (b"null" in line or json_text_may_exceed_nesting_limit(line)):
        _check_row(path, row)
    return line


def _check_row(path: str, row: dict[str, Any]) -> None:
    call_index = row.get("call_index") if row.get("type") == "event" else None
    check_recordable(path, row, call_index=call_index if type(call_index) is int else None)


def check_recordable(
    path: str, value: Any, *, call_index: int | None = None, fields_of: FieldsOf | None = None
) -> None:
    """Raise :class:`UnrecordableValueError` for the first non-finite float in ``value``, or
    the first container nested deeper than a row may be.

    ``value`` stands for a row: a dict (level 1) of dicts, lists and tuples — and of the
    objects ``fields_of`` walks into (``{"model": model, "context": context, "options":
    options}`` for a provider call), each of which is one level, as in its JSON dump.
    Walked without recursion, so any depth is safe; field paths start at ``value``'s keys."""
    parents: list[tuple[int, str | int]] = []  # (parent entry, key) of each container seen
    stack: list[tuple[Any, int, int]] = [(value, -1, 1)]
    while stack:
        item, entry, depth = stack.pop()
        pairs: Any
        if isinstance(item, dict):
            pairs = item.items()
        elif isinstance(item, list | tuple):
            pairs = enumerate(item)
        else:
            pairs = fields_of(item) if fields_of is not None else None
            if pairs is None:
                continue
        if depth > MAX_NESTING_DEPTH:
            raise UnrecordableValueError(
                path, _path_of(parents, entry), _TOO_DEEP, "flatten it", call_index
            )
        for key, child in pairs:
            kind = type(child)
            if kind is str or kind is int or child is None or kind is bool:
                continue  # most of a request: skipped before any isinstance
            if isinstance(child, float):
                if not math.isfinite(child):
                    raise UnrecordableValueError(
                        path,
                        join_field_path(_path_of(parents, entry), key),
                        f"is {child!r}, which a recording cannot hold (JSON has no inf or NaN)",
                        "pass a finite number or leave it unset",
                        call_index,
                    )
            elif isinstance(child, dict | list | tuple) or fields_of is not None:
                parents.append((entry, key))
                stack.append((child, len(parents) - 1, depth + 1))


def _path_of(parents: list[tuple[int, str | int]], entry: int) -> str:
    keys: list[str | int] = []
    while entry >= 0:
        entry, key = parents[entry]
        keys.append(key)
    field_path = ""
    for key in reversed(keys):
        field_path = join_field_path(field_path, key)
    return field_path
