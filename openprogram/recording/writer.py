"""Appending rows to a recording, safely, from many threads and processes.

Each line is one ``write`` on an ``O_APPEND`` descriptor under an exclusive ``flock``, so a
line is never interleaved with another writer's. The next call index is found by reading
only the bytes other writers appended since this process last looked, so the cost of a call
does not grow with the size of the file.

What a writer does before it appends, under the lock:

* **A cut-off last line is repaired.** Only a writer that died mid-write (SIGKILL, power
  loss) can leave a file that does not end in a newline, since every line is one write under
  the lock and a write that fails part-way is undone (truncated back to where its line
  started) before the error is raised. So a writer that finds such a tail removes it, or, if
  the tail is a whole JSON row lacking only its newline, completes it with ``\\n``. Without
  this the next row would be glued to the cut-off bytes and the file would stop reading.
* **A replaced file is followed.** Once per call, the path's device and inode are compared
  with the open descriptor's: a recording deleted or replaced since (a notebook running
  ``path.unlink()`` between two runs) is reopened, and a new file gets its header, instead
  of the call going to an inode nobody will read. A call already under way finishes in the
  file it started in.
* **Only a recording it may append to is appended to**: a regular file whose first line is a
  header of this openprogram's format version with no feature it does not know; and a call
  of a boundary newer than the provider registry (HTTP) only to a file whose header announces
  that boundary's feature, so that an openprogram too old to read it refuses the whole file
  with the advice to upgrade instead of stumbling on the row.

A call made while a taped call is being recorded (a tool calling a model or a web API) gets
``"within": "<tape>"`` in its request row (:mod:`openprogram.recording.enclosing_tape`).

Any boundary's codec writes a call the same way: :meth:`RecordingWriter.open_call` writes the
request row (``{"boundary": "http", "method": …}``, or a provider call's three sections) with
the next free call index and returns a :class:`CallWriter`, whose
:meth:`~CallWriter.write_event` appends the call's events in order and whose
:meth:`~CallWriter.end_call` writes its one ``call_end``, holding the call's digest. All
boundaries share one call sequence per file. A request that extends one this process wrote
into the same file is stored against it, only its new items redacted and written
(:mod:`~openprogram.recording.request_delta`), when the file's header announces the
feature; a file followed after it was replaced starts with no earlier request.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import threading
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.errors import RecordingFileError
from openprogram.private_files import PRIVATE_FILE_MODE, make_private_dirs
from openprogram.recording.call_digest import (
    CallDigest,
    DeterministicParts,
    request_text_with_parts,
)
from openprogram.recording.call_writer import CallWriter
from openprogram.recording.enclosing_tape import enclosing_tape
from openprogram.recording.format import (
    BOUNDARY_FEATURES,
    KNOWN_FEATURES,
    RECORDING_FORMAT_VERSION,
    WRITTEN_FEATURES,
    encode_row,
    new_header,
)
from openprogram.recording.nondeterministic import request_ignore_fields
from openprogram.recording.recordable import encode_recordable_row
from openprogram.recording.request_delta import (
    BASE_FIELD,
    DELTA_FEATURE,
    RequestBases,
    RequestRedactor,
    StoredRequest,
)

if TYPE_CHECKING:
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["CallWriter", "OpenRecording", "RecordingWriter"]  # CallWriter: re-exported

_REQUEST_ROW_START = b'{"type":"request","call_index":'
_HEADER_ROW_START = b'{"type":"header"'
_TAIL_CHUNK = 65_536
_START_ANEW = "re-record the session into a new file, or start a new recording"


class _FileLock:
    """An exclusive ``flock`` on a descriptor, as a context manager (class-based: cheaper
    than a generator on the per-event path)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __enter__(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc_info: object) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)


class OpenRecording:
    """One open descriptor of a recording file, and what this process has read of it.

    A call keeps the one it started in, so its rows stay together even if the path is
    replaced meanwhile; the descriptor is closed when nothing uses it any more.
    """

    __slots__ = (
        "bases",
        "dev",
        "end",
        "fd",
        "features",
        "fingerprint",
        "ino",
        "lines",
        "next_call_index",
        "pid",
        "scanned",
    )

    def __init__(self, fd: int, info: os.stat_result) -> None:
        self.fd = fd
        self.pid = os.getpid()
        self.dev, self.ino = info.st_dev, info.st_ino
        self.scanned = 0
        """Bytes of the file accounted for; always the end of a complete line."""
        self.lines = 0
        """Lines in the first ``scanned`` bytes (to name a line in errors)."""
        self.end = -1
        """The file's size right after this process's last append (-1: none yet)."""
        self.next_call_index = 0
        self.features: frozenset[str] = frozenset()
        """The features its header announces."""
        self.fingerprint: str | None = None
        """The ``redaction_fingerprint`` its header holds (None: no user redaction)."""
        self.bases = RequestBases()
        """The requests this process wrote into it, which the next ones may extend."""

    @property
    def usable(self) -> bool:
        """Open, and opened by this process (a child after fork opens its own: the parent's
        descriptor would share its lock)."""
        return self.fd >= 0 and self.pid == os.getpid()

    def is_at(self, path: Path) -> bool:
        """Whether ``path`` still names this file (not deleted, not replaced)."""
        try:
            info = os.stat(path)
        except FileNotFoundError:
            return False
        except OSError:
            return True  # cannot tell; writing will say what is wrong
        return (info.st_dev, info.st_ino) == (self.dev, self.ino)

    def store(
        self,
        boundary: str,
        sections: dict[str, Any],
        redact: RequestRedactor,
        redaction: Hashable,
    ) -> StoredRequest:
        """A request's sections as its row stores them: against an earlier request of this
        process when the header announces the feature, else whole."""
        # Without the feature, against nothing: the request is stored whole.
        bases = self.bases if DELTA_FEATURE in self.features else RequestBases()
        names = request_ignore_fields(boundary)
        parts = DeterministicParts()
        return bases.encode(
            boundary, sections, redact, redaction, lambda item: parts.item(item, names)
        )

    def close(self) -> None:
        if self.usable:
            os.close(self.fd)
        self.fd = -1

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # also at interpreter exit, os half torn down
            self.close()


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

    def open(self) -> int:
        """Open (creating the file with its header if needed); returns ``existing_calls``.

        Reopens a file deleted or replaced since it was last opened. Raises
        :class:`RecordingFileError` when the file cannot be written, or is not a recording
        this openprogram may append to (nothing is ever appended to such a file).
        """
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
        Raises :class:`~openprogram.recording.recordable.UnrecordableValueError`, writing
        nothing, for a request a recording cannot hold (``checked``: the caller already made
        sure), and :class:`RecordingFileError` for a boundary whose feature the file's
        header does not announce.
        """
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
        to :meth:`write_row`). Raises :class:`~openprogram.recording.recordable.
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
                    advice=_START_ANEW,
                )
            stored = file.store(boundary, sections, redact or _as_given, redaction)
            fields: dict[str, Any] = {} if boundary == "provider" else {"boundary": boundary}
            if stored.base is not None:
                fields[BASE_FIELD] = stored.base
            fields.update(stored.sections)
            if within is not None:
                fields["within"] = within
            # The index, known only under the file lock, is put in front.
            body = encode_recordable_row(str(self.path), fields, checked=checked)
            with _FileLock(file.fd):
                size = self._prepare(file)
                call_index = file.next_call_index
                start = b"%s%d" % (_REQUEST_ROW_START, call_index)
                line = start + (b"," + body[1:] if len(body) > 3 else b"}\n")
                self._append(file, line, size)
                file.next_call_index = call_index + 1
            file.bases.remember(stored, call_index)
            text = request_text_with_parts(
                boundary, stored.sections, {key: kept.parts for key, kept in stored.lists.items()}
            )
            return call_index, file, CallDigest(boundary, text, line)

    def write_row(
        self, row: dict[str, Any], file: OpenRecording | None = None, *, checked: bool = False
    ) -> bytes:
        """Append one row as one whole line (to ``file``, the one its call started in);
        returns the line.

        Raises :class:`~openprogram.recording.recordable.UnrecordableValueError`, writing
        nothing, for a row holding a value a recording cannot hold (``checked``: the caller
        already made sure).
        """
        line = encode_recordable_row(str(self.path), row, checked=checked)
        with self._lock:
            if file is None or not file.usable:
                file = self._current(follow_replaced=False)
            with _FileLock(file.fd):
                self._append(file, line, self._repaired_size(file))
        return line

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
                    advice=_START_ANEW,
                )
            with _FileLock(file.fd):
                self._append(file, line, self._repaired_size(file))

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
                advice=f"{_START_ANEW}, with the redaction patterns and functions it was "
                "recorded with, or replace the file",
            )

    def _current(self, *, follow_replaced: bool) -> OpenRecording:
        file = self._file
        if file is not None and file.usable and not (follow_replaced and not file.is_at(self.path)):
            return file
        # Calls still writing to the replaced file keep it open through their reference.
        self._file = None
        file = self._open()
        self._file = file
        self.existing_calls = file.next_call_index
        return file

    def _open(self) -> OpenRecording:
        fd = self._open_regular_file()
        try:
            file = OpenRecording(fd, os.fstat(fd))
        except BaseException:
            os.close(fd)
            raise
        try:
            with _FileLock(fd):
                # The header first: a file that is not a recording is never changed.
                self._check_first_line(file)
                size = self._repaired_size(file)
                if size == 0:
                    fingerprint = self._fingerprint
                    header = new_header(self.path.stem, redaction_fingerprint=fingerprint)
                    self._append(file, encode_row(header), 0)
                    file.features = frozenset(WRITTEN_FEATURES)
                    file.fingerprint = fingerprint
                    size = file.end
                self._catch_up(file, size)
        except BaseException:
            file.close()  # through the object, so it is never closed twice
            raise
        return file

    def _open_regular_file(self) -> int:
        """Open for reading and appending, creating the file ``0600``; refuse what is not a
        regular file (a FIFO, a device) without blocking on it or writing to it."""
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
        try:
            make_private_dirs(self.path.parent)
            fd = os.open(self.path, flags, PRIVATE_FILE_MODE)
        except OSError as exc:
            raise self._write_error(exc) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise RecordingFileError(
                str(self.path),
                "cannot record into it: not a regular file",
                advice="choose another file name",
            )
        return fd

    # --- under the file lock -------------------------------------------------------------

    def _prepare(self, file: OpenRecording) -> int:
        """Repair a cut-off tail and account for what other writers appended; the size."""
        size = self._repaired_size(file)
        self._catch_up(file, size)
        return size

    def _repaired_size(self, file: OpenRecording) -> int:
        """The file's size once a cut-off last line (left by a writer that died) is removed
        or completed. One ``fstat`` when the file still ends with this process's last line."""
        size = os.fstat(file.fd).st_size
        if size == file.end or size == 0 or os.pread(file.fd, 1, size - 1) == b"\n":
            return size
        start = self._last_line_start(file, size)
        tail = os.pread(file.fd, size - start, start)
        try:
            complete = isinstance(orjson.loads(tail), dict)
        except orjson.JSONDecodeError:
            complete = False
        try:
            if complete:
                os.write(file.fd, b"\n")
                return size + 1
            os.ftruncate(file.fd, start)
        except OSError as exc:
            raise self._write_error(exc) from None
        return start

    def _last_line_start(self, file: OpenRecording, size: int) -> int:
        """Where the last line starts: one past the last newline, reading back in chunks
        (never before ``scanned``, which ends a complete line)."""
        end = size
        while end > file.scanned:
            start = max(file.scanned, end - _TAIL_CHUNK)
            newline = os.pread(file.fd, end - start, start).rfind(b"\n")
            if newline >= 0:
                return start + newline + 1
            end = start
        return file.scanned

    def _catch_up(self, file: OpenRecording, size: int) -> None:
        """Account for the rows other writers appended since this process last looked."""
        if size <= file.scanned:
            return
        data = os.pread(file.fd, size - file.scanned, file.scanned)
        complete = data.rfind(b"\n") + 1  # the file ends with a newline once repaired
        try:
            after = _next_call_after(data[:complete])
        except _UnreadableRow as exc:
            line = file.lines + data.count(b"\n", 0, exc.offset) + 1
            raise RecordingFileError(
                str(self.path),
                f"cannot record into it: line {line} is not a valid row",
                line=line,
                advice=f"{_START_ANEW}, or fix or remove that line",
            ) from None
        file.next_call_index = max(file.next_call_index, after)
        file.lines += data.count(b"\n", 0, complete)
        file.scanned += complete

    def _check_first_line(self, file: OpenRecording) -> None:
        """Refuse a file whose first line is not a header this openprogram may append to.
        An empty file, or a header cut off by a writer that died, is a new recording."""
        first = os.pread(file.fd, _TAIL_CHUNK, 0)
        end = first.find(b"\n")
        if not first:
            return
        try:
            header = orjson.loads(first[:end] if end >= 0 else first)
        except orjson.JSONDecodeError:
            whole_file = end < 0 and len(first) < _TAIL_CHUNK
            if whole_file and first.startswith(_HEADER_ROW_START[: len(first)]):
                return  # a header cut off mid-write: the file holds no row yet
            header = None
        if not isinstance(header, dict) or header.get("type") != "header":
            raise RecordingFileError(
                str(self.path),
                "cannot record into it: it is not an openprogram recording (no header row)",
                line=1,
                advice="choose another file name",
            )
        version = header.get("format_version")
        if type(version) is not int or version != RECORDING_FORMAT_VERSION:
            raise RecordingFileError(
                str(self.path),
                f"cannot append to a recording of format_version {version!r} (this openprogram"
                f" writes format_version {RECORDING_FORMAT_VERSION})",
                line=1,
                advice=_START_ANEW,
            )
        features = header.get("features", [])
        unknown = (
            [name for name in features if not isinstance(name, str) or name not in KNOWN_FEATURES]
            if isinstance(features, list)
            else [features]
        )
        if unknown:
            raise RecordingFileError(
                str(self.path),
                f"cannot append to a recording using feature {unknown[0]!r}, which this "
                "openprogram does not know",
                line=1,
                advice=_START_ANEW,
            )
        file.features = frozenset(features)
        fingerprint = header.get("redaction_fingerprint")
        file.fingerprint = fingerprint if isinstance(fingerprint, str) else None

    def _append(self, file: OpenRecording, line: bytes, size: int) -> None:
        """Write ``line`` at the end (``size``); a write that fails part-way is undone."""
        fd = file.fd
        try:
            written = os.write(fd, line)
            while written < len(line):  # only on a signal, a full disk or a size limit
                written += os.write(fd, line[written:])
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)  # no other writer can have written: we hold the lock
            raise self._write_error(exc) from None
        end = size + len(line)
        file.end = end
        if size == file.scanned:
            file.scanned = end  # nobody else wrote in between: nothing new to read
            file.lines += 1

    def _write_error(self, exc: OSError) -> RecordingFileError:
        return RecordingFileError(
            str(self.path),
            f"cannot write the recording ({exc.strerror or exc})",
            advice="check the folder exists and is writable and the disk has space",
        )


def _as_given(sections: dict[str, Any]) -> dict[str, Any]:
    return sections


class _UnreadableRow(Exception):
    """A line a writer cannot make sense of; ``offset`` is where it starts."""

    def __init__(self, offset: int) -> None:
        self.offset = offset


def _next_call_after(data: bytes) -> int:
    """One past the highest call index among the request rows in ``data`` (0 if none).

    Writers append request rows in index order under the lock, so the last request row
    holds the highest index: find it from the end instead of parsing every line. Rows
    laid out differently (written by hand) fall back to a full scan. Raises
    :class:`_UnreadableRow` for a line that is not a row with a whole-number index.
    """
    start = data.rfind(_REQUEST_ROW_START)
    if start == 0 or (start > 0 and data[start - 1 : start] == b"\n"):
        end = data.find(b"\n", start)
        return _request_index(data[start : end if end >= 0 else len(data)], start) + 1
    highest = -1
    offset = 0
    for line in data.split(b"\n"):
        if b'"request"' in line:
            highest = max(highest, _request_index(line, offset))
        offset += len(line) + 1
    return highest + 1


def _request_index(line: bytes, offset: int) -> int:
    """The call index of a request row (-1 for another row type)."""
    try:
        row = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise _UnreadableRow(offset) from None
    if not isinstance(row, dict):
        raise _UnreadableRow(offset)
    if row.get("type") != "request":
        return -1
    index = row.get("call_index")
    if type(index) is not int or index < 0:
        raise _UnreadableRow(offset)
    return index
