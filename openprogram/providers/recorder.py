"""Recording: a provider that writes each request and event to disk, then passes it on.

:class:`RecordingProvider` wraps the provider it replaces and is otherwise transparent: it
writes each event as one whole line, *then* yields it, so a crash loses at most the call in
flight. Every ``RecordingProvider`` writing to the same path in one process shares one
:class:`RecordingWriter`, so all apis form one call sequence.

Writers in several threads or processes may share a file. Each line is one ``write`` on an
``O_APPEND`` descriptor under an exclusive ``flock``; the next call index is found by reading
only the bytes other writers appended since this process last looked, so the cost of a call
does not grow with the size of the file.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

import orjson

from openprogram.errors import RecordingFileError
from openprogram.private_files import PRIVATE_FILE_MODE, make_private_dirs
from openprogram.providers.api_registry import ApiProvider
from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)
from openprogram.providers.recordable import encode_recordable_row
from openprogram.providers.recording import (
    RECORDING_FORMAT_VERSION,
    Outcome,
    dump_request,
    encode_row,
    new_header,
)
from openprogram.providers.redaction import SecretRedactor
from openprogram.providers.types import (
    Context,
    Model,
    SimpleStreamOptions,
    StreamOptions,
)


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


class RecordingWriter:
    """Appends rows to one recording; one per file per process (see :func:`writer_for`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.existing_calls = 0
        """How many calls the file already held when this process opened it."""
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._pid = 0
        self._scanned = 0  # bytes of the file this process has accounted for
        self._next_call_index = 0

    def open(self) -> int:
        """Open (creating the file with its header if needed); returns ``existing_calls``.

        Raises :class:`RecordingFileError` when the file cannot be written, or is not a
        recording of this format version (nothing is ever appended to such a file).
        """
        with self._lock:
            return self._ensure_open()

    def start_call(self, request: dict[str, Any]) -> int:
        """Write a request row with the next free call index; returns that index."""
        # Encoded (and checked: nothing is written if refused) before the lock; the index,
        # known only under the lock, is put in front.
        body = encode_recordable_row(str(self.path), request)
        with self._lock:
            self._ensure_open()
            fd = self._descriptor()
            with _FileLock(fd):
                self._catch_up(fd)
                call_index = self._next_call_index
                start = b"%s%d" % (_REQUEST_ROW_START, call_index)
                self._append(fd, start + (b"," + body[1:] if len(body) > 3 else b"}\n"))
                self._next_call_index = call_index + 1
            return call_index

    def write_row(self, row: dict[str, Any]) -> None:
        """Append one row as one whole line; raises :class:`UnrecordableValueError`, writing
        nothing, for a row holding a value a recording cannot hold."""
        line = encode_recordable_row(str(self.path), row)
        with self._lock:
            fd = self._descriptor()
            with _FileLock(fd):
                self._append(fd, line)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def _descriptor(self) -> int:
        if self._fd is None or self._pid != os.getpid():
            self._ensure_open()
        assert self._fd is not None
        return self._fd

    def _ensure_open(self) -> int:
        if self._fd is not None and self._pid == os.getpid():
            return self.existing_calls
        # First use in this process (or in a child after fork: the parent's descriptor would
        # share its lock, so the child opens its own).
        fd = self._open_regular_file()
        self._scanned, self._next_call_index = 0, 0
        try:
            with _FileLock(fd):
                if os.fstat(fd).st_size == 0:
                    self._append(fd, encode_row(new_header(self.path.stem)))
                self._catch_up(fd)
        except BaseException:
            os.close(fd)
            raise
        self._fd, self._pid = fd, os.getpid()
        self.existing_calls = self._next_call_index
        return self.existing_calls

    def _open_regular_file(self) -> int:
        """Open the recording for reading and appending, creating it ``0600``; refuse what
        is not a regular file (a FIFO, a device) without blocking on it or writing to it."""
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

    def _catch_up(self, fd: int) -> None:
        """Account for the rows other writers appended since we last looked."""
        size = os.fstat(fd).st_size
        if size <= self._scanned:
            return
        data = os.pread(fd, size - self._scanned, self._scanned)
        complete = data.rfind(b"\n") + 1  # a line still being written is read next time
        if self._scanned == 0:
            self._check_header(data[: data.find(b"\n")] if b"\n" in data else data)
        self._next_call_index = max(self._next_call_index, _next_call_after(data[:complete]))
        self._scanned += complete

    def _check_header(self, first_line: bytes) -> None:
        try:
            header = orjson.loads(first_line)
        except orjson.JSONDecodeError:
            header = None
        if not isinstance(header, dict) or header.get("type") != "header":
            raise RecordingFileError(
                str(self.path),
                "cannot record into it: it is not an openprogram recording (no header row)",
                line=1,
                advice="choose another file name",
            )
        if header.get("format_version") != RECORDING_FORMAT_VERSION:
            raise RecordingFileError(
                str(self.path),
                f"cannot append to a recording of format_version {header.get('format_version')!r}"
                f" (this openprogram writes {RECORDING_FORMAT_VERSION})",
                line=1,
                advice="record into a new file",
            )

    def _append(self, fd: int, line: bytes) -> None:
        try:
            written = os.write(fd, line)
            while written < len(line):  # only on a signal or a full disk
                written += os.write(fd, line[written:])
        except OSError as exc:
            raise self._write_error(exc) from None
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if end - len(line) == self._scanned:
            self._scanned = end  # nobody else wrote in between: nothing new to read

    def _write_error(self, exc: OSError) -> RecordingFileError:
        return RecordingFileError(
            str(self.path),
            f"cannot write the recording ({exc.strerror or exc})",
            advice="check the folder exists and is writable and the disk has space",
        )


_REQUEST_ROW_START = b'{"type":"request","call_index":'


def _next_call_after(data: bytes) -> int:
    """One past the highest call index among the request rows in ``data`` (0 if none).

    Writers append request rows in index order under the lock, so the last request row
    holds the highest index: find it from the end instead of parsing every line. Rows
    laid out differently (written by hand) fall back to a full scan.
    """
    start = data.rfind(_REQUEST_ROW_START)
    if start == 0 or (start > 0 and data[start - 1 : start] == b"\n"):
        end = data.find(b"\n", start)
        row = orjson.loads(data[start : end if end >= 0 else len(data)])
        return int(row["call_index"]) + 1
    highest = -1
    for line in data.split(b"\n"):
        if b'"request"' in line:
            row = orjson.loads(line)
            if row.get("type") == "request":
                highest = max(highest, int(row["call_index"]))
    return highest + 1


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


def exception_type_name(error: BaseException) -> str:
    cls = type(error)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class RecordingProvider:
    """Records every call to ``real_provider`` into the recording at ``path``."""

    def __init__(self, real_provider: ApiProvider, path: str | os.PathLike[str]) -> None:
        self.real_provider = real_provider
        self.path = Path(path)
        self.writer = writer_for(path)

    @property
    def requires_credentials(self) -> bool:
        return self.real_provider.requires_credentials

    @property
    def api_key_env(self) -> str | None:
        env = getattr(self.real_provider, "api_key_env", None)
        return env if isinstance(env, str) else None

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._record("stream", model, context, options or StreamOptions())

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._record("stream_simple", model, context, options or SimpleStreamOptions())

    async def _record(
        self,
        method: Literal["stream", "stream_simple"],
        model: Model,
        context: Context,
        options: StreamOptions,
    ) -> AsyncIterator[AssistantMessageEvent]:
        redactor = SecretRedactor.for_request(options.api_key)
        call_index = self.writer.start_call(redactor.redact(dump_request(model, context, options)))
        log = _CallLog(self.writer, call_index, redactor)
        try:
            source = getattr(self.real_provider, method)(model, context, options)
            events = source.__aiter__()
        except Exception as exc:  # a provider that fails before streaming anything
            log.end("error", error=exc)
            raise
        exhausted = False
        try:
            while True:
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    exhausted = True
                    log.end("complete")
                    return
                except asyncio.CancelledError:
                    log.end("cancelled")
                    raise
                except Exception as exc:
                    exhausted = True
                    log.end("error", error=exc)
                    raise
                log.event(event)
                terminal = isinstance(event, DoneEvent | ErrorEvent)
                if terminal:
                    # The call is complete as soon as its last event is on disk, whether or
                    # not the consumer reads on to the end of the stream.
                    log.end("complete")
                yield event
                if terminal:
                    return
        except asyncio.CancelledError:
            log.end("cancelled")
            raise
        finally:
            log.end("abandoned")  # no-op when the call already ended
            # Only close what can be closed: a plain async iterator has no aclose().
            close = getattr(source, "aclose", None)
            if not exhausted and close is not None:
                await close()


class _CallLog:
    """The rows of one recorded call: its events, then exactly one ``call_end``."""

    def __init__(self, writer: RecordingWriter, call_index: int, redactor: SecretRedactor) -> None:
        self.writer = writer
        self.call_index = call_index
        self.redactor = redactor
        self.count = 0
        self.ended = False

    def event(self, event: AssistantMessageEvent) -> None:
        self.writer.write_row(
            {
                "type": "event",
                "call_index": self.call_index,
                "event_index": self.count,
                "event": self.event_payload(event),
            }
        )
        self.count += 1

    def event_payload(self, event: AssistantMessageEvent) -> dict[str, Any]:
        """The event's JSON form, redacted. Deltas — most of a stream — take a short path:
        their only free text is ``delta``."""
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
            return {
                "type": event.type,
                "content_index": event.content_index,
                "delta": self.redactor.redact_text(event.delta),
            }
        payload: dict[str, Any] = self.redactor.redact(event.model_dump(mode="json"))
        return payload

    def end(self, outcome: Outcome, *, error: BaseException | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        row: dict[str, Any] = {
            "type": "call_end",
            "call_index": self.call_index,
            "event_count": self.count,
            "outcome": outcome,
        }
        if error is not None:
            row["error"] = {
                "type": exception_type_name(error),
                "message": self.redactor.redact_text(str(error)),
            }
        self.writer.write_row(row)
