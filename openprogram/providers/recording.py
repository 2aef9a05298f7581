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

This module holds the format's definitions and its public entry points. The file door
(``recording_file``), the strict parser (``recording_reader``), the writer
(``recording_writer``), redaction and the first-difference walk live in their own modules;
the names callers need are re-exported here.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, get_args

import orjson

from openprogram import __version__
from openprogram.providers.difference import (
    NON_DETERMINISTIC_FIELD_NAMES,
    Difference,
    find_first_difference,
)
from openprogram.providers.recording_file import read_recording_bytes, read_recording_file
from openprogram.providers.redaction import (
    REDACTION_VERSION,
    SECRET_FIELD_NAMES,
    remove_secret_values,
)

if TYPE_CHECKING:
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.types import Context, Model, StreamOptions

__all__ = [
    "KNOWN_FEATURES",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "RECORDING_FORMAT_VERSION",
    "SECRET_FIELD_NAMES",
    "WRITTEN_FEATURES",
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
"""The version this openprogram writes; it reads every version from 1 up to this one.

Bumped when the meaning of a row or field changes, or a field becomes required. New row
types and optional fields are additive: they are announced as header ``features`` instead.
"""

KNOWN_FEATURES: frozenset[str] = frozenset()
"""The header ``features`` this openprogram reads: the row types and optional fields added
since its format version, each by name. A recording announcing any other was written by a
newer openprogram and is refused, with the advice to upgrade."""

WRITTEN_FEATURES: tuple[str, ...] = ()
"""The features a file created by this openprogram announces (it may write them)."""

UPGRADE = "it was written by a newer openprogram: upgrade openprogram to read it"

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
    if WRITTEN_FEATURES:
        header["features"] = list(WRITTEN_FEATURES)
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


def parse_recording(
    path: str | os.PathLike[str], data: bytes, *, validate_events: bool = True
) -> Recording:
    """:func:`read_recording` on bytes already read from ``path`` (named in errors)."""
    from openprogram.providers.recording_reader import RecordingParser

    # Parsing allocates many small objects that all stay alive: the cyclic collector would
    # only rescan them over and over (a third of the load time on a large recording).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return RecordingParser(Path(path), validate_events).parse(data)
    finally:
        if collecting:
            gc.enable()
