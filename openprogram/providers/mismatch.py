"""What replay raises when the run drifts from the recording.

They subclass :class:`AssertionError` as well as :class:`OpenProgramError`, so a test runner
reports them as failures, not errors. The report is the one message allowed two lines::

    replay mismatch at call 1, field context.messages[2].content[0].text:
    recorded 'echo:hi', incoming 'echo:bye'
"""

from __future__ import annotations

from typing import Any

from openprogram.errors import OpenProgramError
from openprogram.providers.difference import format_report_value


class ReplayMismatch(OpenProgramError, AssertionError):
    """An incoming request (or read position) differs from the recording."""

    def __init__(
        self,
        call_index: int,
        field_path: str,
        recorded: Any,
        incoming: Any,
        *,
        event_index: int | None = None,
        detail: str | None = None,
    ) -> None:
        self.call_index = call_index
        self.field_path = field_path
        self.recorded = recorded
        self.incoming = incoming
        self.event_index = event_index
        where = f"field {field_path}" if event_index is None else f"event {event_index}"
        second = detail or (
            f"recorded {format_report_value(recorded)}, incoming {format_report_value(incoming)}"
        )
        super().__init__(f"replay mismatch at call {call_index}, {where}:\n{second}")


class RecordingTruncatedError(ReplayMismatch):
    """Replay reached a call the recording cut short (the recording process stopped)."""

    def __init__(self, path: str, call_index: int, event_count: int) -> None:
        self.path = path
        super().__init__(
            call_index,
            "event_index",
            event_count,
            event_count,
            event_index=event_count,
            detail=(
                f"the recording {path} was cut short here: call {call_index} has no "
                f"call_end after {event_count} events (the recording process stopped); "
                "re-record the session"
            ),
        )


class UnconsumedCallsError(OpenProgramError, AssertionError):
    """Recorded calls were never requested: the run ended earlier than the recording."""

    def __init__(self, path: str, unconsumed: list[int], total: int) -> None:
        self.path = path
        self.unconsumed = unconsumed
        self.total = total
        first, last = unconsumed[0], unconsumed[-1]
        which = f"call {first}" if first == last else f"calls {first}..{last}"
        super().__init__(
            f"replay incomplete: {len(unconsumed)} of {total} recorded calls never requested "
            f"({which}) from {path}; the run stopped before the recorded session did"
        )
