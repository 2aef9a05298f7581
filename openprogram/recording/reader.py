"""The strict reader: :func:`read_recording` and :func:`parse_recording`.

It checks every row against the format (``docs/recording-format.md``) and raises
:class:`RecordingFileError` naming the file, the line and the call at the first problem. It
accepts ``\r\n`` line ends and files of any permission mode; an incomplete last line (a
write cut short) is ignored, so the call it belonged to reads as truncated. A request row
that names a ``base`` is rebuilt whole from the earlier call it names, sharing that call's
items (:mod:`~openprogram.recording.request_delta`).

The rows of both boundaries are checked here, on their JSON values. A provider call's events can
also be decoded into the provider's event models as they are read: the provider codec passes its
decoder (``provider_events``), which raises :class:`EventFieldError` for an event it cannot decode;
the reader then names the line and the call. The HTTP rows are checked field by field by
:mod:`~openprogram.recording.http_rows`, the tape rows by :mod:`~openprogram.recording.tape_rows`.

**The one door** through which openprogram reads a recording's bytes is
:func:`read_recording_bytes`. Only a regular file is read: the path is opened non-blocking
(opening a FIFO that has no writer would otherwise wait for one) and checked with ``fstat``
before a byte is read, so a FIFO, a device (``/dev/zero``) or a folder is refused at once
instead of blocking or filling memory. The strict parser reads through it, and so does
anything else that reads a recording's bytes (summaries, ``show``, ``diff``)."""

from __future__ import annotations

import gc
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import orjson

from openprogram.errors import RecordingFileError
from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    TOO_DEEP,
    exceeds_nesting_limit,
    json_text_may_exceed_nesting_limit,
)
from openprogram.recording.format import (
    HTTP_EVENT_TYPES,
    KNOWN_FEATURES,
    OUTCOMES,
    PROVIDER_EVENT_TYPES,
    PROVIDER_REQUEST_SECTIONS,
    RECORDING_FORMAT_VERSION,
    UPGRADE,
    Outcome,
    RecordedCall,
    RecordedError,
    Recording,
    TapeEntry,
)
from openprogram.recording.http_rows import (
    http_event_problem,
    http_request_problem,
    http_request_sections,
)
from openprogram.recording.not_recorded import gathered_connections, not_recorded_problem
from openprogram.recording.request_delta import BASE_FIELD, BaseProblem, rebuild_request
from openprogram.recording.tape_rows import tape_entry_from_row, tape_row_problem

__all__ = [
    "EventDecoder",
    "EventFieldError",
    "RecordingParser",
    "file_kind",
    "parse_recording",
    "read_recording",
    "read_recording_bytes",
    "read_recording_file",
]


class EventFieldError(ValueError):
    """An event an event decoder cannot decode: ``where`` is the field (``event`` for the
    whole event), ``problem`` what is wrong with it."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


EventDecoder = Callable[[dict[str, Any]], Any]
"""Turns a provider event's JSON form into the provider's event object; raises
:class:`EventFieldError`."""


def read_recording(
    path: str | os.PathLike[str], *, provider_events: EventDecoder | None = None
) -> Recording:
    """Parse and check a whole recording; raises :class:`RecordingFileError` on any problem.

    ``provider_events`` decodes each provider call's events into ``RecordedCall.events``
    (``openprogram.provider_boundary.codec.read_recording`` passes the provider's event models);
    without it only the rows are checked and kept."""
    return parse_recording(path, read_recording_bytes(path), provider_events=provider_events)


def parse_recording(
    path: str | os.PathLike[str], data: bytes, *, provider_events: EventDecoder | None = None
) -> Recording:
    """:func:`read_recording` on bytes already read from ``path`` (named in errors)."""
    # Parsing allocates many small objects that all stay alive: the cyclic collector would
    # only rescan them over and over (a third of the load time on a large recording).
    collecting = gc.isenabled()
    gc.disable()
    try:
        return RecordingParser(Path(path), provider_events).parse(data)
    finally:
        if collecting:
            gc.enable()


class RecordingParser:
    """One pass over a recording's bytes: :meth:`parse` returns the :class:`Recording`."""

    def __init__(self, path: Path, provider_events: EventDecoder | None = None) -> None:
        self.path = path
        self.provider_events = provider_events
        self.header: dict[str, Any] | None = None
        self.calls: list[RecordedCall] = []
        self.ended: set[int] = set()
        self.tapes: list[TapeEntry] = []
        self.tape_lengths: dict[str, int] = {}
        self.not_recorded: list[dict[str, Any]] = []

    def fail(self, line: int, problem: str, call_index: int | None = None) -> RecordingFileError:
        return RecordingFileError(str(self.path), problem, line=line, call_index=call_index)

    def parse(self, data: bytes) -> Recording:
        lines = data.split(b"\n")
        last = len(lines)
        add_event = self.add_event
        for number, raw in enumerate(lines, start=1):
            text = raw[:-1] if raw.endswith(b"\r") else raw
            if not text.startswith(b"{") and not text.strip():
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
            if (
                len(text) > MAX_NESTING_DEPTH
                and json_text_may_exceed_nesting_limit(text)
                and exceeds_nesting_limit(row)
            ):
                call_index = row.get("call_index")
                raise self.fail(number, TOO_DEEP, call_index if type(call_index) is int else None)
            if row.get("type") == "event" and self.header is not None:
                add_event(number, row)
            else:
                self.add_row(number, row)
        if self.header is None:
            raise RecordingFileError(
                str(self.path),
                "empty file: no header row",
                line=1,
                advice="this is not an openprogram recording",
            )
        return Recording(
            self.path,
            self.header,
            self.calls,
            events_decoded=self.provider_events is not None,
            tapes=self.tapes,
            not_recorded=self.not_recorded,
        )

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
        elif kind == "tape":
            self.add_tape(number, row)
        elif kind == "not_recorded":
            problem = not_recorded_problem(row)
            if problem is not None:
                raise self.fail(number, problem)
            gathered_connections(self.not_recorded, row)
        else:
            raise RecordingFileError(
                str(self.path), f"unknown row type {kind!r}", line=number, advice=UPGRADE
            )

    def add_tape(self, number: int, row: dict[str, Any]) -> None:
        problem = tape_row_problem(row)
        if problem is not None:
            raise self.fail(number, problem)
        index = self.tape_lengths.get(row["tape"], 0)
        self.tape_lengths[row["tape"]] = index + 1
        self.tapes.append(tape_entry_from_row(row, line=number, index=index))

    def add_header(self, number: int, row: dict[str, Any]) -> None:
        if self.header is not None:
            raise self.fail(number, "a second header row")
        version = row.get("format_version")
        readable = (
            "format_version 1"
            if RECORDING_FORMAT_VERSION == 1
            else f"format_version 1 to {RECORDING_FORMAT_VERSION}"
        )
        if type(version) is not int or not 1 <= version <= RECORDING_FORMAT_VERSION:
            newer = type(version) is int and version > RECORDING_FORMAT_VERSION
            raise RecordingFileError(
                str(self.path),
                f"format_version {version!r}, but this openprogram reads {readable}",
                line=number,
                advice=UPGRADE if newer else "this is not an openprogram recording",
            )
        features = row.get("features", [])
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            raise self.fail(number, f"features must be a list of names, found {features!r}")
        for feature in features:
            if feature not in KNOWN_FEATURES:
                raise RecordingFileError(
                    str(self.path),
                    f"uses feature {feature!r}, which this openprogram does not know",
                    line=number,
                    advice=UPGRADE,
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
        within = row.get("within")
        if within is not None and (not isinstance(within, str) or not within):
            raise self.fail(number, f"within must name a tape, found {within!r}", call_index)
        boundary = row.get("boundary", "provider")
        if boundary == "http":
            problem = http_request_problem(row)
            if problem is not None:
                raise self.fail(number, problem, call_index)
            request = self.rebuilt(number, row, "http", http_request_sections(row), call_index)
            call = RecordedCall(call_index, number, request, boundary="http", within=within)
            self.calls.append(call)
            return
        if boundary != "provider":
            raise RecordingFileError(
                str(self.path),
                f"request of unknown boundary {boundary!r}",
                line=number,
                call_index=call_index,
                advice=UPGRADE,
            )
        for section in PROVIDER_REQUEST_SECTIONS:
            if not isinstance(row.get(section), dict):
                raise self.fail(number, f"request field {section!r} must be an object", call_index)
        request = {section: row[section] for section in PROVIDER_REQUEST_SECTIONS}
        request = self.rebuilt(number, row, "provider", request, call_index)
        self.calls.append(
            RecordedCall(call_index=call_index, line=number, request=request, within=within)
        )

    def rebuilt(
        self,
        number: int,
        row: dict[str, Any],
        boundary: str,
        request: dict[str, Any],
        call_index: int,
    ) -> dict[str, Any]:
        """``request`` whole: as stored, or rebuilt from the call its ``base`` names."""
        if BASE_FIELD not in row:
            return request
        try:
            return rebuild_request(boundary, request, row[BASE_FIELD], self.base_of, call_index)
        except BaseProblem as exc:
            raise self.fail(number, f"request {exc}", call_index) from None

    def base_of(self, call_index: int) -> tuple[str, dict[str, Any]]:
        call = self.calls[call_index]
        return call.boundary, call.request

    def add_event(self, number: int, row: dict[str, Any]) -> None:
        # Most of a recording: the next event of an open provider call, checked inline;
        # anything else takes the path that names the problem.
        call_index = row.get("call_index")
        calls = self.calls
        if type(call_index) is int and 0 <= call_index < len(calls):
            call = calls[call_index]
            rows = call.event_rows
            payload = row.get("event")
            if (
                call.boundary == "provider"
                and call.outcome is None
                and row.get("event_index") == len(rows)
                and type(row.get("event_index")) is int
                and type(payload) is dict
                and type(event_type := payload.get("type")) is str
                and event_type in PROVIDER_EVENT_TYPES
            ):  # (a call without an outcome has not ended)
                if self.provider_events is not None:
                    try:
                        call.events.append(self.provider_events(payload))
                    except EventFieldError as exc:
                        raise self.fail(
                            number,
                            f"{event_type} event field {exc.where}: {exc.problem}",
                            call_index,
                        ) from None
                rows.append(payload)
                return
        self.add_any_event(number, row)

    def add_any_event(self, number: int, row: dict[str, Any]) -> None:
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
        if call.boundary == "http":
            self.check_http_event(number, call, payload)
        elif not isinstance(event_type, str) or event_type not in PROVIDER_EVENT_TYPES:
            if isinstance(event_type, str) and event_type in HTTP_EVENT_TYPES:
                raise self.fail(number, f"{event_type} event in a provider call", call.call_index)
            raise self.fail(number, f"unknown event type {event_type!r}", call.call_index)
        elif self.provider_events is not None:
            try:
                call.events.append(self.provider_events(payload))
            except EventFieldError as exc:
                raise self.fail(
                    number, f"{event_type} event field {exc.where}: {exc.problem}", call.call_index
                ) from None
        call.event_rows.append(payload)

    def check_http_event(self, number: int, call: RecordedCall, payload: dict[str, Any]) -> None:
        event_type = payload.get("type")
        if not isinstance(event_type, str) or event_type not in HTTP_EVENT_TYPES:
            if isinstance(event_type, str) and event_type in PROVIDER_EVENT_TYPES:
                raise self.fail(number, f"{event_type} event in an HTTP call", call.call_index)
            raise self.fail(number, f"unknown event type {event_type!r}", call.call_index)
        problem = http_event_problem(payload, call.event_rows)
        if problem is not None:
            raise self.fail(number, problem, call.call_index)

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
            call.error = RecordedError.from_row(row.get("error"))
            if call.error is None:
                raise self.fail(
                    number, 'an error outcome needs error: {"type", "message"}', call.call_index
                )
        call.outcome = cast(Outcome, outcome)
        call.starts_session = row.get("new_session") is True
        self.ended.add(call.call_index)


def read_recording_bytes(path: str | os.PathLike[str]) -> bytes:
    """The bytes of the recording at ``path``; the one way openprogram reads a recording.

    Only a regular file is read: a FIFO, a device (``/dev/zero``) or a folder is refused
    with :class:`RecordingFileError` ("not a regular file") without blocking or reading from
    it, as is a file that is missing or unreadable."""
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
                f"not a regular file (a {file_kind(info.st_mode)})",
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


def file_kind(mode: int) -> str:
    """What a file that is not a regular one is, by its ``st_mode``: ``FIFO``, ``directory``…"""
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
