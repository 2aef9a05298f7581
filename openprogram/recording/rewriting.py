"""Rewriting a whole recording: the one way a recording is written other than by appending.

Paths that change a recording after the fact — secrets replaced in place, a merged re-recording, a
repaired file — build the calls it should hold and hand them to :func:`rewrite_recording`, which
writes every row anew and replaces the file atomically: the rows go to a temporary file in the same
folder, which is flushed, synced, given the original's permission bits (``0600`` for a new file) and
renamed over the original. A crash or an error at any point leaves the original exactly as it was.

While the rows are written the original is held under the same exclusive ``flock`` every
appending writer takes, and when ``expected`` is given the file must still be the one that
was read (same device, inode and size): a writer that appended in between makes the rewrite
fail with :class:`~openprogram.errors.RecordingFileError` instead of dropping its call. A
writer that appends later finds the path replaced and follows it to the new file.

**The encoding** is :func:`recording_lines`: the header, then each call's request, its events in
order and its ``call_end`` (none for a call that was cut short), the calls numbered from 0 in the
order given — encoded exactly as the writer encodes a session: each request stored against the
earlier request it extends (:mod:`~openprogram.recording.request_delta`; the header announces the
feature) and each ``call_end`` holding the call's digest, recomputed (so ``list`` can trust it) —
then the tape entries' rows, in the order given (each tape's entries keep their order, so their
indexes). Rewriting a recording as it was read gives the same bytes when its tape rows came after
its calls.

**A merged recording** (the pytest plugin's ``new_episodes`` mode) is made by a run that replays
what its recording holds and records the rest. Every boundary asks one :class:`RecordingMerge` for
each request (:meth:`RecordingMerge.take_recorded`): when the recording holds an equal unconsumed
call — by the replay session's matching, ``content`` or ``order`` — that call is served from the
recording; otherwise the boundary calls live and records the exchange with the merge's ``writer``,
into a new, private file. Calls are kept in the order the run made them: a replayed call leaves a
*placeholder* in the new file (its request row and an empty ``call_end``), so the writer numbers
replayed and live calls in one sequence, under its own lock, whatever the threads and tasks making
them. :meth:`RecordingMerge.merged_calls` then replaces each placeholder by the recorded call it
stands for, whole: the merged recording holds exactly the calls the run made, in the order it made
them; the recorded calls it never requested are left out. The caller writes it with
:func:`rewrite_recording`."""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import RecordingFileError
from openprogram.private_files import PRIVATE_FILE_MODE, replace_file
from openprogram.recording.call_digest import CallDigest, DeterministicParts, request_ignore_fields
from openprogram.recording.format import (
    RECORDING_FORMAT_VERSION,
    RecordedCall,
    TapeEntry,
    encode_row,
)
from openprogram.recording.minted_ids import MintedIds
from openprogram.recording.not_recorded import NOT_RECORDED_FEATURE, not_recorded_row
from openprogram.recording.request_delta import DELTA_FEATURE, RequestBases
from openprogram.recording.tape_rows import TAPES_FEATURE, row_of_entry

if TYPE_CHECKING:
    from openprogram.recording.format import Recording
    from openprogram.recording.redaction import RequestRedactor
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.writer import RecordingWriter

__all__ = ["RecordingMerge", "call_rows_of", "recording_lines", "rewrite_recording"]


def rewrite_recording(
    path: Path,
    header: dict[str, Any],
    calls: Iterable[RecordedCall],
    *,
    tapes: Iterable[TapeEntry] = (),
    not_recorded: list[dict[str, Any]] | None = None,
    expected: os.stat_result | None = None,
) -> None:
    """Make the recording at ``path`` hold exactly ``header``, ``calls``, the tape
    entries ``tapes`` (pass ``recording.tapes`` to keep them) and one ``not_recorded`` row
    listing ``not_recorded`` (pass ``recording.not_recorded`` to keep them), atomically.

    ``expected`` is the ``stat`` of the file as it was read: if the file changed since
    (another writer appended a call), nothing is written and :class:`RecordingFileError`
    says so. Raises :class:`RecordingFileError` when the folder cannot be written."""
    data = b"".join(recording_lines(header, calls, tapes, not_recorded or []))
    with _locked_original(path) as original:
        if expected is not None and (
            original is None
            or (original.st_dev, original.st_ino, original.st_size)
            != (expected.st_dev, expected.st_ino, expected.st_size)
        ):
            raise RecordingFileError(
                str(path),
                "it changed while it was being rewritten (another process recorded into it)",
                advice="run the command again once nothing is recording into it",
            )
        mode = PRIVATE_FILE_MODE if original is None else original.st_mode & 0o7777
        _replace(path, data, mode)


@contextlib.contextmanager
def _locked_original(path: Path) -> Iterator[os.stat_result | None]:
    """The ``stat`` of the file at ``path`` (None if there is none), held under its
    exclusive ``flock`` for the block."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        yield None
        return
    except OSError as exc:
        raise _write_error(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield os.fstat(fd)
    finally:
        os.close(fd)  # releases the lock


def _replace(path: Path, data: bytes, mode: int) -> None:
    try:
        replace_file(path, data, mode=mode)
    except OSError as exc:
        raise _write_error(path, exc) from None


def _write_error(path: Path, exc: OSError) -> RecordingFileError:
    return RecordingFileError(
        str(path),
        f"cannot rewrite the recording ({exc.strerror or exc})",
        advice="check the folder is writable and the disk has space",
    )


def recording_lines(
    header: dict[str, Any],
    calls: Iterable[RecordedCall],
    tapes: Iterable[TapeEntry] = (),
    not_recorded: list[dict[str, Any]] | None = None,
) -> Iterator[bytes]:
    """Every line of a recording holding ``header``, ``calls``, ``tapes`` and the connections
    ``not_recorded``, the calls renumbered from 0, encoded as a writer encodes them: each request
    against the earlier one it extends (the header says this openprogram's format version and
    announces :data:`~openprogram.recording.request_delta.DELTA_FEATURE`), each ``call_end`` with
    the call's digest; then the tape entries' rows, in the order given; then one ``not_recorded``
    row, when there are connections to list."""
    entries = list(tapes)
    # Its rows are written as this openprogram writes them (requests against a base): the
    # header says the version they are written in, whatever the file said before; it
    # announces the request deltas (and the tape rows, when it writes any).
    header = {**header, "format_version": RECORDING_FORMAT_VERSION}
    header = _announcing(header, [DELTA_FEATURE, TAPES_FEATURE] if entries else [DELTA_FEATURE])
    if not_recorded:
        header = _announcing(header, [NOT_RECORDED_FEATURE])
    yield encode_row(header)
    bases = RequestBases()
    parts = DeterministicParts()
    session = MintedIds()
    for call_index, call in enumerate(calls):
        yield from _call_lines(call, call_index, bases, parts, session)
    for entry in entries:
        yield encode_row(row_of_entry(entry))
    if not_recorded:
        yield encode_row(not_recorded_row(not_recorded))


def _announcing(header: dict[str, Any], wanted: list[str]) -> dict[str, Any]:
    """``header``, its ``features`` announcing ``wanted`` too."""
    features = header.get("features")
    listed = list(features) if isinstance(features, list) else []
    missing = [feature for feature in wanted if feature not in listed]
    if not missing:
        return header
    return {**header, "features": [*listed, *missing]}


def _call_lines(
    call: RecordedCall,
    call_index: int,
    bases: RequestBases,
    parts: DeterministicParts,
    session: MintedIds,
) -> Iterator[bytes]:
    boundary = call.boundary
    names = request_ignore_fields(boundary)
    stored = bases.encode(
        boundary, call.request, _as_given, None, lambda item: parts.item(item, names)
    )
    line = encode_row(
        {"type": "request", "call_index": call_index, **stored.row_fields(call.within)}
    )
    bases.remember(stored, call_index)
    digest = CallDigest.of_stored(stored, line, session, call_index)
    yield line
    for event_index, event in enumerate(call.event_rows):
        line = encode_row(
            {"type": "event", "call_index": call_index, "event_index": event_index, "event": event}
        )
        digest.add_event(event, line)
        yield line
    if call.outcome is None:
        return  # cut short: it stays truncated
    end = _end_row(call, call_index)
    end["digest"] = digest.finish(call.outcome, call.error)
    yield encode_row(end)


def call_rows_of(call: RecordedCall, call_index: int) -> Iterator[dict[str, Any]]:
    """The rows of one call on its own, numbered ``call_index``: its request whole, its
    events, its ``call_end`` (without a digest). A rewrite writes :func:`recording_lines`."""
    request: dict[str, Any] = {"type": "request", "call_index": call_index}
    if call.boundary != "provider":
        request["boundary"] = call.boundary
    request.update(call.request)
    if call.within is not None:
        request["within"] = call.within
    yield request
    for event_index, event in enumerate(call.event_rows):
        yield {
            "type": "event",
            "call_index": call_index,
            "event_index": event_index,
            "event": event,
        }
    if call.outcome is not None:  # else cut short: it stays truncated
        yield _end_row(call, call_index)


def _end_row(call: RecordedCall, call_index: int) -> dict[str, Any]:
    """The ``call_end`` row of a call that ended (without a digest)."""
    end: dict[str, Any] = {
        "type": "call_end",
        "call_index": call_index,
        "event_count": len(call.event_rows),
        "outcome": call.outcome,
    }
    if call.error is not None:
        end["error"] = call.error.to_row()
    if call.starts_session:
        end["new_session"] = True
    return end


def _as_given(sections: dict[str, Any]) -> dict[str, Any]:
    return sections


class RecordingMerge:
    """The calls one run replays from ``session`` and records with ``writer``."""

    def __init__(self, session: ReplaySession, writer: RecordingWriter) -> None:
        self.session = session
        self.writer = writer
        self._replayed: dict[int, int] = {}
        """The new file's call index of each placeholder -> the recorded call it stands for."""
        self._lock = threading.Lock()

    @property
    def replayed_calls(self) -> list[int]:
        """The recorded calls served, by their index in the recording, in the run's order."""
        with self._lock:
            return [self._replayed[index] for index in sorted(self._replayed)]

    def take_recorded(
        self, boundary: str, incoming: dict[str, Any], *, redactor: RequestRedactor
    ) -> RecordedCall | None:
        """The recorded call to serve ``incoming`` (a request of ``boundary``, before
        redaction) with, now consumed and placed in the run's sequence; None when the run
        must call live and record it."""
        call = self.session.take_equal(boundary, incoming, redactor=redactor)
        if call is None:
            return None
        row = dict(call.request) if call.boundary == "provider" else {"boundary": call.boundary}
        if call.boundary != "provider":
            row.update(call.request)
        placeholder = self.writer.open_call(row, checked=True)  # read from a recording
        placeholder.end_call("complete")
        with self._lock:
            self._replayed[placeholder.call_index] = call.call_index
        return call

    def merged_calls(self, written: Recording) -> list[RecordedCall]:
        """The run's calls in its order: the new file's (``written``, as read back), each
        placeholder replaced by the recorded call it stands for."""
        recorded = self.session.recording.calls
        with self._lock:
            replayed = dict(self._replayed)
        return [
            recorded[replayed[call.call_index]] if call.call_index in replayed else call
            for call in written.calls
        ]

    def live_calls(self, written: Recording) -> int:
        """How many calls of ``written`` were made live."""
        with self._lock:
            return sum(1 for call in written.calls if call.call_index not in self._replayed)
