"""One open recording file, and how a line is appended to it safely.

Each line is one ``write`` on an ``O_APPEND`` descriptor under an exclusive ``flock``
(:class:`FileLock`), so a line is never interleaved with another writer's. An
:class:`OpenRecording` is one such descriptor with what this process has read of the file:
the next call index is found by reading only the bytes other writers appended since this
process last looked, so the cost of a call does not grow with the size of the file.

What happens to the file, under the lock:

* **Only a recording a writer may append to is opened**: a regular file (a FIFO or a device
  is refused without blocking on it) whose first line is a header of this openprogram's
  format version with no feature it does not know. A file that is not such a recording is
  never changed. An empty file, or one holding only a header cut off mid-write, is a new
  recording and gets its header.
* **A cut-off last line is repaired.** Only a writer that died mid-write (SIGKILL, power
  loss) can leave a file that does not end in a newline, since every line is one write under
  the lock and a write that fails part-way is undone (truncated back to where its line
  started) before the error is raised. So a writer that finds such a tail removes it, or, if
  the tail is a whole JSON row lacking only its newline, completes it with ``\n``. Without
  this the next row would be glued to the cut-off bytes and the file would stop reading.
* **The next call index is read from what others appended.** Every process writing to a
  recording numbers its calls in one sequence, so before it writes a request row a writer
  reads the bytes appended since it last looked and takes one past the highest call index
  among their request rows (:func:`next_call_after`). Writers start a request row with
  :data:`REQUEST_ROW_START` and append request rows in index order, so the highest index is
  found from the end without parsing every line."""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import orjson

from openprogram.errors import RecordingFileError
from openprogram.private_files import PRIVATE_FILE_MODE, make_private_dirs
from openprogram.recording.call_digest import DeterministicParts, request_ignore_fields
from openprogram.recording.format import (
    KNOWN_FEATURES,
    WRITTEN_FEATURES,
    encode_row,
    new_header,
    version_refusal,
)
from openprogram.recording.redaction import RequestRedactor
from openprogram.recording.request_delta import DELTA_FEATURE, RequestBases, StoredRequest

__all__ = [
    "REQUEST_ROW_START",
    "START_ANEW",
    "FileLock",
    "OpenRecording",
    "UnreadableRow",
    "append_line",
    "next_call_after",
    "open_for_appending",
    "prepare_to_append",
    "repaired_size",
]


START_ANEW = "re-record the session into a new file, or start a new recording"
"""The advice of an error refusing to append to a recording."""
REQUEST_ROW_START = b'{"type":"request","call_index":'
"""How every writer starts a request row: the call index follows."""
_HEADER_ROW_START = b'{"type":"header"'
_TAIL_CHUNK = 65_536


class FileLock:
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
    replaced meanwhile; the descriptor is closed when nothing uses it any more."""

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
        self, boundary: str, sections: dict[str, Any], redact: RequestRedactor, redaction: Hashable
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


def open_for_appending(path: Path, fingerprint: str | None) -> OpenRecording:
    """Open the recording at ``path`` to append to, creating it with its header (holding
    ``fingerprint``, the user redaction's) if it is new, and account for the rows it holds.

    Raises :class:`RecordingFileError` when the file cannot be written, or is not a
    recording this openprogram may append to (nothing is then written to it)."""
    fd = _open_regular_file(path)
    try:
        file = OpenRecording(fd, os.fstat(fd))
    except BaseException:
        os.close(fd)
        raise
    try:
        with FileLock(fd):
            # The header first: a file that is not a recording is never changed.
            _check_first_line(path, file)
            size = repaired_size(path, file)
            if size == 0:
                header = new_header(path.stem, redaction_fingerprint=fingerprint)
                append_line(path, file, encode_row(header), 0)
                file.features = frozenset(WRITTEN_FEATURES)
                file.fingerprint = fingerprint
                size = file.end
            _catch_up(path, file, size)
    except BaseException:
        file.close()  # through the object, so it is never closed twice
        raise
    return file


def _open_regular_file(path: Path) -> int:
    """Open for reading and appending, creating the file ``0600``; refuse what is not a
    regular file (a FIFO, a device) without blocking on it or writing to it."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        make_private_dirs(path.parent)
        fd = os.open(path, flags, PRIVATE_FILE_MODE)
    except OSError as exc:
        raise _write_error(path, exc) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise RecordingFileError(
            str(path),
            "cannot record into it: not a regular file",
            advice="choose another file name",
        )
    return fd


# --- under the file lock ---------------------------------------------------------------


def prepare_to_append(path: Path, file: OpenRecording) -> int:
    """Repair a cut-off tail and account for what other writers appended; the size."""
    size = repaired_size(path, file)
    _catch_up(path, file, size)
    return size


def repaired_size(path: Path, file: OpenRecording) -> int:
    """The file's size once a cut-off last line (left by a writer that died) is removed
    or completed. One ``fstat`` when the file still ends with this process's last line."""
    size = os.fstat(file.fd).st_size
    if size == file.end or size == 0 or os.pread(file.fd, 1, size - 1) == b"\n":
        return size
    start = _last_line_start(file, size)
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
        raise _write_error(path, exc) from None
    return start


def _last_line_start(file: OpenRecording, size: int) -> int:
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


def _catch_up(path: Path, file: OpenRecording, size: int) -> None:
    """Account for the rows other writers appended since this process last looked."""
    if size <= file.scanned:
        return
    data = os.pread(file.fd, size - file.scanned, file.scanned)
    complete = data.rfind(b"\n") + 1  # the file ends with a newline once repaired
    try:
        after = next_call_after(data[:complete])
    except UnreadableRow as exc:
        line = file.lines + data.count(b"\n", 0, exc.offset) + 1
        raise RecordingFileError(
            str(path),
            f"cannot record into it: line {line} is not a valid row",
            line=line,
            advice=f"{START_ANEW}, or fix or remove that line",
        ) from None
    file.next_call_index = max(file.next_call_index, after)
    file.lines += data.count(b"\n", 0, complete)
    file.scanned += complete


def _check_first_line(path: Path, file: OpenRecording) -> None:
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
            str(path),
            "cannot record into it: it is not an openprogram recording (no header row)",
            line=1,
            advice="choose another file name",
        )
    refusal = version_refusal(header.get("format_version"))
    if refusal is not None:
        raise RecordingFileError(str(path), refusal, line=1, advice=START_ANEW)
    features = header.get("features", [])
    unknown = (
        [name for name in features if not isinstance(name, str) or name not in KNOWN_FEATURES]
        if isinstance(features, list)
        else [features]
    )
    if unknown:
        raise RecordingFileError(
            str(path),
            f"cannot append to a recording using feature {unknown[0]!r}, which this "
            "openprogram does not know",
            line=1,
            advice=START_ANEW,
        )
    file.features = frozenset(features)
    fingerprint = header.get("redaction_fingerprint")
    file.fingerprint = fingerprint if isinstance(fingerprint, str) else None


def append_line(path: Path, file: OpenRecording, line: bytes, size: int) -> None:
    """Write ``line`` (or several whole lines) at the end (``size``); a write that fails
    part-way is undone."""
    fd = file.fd
    try:
        written = os.write(fd, line)
        while written < len(line):  # only on a signal, a full disk or a size limit
            written += os.write(fd, line[written:])
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, size)  # no other writer can have written: we hold the lock
        raise _write_error(path, exc) from None
    end = size + len(line)
    file.end = end
    if size == file.scanned:
        file.scanned = end  # nobody else wrote in between: nothing new to read
        file.lines += line.count(b"\n")


def _write_error(path: Path, exc: OSError) -> RecordingFileError:
    return RecordingFileError(
        str(path),
        f"cannot write the recording ({exc.strerror or exc})",
        advice="check the folder exists and is writable and the disk has space",
    )


class UnreadableRow(Exception):
    """A line a writer cannot make sense of; ``offset`` is where it starts."""

    def __init__(self, offset: int) -> None:
        self.offset = offset


def next_call_after(data: bytes) -> int:
    """One past the highest call index among the request rows in ``data`` (0 if none).

    Writers append request rows in index order under the lock, so the last request row
    holds the highest index: find it from the end instead of parsing every line. Rows
    laid out differently (written by hand) fall back to a full scan. Raises
    :class:`UnreadableRow` for a line that is not a row with a whole-number index."""
    start = data.rfind(REQUEST_ROW_START)
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
        raise UnreadableRow(offset) from None
    if not isinstance(row, dict):
        raise UnreadableRow(offset)
    if row.get("type") != "request":
        return -1
    index = row.get("call_index")
    if type(index) is not int or index < 0:
        raise UnreadableRow(offset)
    return index
