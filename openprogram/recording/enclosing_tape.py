"""Which tape covers the code running in this context: the taped function or agent tool
whose call is being recorded.

* **Nested entries and calls.** A taped call made while another one runs under record (the
  clock read inside a tool, a taped web API called by a taped function) is written with
  ``"within"``: the enclosing tape; so is a model or HTTP call recorded meanwhile (the writer
  adds it to the request row). Replay never requires them when the enclosing call is not run
  again — a taped function, or a tool replayed with policy ``replay``.
* **HTTP.** While a taped *function* runs under record, the HTTP requests it sends (through
  httpx or httpx2, an SDK, a web API client) are sent as they are and not recorded at the
  HTTP boundary: its tape holds what the function made of them, and replay returns that
  without running the function, so the requests are never made again. An agent tool's
  requests are recorded as usual, since a tool replayed ``live`` sends them again.

The state is a ``ContextVar``: it covers the call's own thread, the tasks it starts and
whatever runs in a copy of its context (``asyncio.to_thread``), not other threads. This
module imports nothing.
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import NamedTuple

__all__ = ["Enclosing", "enclosing_tape", "enter_tape", "leave_tape", "taped_function_running"]


class Enclosing(NamedTuple):
    tape: str
    covers_http: bool
    """True for a taped function (its HTTP requests are not recorded), False for a tool."""


_running: ContextVar[Enclosing | None] = ContextVar("openprogram_enclosing_tape", default=None)


def enclosing_tape() -> str | None:
    """The tape whose call is being recorded in this context, or None."""
    found = _running.get()
    return None if found is None else found.tape


def taped_function_running() -> str | None:
    """The tape of the taped function being recorded in this context (whose HTTP requests
    its tape covers), or None."""
    found = _running.get()
    return found.tape if found is not None and found.covers_http else None


def enter_tape(tape: str, *, covers_http: bool) -> Token[Enclosing | None]:
    return _running.set(Enclosing(tape, covers_http))


def leave_tape(token: Token[Enclosing | None]) -> None:
    try:
        _running.reset(token)
    except ValueError:  # left in another context than it was entered in
        _running.set(None)
