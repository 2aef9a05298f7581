"""Each tape entry as a person wants to read it: the tape part of ``recordings show``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from openprogram.recording.tape_rows import TapeEntry

__all__ = ["TapeView", "tape_view"]


@dataclass(frozen=True)
class TapeView:
    """One tape entry, ready to render."""

    tape: str
    index: int
    line: int
    args: dict[str, Any]
    result: Any
    error: str | None
    """``Type: message`` of the exception the call raised, or None."""
    nondeterministic: bool
    within: str | None
    tool: str | None
    """The agent tool the tape belongs to, or None for a taped function."""

    @property
    def label(self) -> str:
        return f"{self.tape}[{self.index}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "tape": self.tape,
            "index": self.index,
            "line": self.line,
            "args": self.args,
            "result": self.result,
            "error": self.error,
            "nondeterministic": self.nondeterministic,
            "within": self.within,
            "tool": self.tool,
        }


def tape_view(entry: TapeEntry) -> TapeView:
    error = None if entry.error is None else f"{entry.error.type}: {entry.error.message}"
    return TapeView(
        tape=entry.tape,
        index=entry.index,
        line=entry.line,
        args=entry.args,
        result=None if entry.error is not None else entry.result,
        error=error,
        nondeterministic=entry.nondeterministic,
        within=entry.within,
        tool=entry.tool,
    )
