"""A run that replays what its recording holds and records the rest: one merged recording.

The pytest plugin's ``new_episodes`` mode. Every boundary asks one :class:`RecordingMerge`
for each request (:meth:`RecordingMerge.take_recorded`): when the recording holds an equal
unconsumed call — by the replay session's matching, ``content`` or ``order`` — that call is
served from the recording; otherwise the boundary calls live and records the exchange with
the merge's ``writer``, into a new, private file.

Calls are kept in the order the run made them. A replayed call leaves a *placeholder* in the
new file — its request row and an empty ``call_end`` — so the writer numbers replayed and
live calls in one sequence, under its own lock, whatever the threads and tasks making them.
:meth:`RecordingMerge.merged_calls` then replaces each placeholder by the recorded call it
stands for, whole (its events and ending as they were recorded): the merged recording holds
exactly the calls the run made, in the order it made them; the recorded calls it never
requested are left out. The caller writes it with
:func:`~openprogram.recording.rewriting.rewrite_recording`.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall, Recording
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.request_delta import RequestRedactor
    from openprogram.recording.writer import RecordingWriter

__all__ = ["RecordingMerge"]


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
