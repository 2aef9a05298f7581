"""An exception a taped function raised, as recorded, and raised again on replay.

The tape stores the exception's type (``ValueError`` for a built-in, ``module.QualName``
for another) and its message, redacted. Replay raises the same type with that message when
it can: a built-in, or a class of a module the replaying process has already imported (a
recording never makes replay import a module), whose constructor takes the message. Otherwise
it raises :class:`RecordedTapeError`, which carries the recorded type name.
"""

from __future__ import annotations

import builtins
import sys

from openprogram.errors import OpenProgramError
from openprogram.recording.format import RecordedError

__all__ = ["RecordedTapeError", "rebuilt_exception"]


class RecordedTapeError(OpenProgramError):
    """Replay of an exception a taped function raised whose type replay cannot raise itself:
    ``original_type`` is the recorded type name, the message the recorded message."""

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(f"{original_type}: {message}")


def rebuilt_exception(recorded: RecordedError) -> BaseException:
    """An exception equivalent to the recorded one (see the module's docstring)."""
    cls = _exception_class(recorded.type)
    if cls is not None:
        try:
            return cls(recorded.message)
        except Exception:  # a constructor that wants other arguments
            pass
    return RecordedTapeError(recorded.type, recorded.message)


def _exception_class(name: str) -> type[Exception] | None:
    found = getattr(builtins, name, None) if "." not in name else _imported(name.split("."))
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def _imported(parts: list[str]) -> object:
    """The object ``a.b.Outer.Error`` names, found from the longest prefix that is a module
    already imported; None when there is none."""
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            found: object = module
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            return found
    return None
