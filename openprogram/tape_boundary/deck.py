"""The tape deck: what taped calls go to while record or replay is active.

Whoever switches record or replay on binds a deck in the provider registry's scope, beside
the registry's transform, under :data:`TAPE_DECK_BINDING` (see
``openprogram.providers.scopes``: bindings), so tapes follow exactly the scope the model
calls follow — the configured mode, ``record_replay()``, the pytest fixture, ``openprogram
exec``, ``verify``:

* :class:`TapeRecorder` appends each entry to the recording, through the recording's one
  writer (so its rows join the calls' rows in the one file);
* :class:`TapePlayer` serves entries from the replay session that serves the calls (so
  mismatches and unconsumed entries are the session's, reported with its calls);
* :class:`BlockedTapes` refuses every taped call, as a blocked registry refuses every model
  call: nothing runs live when record/replay is configured but could not start.

:func:`active_tape_deck` finds the deck of the current scope — starting the provider runtime
first, as a registry lookup does, so the configured mode applies from the very first taped
call (an agent often reads the clock before its first model call). None: no record or
replay is active, and taped functions just run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, NoReturn

from openprogram.providers.runtime import RuntimeState, initialize_provider_runtime, runtime_state
from openprogram.providers.scopes import current_scope
from openprogram.recording.tape_rows import TAPES_FEATURE
from openprogram.recording.tool_policies import ToolPolicies, ToolPolicy

if TYPE_CHECKING:
    from openprogram.recording.mismatch import ReplayMismatch
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.tape_rows import TapeEntry
    from openprogram.recording.user_redaction import UserRedaction
    from openprogram.recording.writer import RecordingWriter

__all__ = [
    "TAPE_DECK_BINDING",
    "BlockedTapes",
    "TapeDeck",
    "TapePlayer",
    "TapeRecorder",
    "active_tape_deck",
]

TAPE_DECK_BINDING: Final = "openprogram.tape_deck"
"""The scope binding a deck is found under."""


class TapeRecorder:
    """Appends tape entries to the recording ``writer`` writes."""

    mode: Final = "record"

    def __init__(self, writer: RecordingWriter) -> None:
        self.writer = writer

    @property
    def user_redaction(self) -> UserRedaction | None:
        """The user's redaction the recording is written with (tape values included)."""
        return self.writer.user_redaction

    def record(self, row: dict[str, Any]) -> None:
        """Append one ``tape`` row (redacted, JSON) as one whole line."""
        self.writer.write_feature_row(row, TAPES_FEATURE)

    def __repr__(self) -> str:
        return f"<TapeRecorder {self.writer.path}>"


class TapePlayer:
    """Serves tape entries from ``session``, the replay session serving the calls."""

    mode: Final = "replay"

    def __init__(self, session: ReplaySession) -> None:
        self.session = session

    @property
    def user_redaction(self) -> UserRedaction | None:
        """The user's redaction both sides of every comparison are redacted with."""
        return self.session.user_redaction

    def take(self, tape: str, args: dict[str, Any]) -> TapeEntry:
        """The entry a call on ``tape`` with ``args`` is served by (raises the mismatch)."""
        __tracebackhide__ = True
        return self.session.take_tape(tape, args)

    def compare(self, tape: str, args: dict[str, Any], result: Any) -> ReplayMismatch | None:
        """Check a live result against the tape; a drift is kept, not raised."""
        return self.session.tapes.compare(tape, args, result)

    def tool_policy(self, tool: str) -> ToolPolicy:
        return self.session.tapes.tool_policies.policy_for(tool)

    def check_tool_tapes(self, tool: str, policy: str) -> None:
        self.session.tapes.check_tool_tapes(tool, policy)

    def use_tool_policies(self, by_name: dict[str, str]) -> None:
        """Replay the agent tools with these policies (by tool name and ``"*"``), from now."""
        self.session.tapes.tool_policies = ToolPolicies(by_name)

    def __repr__(self) -> str:
        return f"<TapePlayer {self.session.path}>"


class BlockedTapes:
    """Refuses every taped call: record/replay is configured but could not start."""

    mode: Final = "blocked"

    def __init__(self, reason: str) -> None:
        self.reason = reason

    @property
    def user_redaction(self) -> UserRedaction | None:
        return None  # nothing is written or compared

    def refuse(self) -> NoReturn:
        from openprogram.providers.activation import RecordReplayBlockedError

        raise RecordReplayBlockedError(self.reason)


TapeDeck = TapeRecorder | TapePlayer | BlockedTapes


def active_tape_deck() -> TapeDeck | None:
    """The deck of the current scope (the runtime started first, unless the scope is
    isolated), or None when neither record nor replay is active."""
    scope = current_scope()
    if runtime_state() is not RuntimeState.READY and scope.starts_runtime:
        initialize_provider_runtime()
        scope = current_scope()
    deck = scope.bindings.get(TAPE_DECK_BINDING)
    return deck if isinstance(deck, _DECKS) else None


_DECKS: Final = (TapeRecorder, TapePlayer, BlockedTapes)
