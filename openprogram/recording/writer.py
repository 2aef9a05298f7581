"""Writing calls into a recording, safely, from many threads and processes.

**One writer per recording per process.** Every recorder writing to a path (the provider
boundary's, the HTTP boundary's, the tape boundary's) asks :func:`writer_for` for the path's
one :class:`RecordingWriter`, so all the calls made in one process form one call sequence in
one file. Each line goes through the file's
:class:`~openprogram.recording.open_recording.OpenRecording`, which appends it as one write
under the file lock, repairs a tail a writer that died cut off, and refuses a file that is
not a recording this openprogram may append to. What the writer adds, under its own lock:

* **A replaced file is followed.** Once per call, the path's device and inode are compared
  with the open descriptor's: a recording deleted or replaced since (a notebook running
  ``path.unlink()`` between two runs) is reopened, and a new file gets its header, instead
  of the call going to an inode nobody will read. A call already under way finishes in the
  file it started in.
* **Only calls the file may hold are appended to it**: calls redacted with the user
  redaction its header records, and a call of a boundary newer than the provider registry
  (HTTP) only to a file whose header announces that boundary's feature, so that an
  openprogram too old to read it refuses the whole file with the advice to upgrade instead
  of stumbling on the row.

**One call's rows.** Any boundary's codec writes a call the same way:
:meth:`RecordingWriter.open_call` writes the request row (``{"boundary": "http", "method":
…}``, or a provider call's three sections) with the next free call index and returns a
:class:`CallWriter`, whose :meth:`~CallWriter.write_event` appends the call's events in order
and whose :meth:`~CallWriter.end_call` writes its one ``call_end``, holding the call's digest
(:mod:`~openprogram.recording.call_digest`; an id the responses of the calls it wrote into
the file made up is renamed inside a later request's text, and the digest says how many it
knew: :mod:`~openprogram.recording.minted_ids`). A request that extends one this process wrote
into the same file is stored against it, only its new items redacted and written
(:mod:`~openprogram.recording.request_delta`), when the file's header announces the
feature; a file followed after it was replaced starts with no earlier request. A call made
while a taped call is being recorded (a tool calling a model or a web API) gets ``"within":
"<tape>"`` in its request row (:func:`~openprogram.recording.tape_rows.enclosing_tape`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import RecordingFileError
from openprogram.recording.call_digest import CallDigest
from openprogram.recording.format import (
    BOUNDARY_FEATURES,
    Outcome,
    RecordedError,
    encode_recordable_row,
)
from openprogram.recording.minted_ids import MintedIds
from openprogram.recording.open_recording import (
    REQUEST_ROW_START,
    START_ANEW,
    FileLock,
    OpenRecording,
    append_line,
    open_for_appending,
    prepare_to_append,
    repaired_size,
)
from openprogram.recording.redaction import RequestRedactor
from openprogram.recording.tape_rows import enclosing_tape

if TYPE_CHECKING:
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.recording.user_redaction import UserRedaction

__all__ = [
    "CallWriter",
    "RecordingWriter",
    "close_recording_writers",
    "forget_writer",
    "recorded_error",
    "writer_for",
]


class RecordingWriter:
    """Appends rows to one recording; one per file per process (see :func:`writer_for`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.existing_calls = 0
        """How many calls the file held when this process last opened it."""
        self.user_redaction: UserRedaction | None = None
        """The user redaction every call recorded into the file is redacted with (set it
        before the first call: a new file's header records its fingerprint, and a file whose
        header records another one is not appended to)."""
        self._lock = threading.Lock()
        self._file: OpenRecording | None = None
        self._new_session = False
        self._minted: tuple[OpenRecording | None, MintedIds] = (None, MintedIds())
        """The ids the responses of the calls this writer wrote into a file made up (an id
        an earlier call made up is renamed inside a later request's text)."""

    def mark_new_session(self) -> None:
        """Say that the calls recorded from now on are a new session appended to the calls
        the file holds: the first of them to end marks its ``call_end`` (``new_session``), so
        that a replay left incomplete can say the file holds several sessions."""
        with self._lock:
            self._new_session = True

    def _take_new_session(self) -> bool:
        with self._lock:
            marked, self._new_session = self._new_session, False
        return marked

    def open(self) -> int:
        """Open (creating the file with its header if needed); returns ``existing_calls``.

        Reopens a file deleted or replaced since it was last opened. Raises
        :class:`RecordingFileError` when the file cannot be written, or is not a recording
        this openprogram may append to (nothing is ever appended to such a file)."""
        with self._lock:
            self._check_fingerprint(self._current(follow_replaced=True))
            return self.existing_calls

    def open_call(
        self,
        request: dict[str, Any],
        *,
        checked: bool = False,
        redact: RequestRedactor | None = None,
        redaction: Hashable = None,
    ) -> CallWriter:
        """Write a call's request row with the next free call index; returns the
        :class:`CallWriter` its events and its end go through.

        ``request`` holds the row's fields after ``type`` and ``call_index``: a provider
        call's ``model``, ``context`` and ``options``, or ``boundary`` and the sections of its
        boundary. ``redact`` redacts the sections (the boundary's redactor: only what the
        row stores is redacted, the items a request shares with an earlier one are not
        redacted again); without it ``request`` is stored as it is, already redacted.
        ``redaction`` tells redactors apart (:attr:`SecretRedactor.rules`): items are shared
        with an earlier request only if it was redacted alike.

        A request that extends an earlier request of this writer is stored against it (see
        :mod:`~openprogram.recording.request_delta`) in a file that announces the feature.
        Raises :class:`~openprogram.recording.format.UnrecordableValueError`, writing
        nothing, for a request a recording cannot hold (``checked``: the caller already made
        sure), and :class:`RecordingFileError` for a boundary whose feature the file's
        header does not announce."""
        call_index, file, digest = self._begin(request, checked, redact, redaction)
        return CallWriter(self, file, call_index, digest)

    def start_call(self, request: dict[str, Any]) -> int:
        """Write a request row (already redacted) with the next free call index; returns
        that index (rows after it go through :meth:`write_row`; :meth:`open_call` keeps track
        of them instead)."""
        return self._begin(request, False, None, None)[0]

    def begin_call(
        self, request: dict[str, Any], *, checked: bool = False
    ) -> tuple[int, OpenRecording]:
        """:meth:`start_call`, also returning the file the call's rows must go to (give it
        to :meth:`write_row`). Raises :class:`~openprogram.recording.format.
        UnrecordableValueError`, writing nothing, for a request a recording cannot hold
        (``checked``: the caller already made sure with ``check_recordable``)."""
        call_index, file, _ = self._begin(request, checked, None, None)
        return call_index, file

    def _begin(
        self,
        request: dict[str, Any],
        checked: bool,
        redact: RequestRedactor | None,
        redaction: Hashable,
    ) -> tuple[int, OpenRecording, CallDigest]:
        boundary = request.get("boundary", "provider")
        sections = {
            key: value for key, value in request.items() if key not in ("boundary", "within")
        }
        # Made while a taped call is recorded: its tape covers it (replay does not ask for it
        # when the tape is served).
        within = request.get("within", enclosing_tape())
        feature = BOUNDARY_FEATURES.get(boundary if isinstance(boundary, str) else "")
        with self._lock:
            file = self._current(follow_replaced=True)
            self._check_fingerprint(file)
            if feature is not None and feature not in file.features:
                raise RecordingFileError(
                    str(self.path),
                    f"cannot append {request['boundary']} calls to it: its header does not "
                    f"announce the {feature!r} feature (an older openprogram created it)",
                    line=1,
                    advice=START_ANEW,
                )
            stored = file.store(boundary, sections, redact or _as_given, redaction)
            if self._minted[0] is not file:  # a file followed after it was replaced
                self._minted = (file, MintedIds())
            minted = self._minted[1]
            # The index, known only under the file lock, is put in front.
            body = encode_recordable_row(str(self.path), stored.row_fields(within), checked=checked)
            with FileLock(file.fd):
                size = prepare_to_append(self.path, file)
                call_index = file.next_call_index
                start = b"%s%d" % (REQUEST_ROW_START, call_index)
                line = start + (b"," + body[1:] if len(body) > 3 else b"}\n")
                append_line(self.path, file, line, size)
                file.next_call_index = call_index + 1
            file.bases.remember(stored, call_index)
            return call_index, file, CallDigest.of_stored(stored, line, minted, call_index)

    def write_row(
        self, row: dict[str, Any], file: OpenRecording | None = None, *, checked: bool = False
    ) -> bytes:
        """Append one row as one whole line (to ``file``, the one its call started in);
        returns the line.

        Raises :class:`~openprogram.recording.format.UnrecordableValueError`, writing nothing, for a
        row holding a value a recording cannot hold (``checked``: the caller already made sure)."""
        line = encode_recordable_row(str(self.path), row, checked=checked)
        with self._lock:
            if file is None or not file.usable:
                file = self._current(follow_replaced=False)
            with FileLock(file.fd):
                append_line(self.path, file, line, repaired_size(self.path, file))
        return line

    def write_rows(
        self, rows: list[dict[str, Any]], file: OpenRecording, *, checked: bool = False
    ) -> list[bytes]:
        """Append ``rows`` (of the call started in ``file``) as whole lines in one write
        under one lock — what a network read that brought several events costs once;
        returns their lines. Raises as :meth:`write_row` does, writing none of them."""
        lines = [encode_recordable_row(str(self.path), row, checked=checked) for row in rows]
        with self._lock:
            if not file.usable:
                file = self._current(follow_replaced=False)
            with FileLock(file.fd):
                append_line(self.path, file, b"".join(lines), repaired_size(self.path, file))
        return lines

    def write_feature_row(self, row: dict[str, Any], feature: str) -> None:
        """Append a row of a kind added by header ``feature`` (a ``tape`` row: ``tapes``),
        to the file the path names now; refused, writing nothing, with
        :class:`RecordingFileError` when the file's header does not announce the feature (an
        older openprogram created it and could not read the row)."""
        line = encode_recordable_row(str(self.path), row)
        with self._lock:
            file = self._current(follow_replaced=True)
            if feature not in file.features:
                raise RecordingFileError(
                    str(self.path),
                    f"cannot append {row.get('type')} rows to it: its header does not announce "
                    f"the {feature!r} feature (an older openprogram created it)",
                    line=1,
                    advice=START_ANEW,
                )
            with FileLock(file.fd):
                append_line(self.path, file, line, repaired_size(self.path, file))

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
            self._file = None

    @property
    def _fingerprint(self) -> str | None:
        user = self.user_redaction
        return None if user is None else user.fingerprint

    # --- under self._lock ----------------------------------------------------------------

    def _check_fingerprint(self, file: OpenRecording) -> None:
        """Refuse to append calls redacted otherwise than the file's header says."""
        fingerprint = self._fingerprint
        if fingerprint != file.fingerprint:
            recorded = "no user redaction" if file.fingerprint is None else file.fingerprint
            now = "none" if fingerprint is None else fingerprint
            raise RecordingFileError(
                str(self.path),
                "cannot append to it: its calls were recorded with another user redaction "
                f"(its header records {recorded}; this run has {now})",
                line=1,
                advice=f"{START_ANEW}, with the redaction patterns and functions it was "
                "recorded with, or replace the file",
            )

    def _current(self, *, follow_replaced: bool) -> OpenRecording:
        file = self._file
        if file is not None and file.usable and not (follow_replaced and not file.is_at(self.path)):
            return file
        # Calls still writing to the replaced file keep it open through their reference.
        self._file = None
        file = open_for_appending(self.path, self._fingerprint)
        self._file = file
        self.existing_calls = file.next_call_index
        return file


def _as_given(sections: dict[str, Any]) -> dict[str, Any]:
    return sections


class CallWriter:
    """The rows of one call being recorded: its events, in order, then exactly one
    ``call_end``. Made by :meth:`RecordingWriter.open_call`; every row goes to the file the
    call started in, even if the path is replaced meanwhile."""

    __slots__ = ("call_index", "digest", "event_count", "file", "writer")

    def __init__(
        self,
        writer: RecordingWriter,
        file: OpenRecording,
        call_index: int,
        digest: CallDigest | None = None,
    ) -> None:
        self.writer = writer
        self.file: OpenRecording | None = file
        """None once the call has ended."""
        self.call_index = call_index
        self.event_count = 0
        self.digest = digest
        """The call's digest as its rows are written, stored in its ``call_end``."""

    @property
    def ended(self) -> bool:
        return self.file is None

    def write_event(self, event: dict[str, Any], *, checked: bool = False) -> None:
        """Append the call's next event (its JSON form, already redacted) as one whole line.

        Raises :class:`~openprogram.recording.format.UnrecordableValueError`, writing
        nothing, for an event a recording cannot hold (``checked``: the caller already made
        sure), and ``RuntimeError`` once the call has ended."""
        if self.file is None:
            raise RuntimeError(f"call {self.call_index} has ended: it takes no more events")
        row = {
            "type": "event",
            "call_index": self.call_index,
            "event_index": self.event_count,
            "event": event,
        }
        line = self.writer.write_row(row, self.file, checked=checked)
        self.event_count += 1
        if self.digest is not None:
            self.digest.add_event(event, line)

    def write_events(self, events: list[dict[str, Any]], *, checked: bool = False) -> None:
        """:meth:`write_event` of each of ``events``, in order, in one write."""
        if len(events) < 2:
            for event in events:
                self.write_event(event, checked=checked)
            return
        if self.file is None:
            raise RuntimeError(f"call {self.call_index} has ended: it takes no more events")
        first = self.event_count
        rows = [
            {"type": "event", "call_index": self.call_index, "event_index": first + n, "event": e}
            for n, e in enumerate(events)
        ]
        lines = self.writer.write_rows(rows, self.file, checked=checked)
        self.event_count += len(events)
        if self.digest is not None:
            for event, line in zip(events, lines, strict=True):
                self.digest.add_event(event, line)

    def end_call(self, outcome: Outcome, *, error: RecordedError | None = None) -> None:
        """Write the call's ``call_end`` (``error``, already redacted, for outcome
        ``error``); a call ends once, so any later end is ignored."""
        if self.file is None:
            return
        row: dict[str, Any] = {
            "type": "call_end",
            "call_index": self.call_index,
            "event_count": self.event_count,
            "outcome": outcome,
        }
        if error is not None:
            row["error"] = error.to_row()
        if self.writer._take_new_session():
            row["new_session"] = True
        if self.digest is not None:
            row["digest"] = self.digest.finish(outcome, error)
        file, self.file = self.file, None  # ended even if the write fails: never twice
        self.writer.write_row(row, file, checked=True)


_writers: dict[str, RecordingWriter] = {}
_writers_lock = threading.Lock()


def writer_for(path: str | os.PathLike[str]) -> RecordingWriter:
    """The one writer this process uses for ``path``."""
    resolved = Path(path).resolve()
    with _writers_lock:
        writer = _writers.get(str(resolved))
        if writer is None:
            writer = _writers[str(resolved)] = RecordingWriter(resolved)
        return writer


def forget_writer(path: str | os.PathLike[str]) -> None:
    """Close and drop the writer for ``path`` (a harness done with one recording)."""
    resolved = str(Path(path).resolve())
    with _writers_lock:
        writer = _writers.pop(resolved, None)
    if writer is not None:
        writer.close()


def close_recording_writers() -> None:
    """Close every writer (tests; a process that exits needs not call it)."""
    with _writers_lock:
        for writer in _writers.values():
            writer.close()
        _writers.clear()


def _exception_type_name(error: BaseException) -> str:
    """``ConnectionResetError`` for a built-in exception, ``module.QualName`` for another."""
    cls = type(error)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def recorded_error(error: BaseException, redactor: SecretRedactor) -> RecordedError:
    """``error`` as a ``call_end`` records it: its type name, its redacted message and the
    message of the operating system's error it wraps, when that says more."""
    message = redactor.redact_text(str(error))
    beneath = _innermost_os_error(error)
    reason = None if beneath is None else redactor.redact_text(str(beneath))
    return RecordedError(
        _exception_type_name(error), message, reason if reason and reason != message else None
    )


def _innermost_os_error(error: BaseException) -> OSError | None:
    """The last ``OSError`` down ``error``'s chain — the errors of a group (anyio groups a
    host's addresses), the cause, the arguments (httpcore wraps an error as its argument) —
    as an SDK reading the chain finds it; None when there is none beneath ``error``."""
    found: OSError | None = None
    seen: set[int] = {id(error)}
    current: BaseException | None = error
    while current is not None:
        wrapped = [*getattr(current, "exceptions", ()), current.__cause__, *current.args]
        current = next((inner for inner in wrapped if isinstance(inner, BaseException)), None)
        if current is None or id(current) in seen:
            break
        seen.add(id(current))
        if isinstance(current, OSError) and str(current):
            found = current
    return found
