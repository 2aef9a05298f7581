"""Serving a recording's tape entries under replay: :class:`TapeReplay`.

Each replay session holds one, next to its calls. A call on a tape is served by the earliest unread
entry *of that tape* whose arguments equal the call's, wherever it stands on the tape, so concurrent
callers of one tape (``asyncio.gather`` over three cities) replay whatever order they arrive in, and
identical calls (the clock, read five times) are served in recorded order. Entries are indexed by
the digest of their arguments, so a lookup never scans the tape. Arguments are compared as calls'
requests are: both sides redacted by the same rules, an absent key equal to null, ``True``, ``1``
and ``1.0`` different. Under ``match="order"`` each call must equal the tape's next unread entry.

A call that equals no unread entry raises :class:`ReplayMismatch` against the *nearest*
unread entry (fewest differing fields among the first 64, ties to the lowest index)::

    replay mismatch at tape fetch_weather[1], field args.city:
    recorded 'Paris', incoming 'Lyon'

and a call past the tape's last entry, at field ``tape``. A mismatch reads no entry, and is
kept in the session's mismatches (through ``keep``), so a harness fails a run whose code
caught it. It is found under the tapes' lock and kept once the lock is released: keeping may
report it at once, reading the entries never read (exec's child does).

An entry recorded *within* another call (the clock read inside a tool) need not be read when
that call is served from its tape instead of run: inside a taped function, or a tool replayed
with policy ``replay``.

**Agent tools** follow each tool's policy (:class:`ToolPolicies`). Under record every agent
tool's result is taped (the tape ``tool:<name>``). Under replay:

* ``live`` (the default) — the tool runs, as it would without openprogram; its tape is not
  read, and its entries never count as unconsumed;
* ``replay`` — the tool does not run: the model reads the taped result (text and
  ``is_error``), found by the call's arguments;
* ``check`` — the tool runs and the model reads its live result; a result that differs from
  the taped one fails the run when it ends, naming the first differing entry.

Policies are given by tool name, with ``"*"`` for every tool not named (``record_replay.tools`` in
the configuration, ``--tool-policy`` on the command line, the pytest ``openprogram_tools`` ini
option: :func:`parse_tool_policies`). A tool replayed ``live`` never reads its tape, so its entries
are never unread; a tool under ``replay`` or ``check`` whose recording holds no tool tape at all
(made before tools were taped) raises :class:`ToolTapesMissingError`: record again."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Literal

from openprogram.errors import ReplayMismatch, ToolTapesMissingError
from openprogram.recording.call_digest import canonical_part
from openprogram.recording.content_matching import NEAREST_CANDIDATES
from openprogram.recording.difference import Matching, count_differences, find_first_difference
from openprogram.recording.format import TOOL_TAPE_PREFIX, TapeEntry
from openprogram.recording.tape_rows import is_tool_tape

__all__ = [
    "ALL_TOOLS",
    "DEFAULT_TOOL_POLICY",
    "TOOL_POLICIES",
    "TapeReplay",
    "ToolPolicies",
    "ToolPolicy",
    "arguments_digest",
    "check_tool_policies",
    "parse_tool_policies",
]


ToolPolicy = Literal["live", "replay", "check"]
TOOL_POLICIES: Final[tuple[ToolPolicy, ...]] = ("live", "replay", "check")
DEFAULT_TOOL_POLICY: Final[ToolPolicy] = "live"
ALL_TOOLS: Final = "*"
"""The key that gives the policy of every tool not named."""


class ToolPolicies:
    """The policy of each tool: by name, else the ``"*"`` entry, else ``live``."""

    __slots__ = ("by_name",)

    def __init__(self, by_name: Mapping[str, str] | None = None) -> None:
        self.by_name: dict[str, ToolPolicy] = check_tool_policies(by_name or {})

    def policy_for(self, tool: str) -> ToolPolicy:
        found = self.by_name.get(tool)
        return found if found is not None else self.by_name.get(ALL_TOOLS, DEFAULT_TOOL_POLICY)

    def __repr__(self) -> str:
        return f"ToolPolicies({self.by_name!r})"


def check_tool_policies(by_name: Mapping[str, str]) -> dict[str, ToolPolicy]:
    """``by_name`` with every policy checked; ``ValueError`` naming the first bad one."""
    checked: dict[str, ToolPolicy] = {}
    for tool, policy in by_name.items():
        if not isinstance(tool, str) or not tool:
            raise ValueError(f"a tool policy needs a tool name or {ALL_TOOLS!r}, found {tool!r}")
        if policy == "live":
            checked[tool] = "live"
        elif policy == "replay":
            checked[tool] = "replay"
        elif policy == "check":
            checked[tool] = "check"
        else:
            raise ValueError(
                f"tool {tool!r}: unknown policy {policy!r}; a tool's policy is "
                f"{', '.join(TOOL_POLICIES)}"
            )
    return checked


def parse_tool_policies(entries: Iterable[str]) -> dict[str, ToolPolicy]:
    """Policies written ``NAME=POLICY`` (``get_weather=replay``, ``*=check``) or a bare
    ``POLICY`` for every tool; later entries win. ``ValueError`` for a malformed one."""
    found: dict[str, str] = {}
    for entry in entries:
        name, equals, policy = entry.partition("=")
        if not equals:
            name, policy = ALL_TOOLS, name
        name, policy = name.strip(), policy.strip()
        if not name:
            raise ValueError(f"{entry!r}: write NAME=POLICY, or a policy for every tool")
        found[name] = policy
    return check_tool_policies(found)


Keep = Callable[[ReplayMismatch], ReplayMismatch]
"""Remembers a mismatch (the session's ``keep``) and returns it, to be raised; called with
no lock held (it may report the mismatch at once, and read the tapes to do so)."""
_NOTHING_IGNORED: frozenset[str] = frozenset()


def arguments_digest(args: dict[str, Any]) -> bytes:
    """The digest two equal argument objects share (an absent key equals null)."""
    return canonical_part(args, _NOTHING_IGNORED)


class _Tape:
    """One tape's entries, which of them were read, and its digest index."""

    __slots__ = ("by_digest", "entries", "next_unread", "read")

    def __init__(self, entries: list[TapeEntry]) -> None:
        self.entries = entries
        self.read = bytearray(len(entries))
        self.next_unread = 0
        self.by_digest: dict[bytes, deque[int]] = {}
        for position, entry in enumerate(entries):
            self.by_digest.setdefault(arguments_digest(entry.args), deque()).append(position)

    def mark_read(self, position: int) -> None:
        self.read[position] = 1
        while self.next_unread < len(self.read) and self.read[self.next_unread]:
            self.next_unread += 1

    def unread(self, limit: int | None = None) -> list[int]:
        found: list[int] = []
        for position in range(self.next_unread, len(self.read)):
            if not self.read[position]:
                found.append(position)
                if limit is not None and len(found) == limit:
                    break
        return found


class TapeReplay:
    """The tape entries of one recording, served to replayed calls (see the module's
    docstring). Thread-safe."""

    def __init__(
        self,
        entries: Iterable[TapeEntry],
        *,
        path: str,
        keep: Keep,
        match: Matching = "content",
        tool_policies: ToolPolicies | None = None,
    ) -> None:
        self.path = path
        self.keep = keep
        self.match: Matching = match
        self.tool_policies = tool_policies or ToolPolicies()
        """What replay does with each agent tool; may be replaced before the run starts."""
        grouped: dict[str, list[TapeEntry]] = {}
        for entry in entries:
            grouped.setdefault(entry.tape, []).append(entry)
        self._tapes = {name: _Tape(found) for name, found in grouped.items()}
        self.has_tool_tapes = any(is_tool_tape(name) for name in self._tapes)
        self._lock = threading.Lock()

    def take(self, tape: str, args: dict[str, Any]) -> TapeEntry:
        """The entry a call on ``tape`` with ``args`` (JSON, redacted as recorded) is served
        by; it then counts as read. Raises (and keeps) :class:`ReplayMismatch` otherwise."""
        __tracebackhide__ = True
        with self._lock:
            found = self._find(tape, args)
        if isinstance(found, ReplayMismatch):
            raise self.keep(found)  # outside the lock: keeping may report, reading the tapes
        return found

    def compare(self, tape: str, args: dict[str, Any], result: Any) -> ReplayMismatch | None:
        """Check a live call against the tape (a tool under ``check``): the entry it pairs
        with counts as read, and a drift — arguments equal to no unread entry, or a result
        that differs from the entry's — is kept and returned, not raised."""
        with self._lock:
            found = self._find(tape, args)
        if isinstance(found, ReplayMismatch):
            return self.keep(found)
        # The entry is read now: what follows is this call's alone, outside the lock.
        recorded: dict[str, Any] = {"result": found.result}
        if found.error is not None:
            recorded = {"error": {"type": found.error.type, "message": found.error.message}}
        difference = find_first_difference(
            recorded, {"result": result}, ignore_fields=_NOTHING_IGNORED
        )
        if difference is None:
            return None
        return self.keep(
            ReplayMismatch(
                found.index,
                difference.field_path,
                difference.recorded,
                difference.incoming,
                tape=tape,
            )
        )

    def check_tool_tapes(self, tool: str, policy: str) -> None:
        """Raise (and keep) :class:`ToolTapesMissingError` if the recording holds no tool
        tape at all."""
        if not self.has_tool_tapes:
            tape = f"{TOOL_TAPE_PREFIX}{tool}"
            raise self.keep(ToolTapesMissingError(self.path, tool, policy, tape=tape))

    def unconsumed(self) -> dict[str, tuple[list[int], int]]:
        """The tapes with entries never read — by tape, their indexes and the tape's length
        — leaving out the tapes of tools replayed ``live``."""
        found: dict[str, tuple[list[int], int]] = {}
        with self._lock:
            for name, tape in self._tapes.items():
                if is_tool_tape(name) and self._tool_policy(name) == "live":
                    continue
                unread = [
                    tape.entries[position].index
                    for position in tape.unread()
                    if not self.not_run_again(tape.entries[position].within)
                ]
                if unread:
                    found[name] = (unread, len(tape.entries))
        return found

    def _tool_policy(self, tape: str) -> str:
        return self.tool_policies.policy_for(tape.removeprefix(TOOL_TAPE_PREFIX))

    def not_run_again(self, within: str | None) -> bool:
        """Whether the taped call an entry (or a call) was made ``within`` is served from
        its tape, not run: a taped function's always is, a tool's under policy ``replay``."""
        if within is None:
            return False
        return not is_tool_tape(within) or self._tool_policy(within) == "replay"

    # --- under the lock --------------------------------------------------------------------

    def _find(self, name: str, args: dict[str, Any]) -> TapeEntry | ReplayMismatch:
        tape = self._tapes.get(name)
        if tape is None or tape.next_unread >= len(tape.entries):
            return _past_the_end(name, 0 if tape is None else len(tape.entries))
        if self.match == "order":
            position = tape.next_unread
            mismatch = _mismatch(tape.entries[position], name, args)
            if mismatch is not None:
                return mismatch
            tape.mark_read(position)
            return tape.entries[position]
        waiting = tape.by_digest.get(arguments_digest(args))
        if waiting:
            while waiting and tape.read[waiting[0]]:
                waiting.popleft()
            for position in waiting:
                if (
                    not tape.read[position]
                    and _mismatch(tape.entries[position], name, args) is None
                ):
                    waiting.remove(position)
                    tape.mark_read(position)
                    return tape.entries[position]
        candidates = tape.unread(NEAREST_CANDIDATES)
        nearest = min(
            candidates,
            key=lambda position: count_differences(
                tape.entries[position].args, args, ignore_fields=_NOTHING_IGNORED, path="args"
            ),
        )
        mismatch = _mismatch(tape.entries[nearest], name, args)
        if mismatch is None:  # equal after all (a digest of another spelling of a number)
            tape.mark_read(nearest)
            return tape.entries[nearest]
        return mismatch


def _mismatch(entry: TapeEntry, tape: str, args: dict[str, Any]) -> ReplayMismatch | None:
    difference = find_first_difference(
        entry.args, args, ignore_fields=_NOTHING_IGNORED, path="args"
    )
    if difference is None:
        return None
    return ReplayMismatch(
        entry.index, difference.field_path, difference.recorded, difference.incoming, tape=tape
    )


def _past_the_end(tape: str, length: int) -> ReplayMismatch:
    recorded = (
        f"the recording holds {length} {'entry' if length == 1 else 'entries'} on tape {tape} "
        f"({tape}[0..{length - 1}]), all read"
        if length
        else f"the recording holds no entry on tape {tape}"
    )
    return ReplayMismatch(
        length,
        "tape",
        length,
        length + 1,
        tape=tape,
        detail=f"{recorded}: the run calls it more often than the recorded run did",
    )
