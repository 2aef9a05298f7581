"""How a process that runs record/replay from its start ends on one of openprogram's errors.

An error the HTTP boundary must get past an SDK's retry loop travels as a
:class:`~openprogram.recording.mismatch.RecordReplayEscape`; uncaught, Python would print the escape
and dozens of frames of the SDK, the HTTP client and openprogram. :func:`show_carried_errors` has
``sys.excepthook`` print the error it carries instead, with the program's own frames only
(:func:`short_traceback`): the program's last words are ``ReplayMismatch: replay mismatch at …``. It
also remembers the uncaught error (:func:`last_uncaught`), so that what a process reports at its
exit does not repeat it, and knows the process is failing already. ``openprogram exec``'s processes
and the configured mode install it; installing it twice is installing it once."""

from __future__ import annotations

import sys
import traceback as tracebacks
from typing import Any

from openprogram.errors import OpenProgramError
from openprogram.recording.mismatch import RecordReplayEscape, is_library_file

__all__ = ["last_uncaught", "short_traceback", "show_carried_errors"]

_uncaught: list[BaseException] = []
_installed: list[object] = []


def show_carried_errors() -> None:
    """Have ``sys.excepthook`` show an uncaught openprogram error short (see the module's
    docstring), and remember every uncaught error."""
    if sys.excepthook in _installed:
        return
    hook = sys.excepthook

    def excepthook(kind: Any, value: BaseException, traceback: Any) -> Any:
        _uncaught.append(value)
        if isinstance(value, RecordReplayEscape):
            value.error.__traceback__ = traceback
            kind, value = type(value.error), value.error
        if isinstance(value, OpenProgramError) and hook is sys.__excepthook__:
            sys.stderr.write(short_traceback(value, traceback))
            return None
        return hook(kind, value, traceback)

    _installed.append(excepthook)
    sys.excepthook = excepthook


def last_uncaught() -> BaseException | None:
    """The exception the program ended on, uncaught (None: it did not, or not yet)."""
    return _uncaught[-1] if _uncaught else None


def short_traceback(error: BaseException, traceback: Any) -> str:
    """``error`` as Python prints it, its traceback cut to the frames of the program's own
    code: not the standard library's, an installed package's or openprogram's (the last
    frame when none is left)."""
    frames = tracebacks.extract_tb(traceback)
    own = [frame for frame in frames if not is_library_file(frame.filename)] or frames[-1:]
    head = "Traceback (most recent call last; library frames left out):\n"
    return (
        head
        + "".join(tracebacks.format_list(own))
        + "".join(tracebacks.format_exception_only(type(error), error))
    )
