"""Which of a recording's calls one replay has served, and which are still open.

A :class:`~openprogram.recording.replay_session.ReplaySession` serves each recorded call at
most once. :class:`ServedCalls` keeps that account: a flag per call, how many are served, the
first call not served yet (every call before it is served), and per boundary where its first
unserved call stands, so that finding the open calls of a boundary never walks the calls
served long ago again. It is not thread-safe: the session calls it under its lock.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall

__all__ = ["ServedCalls"]


class ServedCalls:
    """The served calls of one replay of ``calls`` (a recording's, in index order)."""

    __slots__ = ("_first_open", "_of_boundary", "count", "flags", "next_call")

    def __init__(self, calls: Sequence[RecordedCall]) -> None:
        self.flags = bytearray(len(calls))
        """1 at the index of each call served, 0 elsewhere."""
        self.count = 0
        """How many calls are served."""
        self.next_call = 0
        """No call before it is unserved (under ``order`` matching: the next call)."""
        self._of_boundary: dict[str, list[int]] = {}
        for call in calls:
            self._of_boundary.setdefault(call.boundary, []).append(call.call_index)
        self._first_open: dict[str, int] = dict.fromkeys(self._of_boundary, 0)

    def serve(self, index: int) -> None:
        """Count the call at ``index`` as served."""
        self.flags[index] = 1
        self.count += 1
        served = self.flags
        while self.next_call < len(served) and served[self.next_call]:
            self.next_call += 1

    def indexes(self) -> list[int]:
        """The calls served so far, by index."""
        return [index for index, served in enumerate(self.flags) if served]

    def open_calls(self, boundary: str, limit: int) -> list[int]:
        """The first ``limit`` unserved calls of ``boundary``, by index."""
        of_boundary = self._of_boundary.get(boundary, [])
        position = self._first_open.get(boundary, 0)
        served = self.flags
        while position < len(of_boundary) and served[of_boundary[position]]:
            position += 1
        if boundary in self._first_open:
            self._first_open[boundary] = position
        found: list[int] = []
        for index in of_boundary[position:]:
            if not served[index]:
                found.append(index)
                if len(found) == limit:
                    break
        return found
