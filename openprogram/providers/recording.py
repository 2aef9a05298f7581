"""The recording format (JSONL) and its strict reader.

A recording is one JSON object a line, in the order things happened::

    {"type":"header","format_version":1,"created_at":…,"recording_id":…,…}
    {"type":"request","call_index":0,"model":{…},"context":{…},"options":{…}}
    {"type":"event","call_index":0,"event_index":0,"event":{"type":"start",…}}
    {"type":"call_end","call_index":0,"event_count":5,"outcome":"complete"}

Calls recorded concurrently may interleave their event rows; each call's rows stay in order.
:func:`read_recording` refuses anything it cannot read faithfully, naming the file, the line
and the call; a call cut short by a crash (no ``call_end``) is kept as *truncated*, so the
complete calls still replay. ``docs/recording-format.md`` is the full description.

Redaction and the first-difference walk live in their own modules and are re-exported here.
"""

from __future__ import annotations

import gc
import os
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import orjson
from pydantic import ValidationError

from openprogram import __version__
from openprogram.errors import RecordingFileError
from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    exceeds_nesting_limit,
    json_text_may_exceed_nesting_limit,
)
from openprogram.providers.difference import (
    NON_DETERMINISTIC_FIELD_NAMES,
    Difference,
    find_first_difference,
)
from openprogram.providers.redaction import (
    REDACTION_VERSION,
    SECRET_FIELD_NAMES,
    remove_secret_values,
)

if TYPE_CHECKING:
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.types import Context, Model, StreamOptions

__all__ = [
    "NON_DETERMINISTIC_FIELD_NAMES",
    "RECORDING_FORMAT_VERSION",
    "SECRET_FIELD_NAMES",
    "Difference",
    "Outcome",
    "RecordedCall",
    "RecordedError",
    "Recording",
    "find_first_difference",
    "new_header",
    "parse_recording",
    "read_recording",
    "read_recording_bytes",
    "read_recording_file",
    "remove_secret_values",
]

RECORDING_FORMAT_VERSION = 1
"""Bumped when a required field or the meaning of request/event/call_end rows changes."""

Outcome = Literal["complete", "error", "cancelled", "abandoned"]
OUTCOMES: frozenset[str] = frozenset(get_args(Outcome))
REQUEST_SECTIONS = ("model", "context", "options")
EVENT_TYPES: frozenset[str] = frozenset(
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
"""The event types a recording may hold; ``events.AssistantMessageEvent`` is their union."""
TOO_DEEP = f"nested deeper than {MAX_NESTING_DEPTH} levels"


def new_header(recording_id: str | None = None) -> dict[str, Any]:
    """The header row a new recording starts with."""
    header: dict[str, Any] = {
        "type": "header",
        "format_version": RECORDING_FORMAT_VERSION,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }
    if recording_id is not None:
        header["recording_id"] = recording_id
    header["openprogram_version"] = __version__
    header["redaction_version"] = REDACTION_VERSION
    return header


def dump_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """A call's arguments as a request row stores them (before redaction). Runtime-only
    options (the API key, the cancel signal, callbacks) are excluded by the model itself."""
    return {
        "model": model.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "options": options.model_dump(mode="json"),
    }


def encode_row(row: dict[str, Any]) -> bytes:
    """One row as a complete line, ready for a single ``write``."""
    return orjson.dumps(row) + b"\n"


@dataclass(frozen=True, slots=True)
class RecordedError:
    """A provider exception, as recorded: its qualified type name and redacted message."""

    type: str
    message: str


@dataclass(slots=True)
class RecordedCall:
    """One provider call: its request, the events it streamed, how it ended."""

    call_index: int
    line: int
    """The line of its ``request`` row."""
    request: dict[str, Any]
    """``{"model": …, "context": …, "options": …}`` as stored (already redacted)."""
    event_rows: list[dict[str, Any]] = field(default_factory=list)
    """The events as stored, for hashing and diffing."""
    events: list[AssistantMessageEvent] = field(default_factory=list)
    """The events rebuilt as models (empty when read with ``validate_events=False``)."""
    outcome: Outcome | None = None
    """None when the call has no ``call_end``: the recording was cut short."""
    error: RecordedError | None = None

    @property
    def truncated(self) -> bool:
        return self.outcome is None


@dataclass(slots=True)
class Recording:
    """A parsed recording: its header and its calls in ``call_index`` order."""

    path: Path
    header: dict[str, Any]
    calls: list[RecordedCall]

    @property
    def format_version(self) -> int:
        return int(self.header["format_version"])

    @property
    def truncated_calls(self) -> list[int]:
        return [call.call_index for call in self.calls if call.truncated]

    @property
    def event_count(self) -> int:
        return sum(len(call.event_rows) for call in self.calls)


def read_recording(path: str | os.PathLike[str], *, validate_events: bool = True) -> Recording:
    """Parse and check a whole recording; raises :class:`RecordingFileError` on any problem.

    Accepts ``\\r\\n`` line ends and files of any permission mode. An incomplete last line
    (a write cut short) is ignored: the call it belonged to reads as truncated.
    """
    return parse_recording(path, read_recording_bytes(path), validate_events=validate_events)


def read_recording_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the recording at ``path``; the one way openprogram reads a recording.

    Only a regular file is read: a FIFO, a device (``/dev/zero``) or a folder is refused
    with :class:`RecordingFileError` ("not a regular file") without blocking or reading from
    it, as is a file that is missing or unreadable.
    """
    return read_recording_file(path)[0]


def read_recording_file(path: str | os.PathLike[str]) -> tuple[bytes, os.stat_result]:
    """:func:`read_recording_bytes`, with the ``fstat`` of the file that was read (its size
    and modification time, for callers that list recordings)."""
    file = Path(path)
    try:
        # O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one.
        fd = os.open(file, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise RecordingFileError(
            str(file), "no such recording", advice="check the name or path"
        ) from None
    except OSError as exc:
        raise _unreadable(file, exc) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RecordingFileError(
                str(file),
                f"not a regular file (a {_file_kind(info.st_mode)})",
                advice="name a recording file",
            )
        with open(fd, "rb", buffering=0, closefd=False) as stream:
            data = stream.readall()
    except OSError as exc:
        raise _unreadable(file, exc) from None
    finally:
        os.close(fd)
    return data, info


def _unreadable(file: Path, exc: OSError) -> RecordingFileError:
    return RecordingFileError(
        str(file), f"cannot read it ({exc.strerror or exc})", advice="check its permissions"
    )


def _file_kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


def parse_recording(
    path: str | os.PathLike[str], data: bytes, *, validate_events: bool = True
) -> Recording:
    """:func:`read_recording` on bytes already read from ``path`` (named in errors)."""
    # Parsing allocates many small objects that all stay alive: the cyclic collector would
    # only rescan them over and over (a third of the load time on a large recording).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _Reader(Path(path), validate_events).parse(data)
    finally:
        if collecting:
            gc.enable()


class _Reader:
    def __init__(self, path: Path, validate_events: bool) -> None:
        self.path = path
        self.validate_events = validate_events
        self.header: dict[str, Any] | None = None
        self.calls: list[RecordedCall] = []
        self.ended: set[int] = set()

    def fail(self, line: int, problem: str, call_index: int | None = None) -> RecordingFileError:
        return RecordingFileError(str(self.path), problem, line=line, call_index=call_index)

    def parse(self, data: bytes) -> Recording:
        lines = data.split(b"\n")
        last = len(lines)
        for number, raw in enumerate(lines, start=1):
            text = raw[:-1] if raw.endswith(b"\r") else raw
            if not text.strip():
                continue
            try:
                row = orjson.loads(text)
            except orjson.JSONDecodeError as exc:
                if number == last:
                    break  # a final line without its newline: a write cut short by a crash
                if "depth" in exc.msg and json_text_may_exceed_nesting_limit(text):
                    raise self.fail(number, TOO_DEEP) from None  # past orjson's own limit
                raise self.fail(number, f"not valid JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise self.fail(number, "a row must be a JSON object")
            # Counting brackets is cheap; only a row with more than the limit may nest that
            # deep, and only such a row is walked.
            if json_text_may_exceed_nesting_limit(text) and exceeds_nesting_limit(row):
                call_index = row.get("call_index")
                raise self.fail(number, TOO_DEEP, call_index if type(call_index) is int else None)
            self.add_row(number, row)
        if self.header is None:
            raise RecordingFileError(
                str(self.path),
                "empty file: no header row",
                line=1,
                advice="this is not an openprogram recording",
            )
        return Recording(self.path, self.header, self.calls)

    def add_row(self, number: int, row: dict[str, Any]) -> None:
        kind = row.get("type")
        if self.header is None and kind != "header":
            raise RecordingFileError(
                str(self.path),
                f"the first row must be the header, found type {kind!r}",
                line=number,
                advice="this is not an openprogram recording",
            )
        if kind == "header":
            self.add_header(number, row)
        elif kind == "request":
            self.add_request(number, row)
        elif kind == "event":
            self.add_event(number, row)
        elif kind == "call_end":
            self.add_call_end(number, row)
        else:
            raise self.fail(number, f"unknown row type {kind!r}")

    def add_header(self, number: int, row: dict[str, Any]) -> None:
        if self.header is not None:
            raise self.fail(number, "a second header row")
        version = row.get("format_version")
        if type(version) is not int or version != RECORDING_FORMAT_VERSION:
            raise RecordingFileError(
                str(self.path),
                f"format_version {version!r}, but this openprogram reads format_version "
                f"{RECORDING_FORMAT_VERSION}",
                line=number,
                advice="re-record it with this openprogram, or use the version that wrote it",
            )
        self.header = row

    def index(self, number: int, row: dict[str, Any], name: str) -> int:
        value = row.get(name)
        if type(value) is not int or value < 0:
            raise self.fail(number, f"{name} must be a whole number >= 0, found {value!r}")
        return value

    def open_call(self, number: int, row: dict[str, Any], kind: str) -> RecordedCall:
        call_index = self.index(number, row, "call_index")
        if call_index >= len(self.calls):
            raise self.fail(number, f"{kind} row for a call with no request row", call_index)
        if call_index in self.ended:
            raise self.fail(number, f"{kind} row after the call's call_end", call_index)
        return self.calls[call_index]

    def add_request(self, number: int, row: dict[str, Any]) -> None:
        call_index = self.index(number, row, "call_index")
        expected = len(self.calls)
        if call_index < expected:
            raise self.fail(number, f"duplicate request row for call {call_index}", call_index)
        if call_index > expected:
            raise self.fail(
                number, f"call_index {call_index} skips ahead: expected {expected}", call_index
            )
        for section in REQUEST_SECTIONS:
            if not isinstance(row.get(section), dict):
                raise self.fail(number, f"request field {section!r} must be an object", call_index)
        request = {section: row[section] for section in REQUEST_SECTIONS}
        self.calls.append(RecordedCall(call_index=call_index, line=number, request=request))

    def add_event(self, number: int, row: dict[str, Any]) -> None:
        call = self.open_call(number, row, "event")
        event_index = self.index(number, row, "event_index")
        if event_index != len(call.event_rows):
            raise self.fail(
                number,
                f"event_index {event_index} out of order: expected {len(call.event_rows)}",
                call.call_index,
            )
        payload = row.get("event")
        if not isinstance(payload, dict):
            raise self.fail(number, "event field must be an object", call.call_index)
        event_type = payload.get("type")
        if not isinstance(event_type, str) or event_type not in EVENT_TYPES:
            raise self.fail(number, f"unknown event type {event_type!r}", call.call_index)
        if self.validate_events:
            # Imported here: the event models are costly to build, and summaries (list,
            # status) read recordings without them.
            from openprogram.providers.events import event_from_json

            try:
                call.events.append(event_from_json(payload))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(part) for part in first["loc"][1:]) or "event"
                raise self.fail(
                    number,
                    f"{event_type} event field {where}: {first['msg']}",
                    call.call_index,
                ) from None
        call.event_rows.append(payload)

    def add_call_end(self, number: int, row: dict[str, Any]) -> None:
        call = self.open_call(number, row, "call_end")
        count = self.index(number, row, "event_count")
        if count != len(call.event_rows):
            raise self.fail(
                number,
                f"event_count {count} but {len(call.event_rows)} event rows were recorded",
                call.call_index,
            )
        outcome = row.get("outcome")
        if not isinstance(outcome, str) or outcome not in OUTCOMES:
            raise self.fail(
                number,
                f"outcome {outcome!r} is not one of {', '.join(sorted(OUTCOMES))}",
                call.call_index,
            )
        if outcome == "error":
            error = row.get("error")
            if not (
                isinstance(error, dict)
                and isinstance(error.get("type"), str)
                and isinstance(error.get("message"), str)
            ):
                raise self.fail(
                    number, 'an error outcome needs error: {"type", "message"}', call.call_index
                )
            call.error = RecordedError(error["type"], error["message"])
        call.outcome = cast(Outcome, outcome)
        self.ended.add(call.call_index)
