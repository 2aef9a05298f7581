"""The tape deck: what taped calls go to while record or replay is active.

Whoever switches record or replay on binds a deck in the provider registry's scope, beside the
registry's transform, under :data:`TAPE_DECK_BINDING` (see ``openprogram.providers.registry``:
bindings), so tapes follow exactly the scope the model calls follow — the configured mode,
``record_replay()``, the pytest fixture, ``openprogram exec``, ``verify``:

* :class:`TapeRecorder` appends each entry to the recording, through the recording's one
  writer (so its rows join the calls' rows in the one file), and holds the deterministic
  sources the clock and randomness draw from while it records, if it was given any;
* :class:`TapePlayer` serves entries from the replay session that serves the calls (so
  mismatches and unconsumed entries are the session's, reported with its calls);
* :class:`BlockedTapes` refuses every taped call, as a blocked registry refuses every model
  call: nothing runs live when record/replay is configured but could not start.

``taped_functions.active_tape_deck`` finds the deck of the current scope — starting the
provider runtime first, as a registry lookup does, so the configured mode applies from the
very first taped call (an agent often reads the clock before its first model call). None: no
record or replay is active, and taped functions just run.

What a tape records is redacted, paying for a redactor only when a value holds text.
Credentials are text: a call whose arguments and result hold no string (the clock, a random
draw, a count) has nothing to redact, and building a redactor — reading the environment for
the credentials this process knows — would cost more than the call. :class:`TapeRedaction`
makes the redactor the first time a value holding a string (a key or a value) is redacted,
and only once per call — and reuses the last one made while the environment (where the
known credentials come from) has not changed since."""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Final, NoReturn

from openprogram.errors import RecordReplayBlockedError
from openprogram.recording import redaction
from openprogram.recording.tape_replay import ToolPolicies, ToolPolicy
from openprogram.recording.tape_rows import TAPES_FEATURE

if TYPE_CHECKING:
    from openprogram.deterministic_sources import RecordingSources, SourceDraws
    from openprogram.errors import ReplayMismatch
    from openprogram.recording.format import TapeEntry
    from openprogram.recording.redaction import SecretRedactor
    from openprogram.recording.replay_session import ReplaySession
    from openprogram.recording.user_redaction import UserRedaction
    from openprogram.recording.writer import RecordingWriter

__all__ = [
    "TAPE_DECK_BINDING",
    "BlockedTapes",
    "TapeDeck",
    "TapePlayer",
    "TapeRecorder",
    "TapeRedaction",
    "holds_text",
]


def holds_text(value: Any) -> bool:
    """Whether ``value`` (JSON) holds a string anywhere, a key included."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            return True
        if isinstance(item, dict):
            if item:
                return True  # every key is a string
        elif isinstance(item, list):
            stack.extend(item)
    return False


class TapeRedaction:
    """The redaction of one taped call: arguments as configuration (all rules, field names
    included: a ``password`` argument), results and messages as content (by shape and known
    value), the user's own redaction (``user``) after the built-in rules."""

    __slots__ = ("_redactor", "_user")

    def __init__(self, user: UserRedaction | None = None) -> None:
        self._redactor: SecretRedactor | None = None
        self._user = user

    @property
    def redactor(self) -> SecretRedactor:
        if self._redactor is None:
            self._redactor = current_redactor(self._user)
        return self._redactor

    def arguments(self, value: dict[str, Any]) -> dict[str, Any]:
        """The arguments redacted as configuration; a value removed for its name (a
        ``password`` argument) is a known secret from then on for the call's result and
        messages, which may echo it."""
        if not holds_text(value):
            return value
        named = _named_secrets(value)
        if named:
            known = (*self.redactor.known_values, *named)
            self._redactor = redaction.SecretRedactor(known, user=self._user)
        return dict(self.redactor.redact(value))

    def content(self, value: Any) -> Any:
        return self.redactor.redact_model_output(value) if holds_text(value) else value


def _named_secrets(value: Any) -> list[str]:
    """The strings ``value`` holds under a credential's name (``password``, ``api_key``)
    long enough to be looked for elsewhere."""
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if (
                    isinstance(key, str)
                    and isinstance(inner, str)
                    and len(inner) >= redaction.MIN_KNOWN_SECRET_LENGTH
                    and redaction.is_secret_field_name(key)
                ):
                    found.append(inner)
                else:
                    stack.append(inner)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return found


_last: tuple[object, int, UserRedaction | None, SecretRedactor] | None = None

_last_lock = threading.Lock()


def current_redactor(user: UserRedaction | None = None) -> SecretRedactor:
    """A redactor knowing the credentials the environment holds now, applying ``user`` after
    the built-in rules: the one made last if the environment and ``user`` are the same as
    then (the environment compared whole, which costs far less than reading it for
    credentials again), else a new one."""
    global _last

    data = getattr(os.environ, "_data", None)  # the raw mapping (CPython); else no reuse
    remembered = len(redaction._remembered_variables)
    with _last_lock:
        last = _last
        if (
            data is not None
            and last is not None
            and last[1] == remembered
            and last[2] is user
            and last[0] == data
        ):
            return last[3]
    made = redaction.SecretRedactor(user=user)
    if data is not None:
        with _last_lock:
            _last = (dict(data), remembered, user, made)
    return made


TAPE_DECK_BINDING: Final = "openprogram.tape_deck"
"""The scope binding a deck is found under."""


class TapeRecorder:
    """Appends tape entries to the recording ``writer`` writes; ``now()``, ``random()`` and
    ``seeded_random()`` draw from ``sources`` while it records, when given
    (:mod:`openprogram.deterministic_sources`), each recorder from their start."""

    mode: Final = "record"

    def __init__(self, writer: RecordingWriter, sources: RecordingSources | None = None) -> None:
        self.writer = writer
        self.sources = sources
        self.draws: SourceDraws | None = None if sources is None else sources.draws()
        """The readings and draws of this recording (None: the real clock and randomness)."""

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
        raise RecordReplayBlockedError(self.reason)


TapeDeck = TapeRecorder | TapePlayer | BlockedTapes

DECKS: Final = (TapeRecorder, TapePlayer, BlockedTapes)
"""The deck classes: a binding of another type under the deck's name is no deck."""
