"""Writing one call's rows, whatever its boundary, and the one writer per file per process.

:meth:`RecordingWriter.open_call <openprogram.recording.writer.RecordingWriter.open_call>`
writes a call's request row and returns a :class:`CallWriter` for the rest of its rows.
Every recorder in a process writing to one path — the provider boundary's and the HTTP
boundary's — asks :func:`writer_for` for the path's one writer, so all their calls form one
call sequence in the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.recording.format import Outcome, RecordedError

if TYPE_CHECKING:
    from openprogram.recording.call_digest import CallDigest
    from openprogram.recording.open_recording import OpenRecording
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.recording.writer import RecordingWriter

__all__ = [
    "CallWriter",
    "exception_type_name",
    "recorded_error",
]


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

        Raises :class:`~openprogram.recording.recordable.UnrecordableValueError`, writing
        nothing, for an event a recording cannot hold (``checked``: the caller already made
        sure), and ``RuntimeError`` once the call has ended.
        """
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
            row["error"] = {"type": error.type, "message": error.message}
        if self.digest is not None:
            row["digest"] = self.digest.finish(outcome, error)
        file, self.file = self.file, None  # ended even if the write fails: never twice
        self.writer.write_row(row, file, checked=True)


def exception_type_name(error: BaseException) -> str:
    """``ConnectionResetError`` for a built-in exception, ``module.QualName`` for another."""
    cls = type(error)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


def recorded_error(error: BaseException, redactor: SecretRedactor) -> RecordedError:
    """``error`` as a ``call_end`` records it: its type name and its redacted message."""
    return RecordedError(exception_type_name(error), redactor.redact_text(str(error)))
