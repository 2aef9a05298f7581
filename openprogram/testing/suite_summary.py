"""The suite summary: what every test did with its recording, in the terminal and as JSON.

Built from the :class:`TestOutcome` of every test that used the fixture (gathered from the
pytest-xdist workers too) and the orphans
(:mod:`~openprogram.testing.summary_plugin`). The terminal shows the totals — tests by
kind, calls replayed and recorded, tokens replayed instead of spent (the recorded usage of
every replayed call) — then one line per test that did anything but replay cleanly (every
test with ``-v``), the first difference under a re-recorded or mismatched one, and the
orphans. ``--openprogram-report PATH`` writes :meth:`SuiteSummary.to_json`.

What one test did with its recording is a :class:`TestOutcome`: the fixture stores it on the
test item (:data:`OUTCOME_KEY`) when it
tears down; the plugin carries it to the process that prints the summary as plain data
(:meth:`TestOutcome.to_json` / :meth:`TestOutcome.from_json`), so the summary is whole under
pytest-xdist too. This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import pytest

from openprogram.wording import plural, which_calls

if TYPE_CHECKING:
    from openprogram.testing.recording_settings import RecordMode

__all__ = ["REPORT_VERSION", "SuiteSummary"]


OutcomeKind = Literal[
    "replayed",  # every call answered from the recording, nothing left unconsumed
    "recorded",  # a new recording (there was none before)
    "re-recorded",  # an existing recording replaced, or merged with new calls
    "mismatched",  # replay met a request the recording does not hold
    "unconsumed",  # replay passed but recorded calls were never requested
    "live",  # calls went to the real providers and nothing was recorded
    "failed",  # the test failed while recording: the new recording was discarded
    "error",  # the recording could not be opened (missing, unreadable, refused on CI)
]


OUTCOME_KINDS: tuple[OutcomeKind, ...] = get_args(OutcomeKind)


@dataclass(slots=True)
class TestOutcome:
    """One test's use of its recording."""

    __test__ = False  # not a test class, whatever pytest's name rules say

    nodeid: str
    recording: str
    """The recording's path as shown to the user (relative to rootdir when inside it)."""
    record_mode: RecordMode
    kind: OutcomeKind
    replayed_calls: list[int] = field(default_factory=list)
    """Indexes, in the recording that was replayed, of the calls served to the test."""
    recorded_calls: int = 0
    """Calls made live and written to the new recording."""
    unconsumed_calls: list[int] = field(default_factory=list)
    """Indexes of recorded calls the test never requested."""
    dropped_calls: int = 0
    """Recorded calls left out of a merged recording (``new_episodes``): never requested."""
    difference: str | None = None
    """The first difference: the mismatch report, or for a re-recorded test the first
    difference between the old recording and the new one (None when they are the same)."""
    tokens_replayed: int | None = None
    """Tokens the replayed calls' recorded usage counts (input and output), filled in by the
    summary; None when no replayed call recorded its usage."""
    not_recorded: list[str] = field(default_factory=list)
    """While recording: the connections (``host:port (library)``) no boundary captured."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestOutcome:
        kind = data.get("kind")
        if kind not in OUTCOME_KINDS:
            raise ValueError(f"unknown outcome kind {kind!r}")
        known = {name: data[name] for name in cls.__dataclass_fields__ if name in data}
        known["kind"] = cast(OutcomeKind, kind)
        return cls(**known)


OUTCOME_KEY = pytest.StashKey[TestOutcome]()
"""Where the fixture leaves a test's outcome on its item."""


REPORT_VERSION = 1
"""The version of the JSON report's shape."""


_INDENT = "    "


@dataclass
class SuiteSummary:
    outcomes: list[TestOutcome] = field(default_factory=list)
    orphans: list[str] | None = None
    """Recordings no collected test uses (display paths); None when not looked for."""
    orphans_not_checked: str | None = None
    """Why the orphans were not looked for."""

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(OUTCOME_KINDS, 0)
        for outcome in self.outcomes:
            counts[outcome.kind] += 1
        return counts

    @property
    def calls_replayed(self) -> int:
        return sum(len(outcome.replayed_calls) for outcome in self.outcomes)

    @property
    def calls_recorded(self) -> int:
        return sum(outcome.recorded_calls for outcome in self.outcomes)

    @property
    def calls_dropped(self) -> int:
        return sum(outcome.dropped_calls for outcome in self.outcomes)

    @property
    def tokens_replayed(self) -> int:
        return sum(outcome.tokens_replayed or 0 for outcome in self.outcomes)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": REPORT_VERSION,
            "totals": {
                "tests": len(self.outcomes),
                **self.counts,
                "calls_replayed": self.calls_replayed,
                "calls_recorded": self.calls_recorded,
                "calls_dropped": self.calls_dropped,
                "tokens_replayed": self.tokens_replayed,
            },
            "tests": [outcome.to_json() for outcome in self.outcomes],
            "orphans": self.orphans,
            "orphans_not_checked": self.orphans_not_checked,
        }

    def lines(self, *, verbose: bool) -> list[str]:
        """The terminal section's lines."""
        lines = [self._totals()]
        for outcome in self.outcomes:
            if verbose or outcome.kind != "replayed" or outcome.unconsumed_calls:
                lines.extend(_test_lines(outcome))
        if self.orphans:
            lines.append(
                f"{plural(len(self.orphans), 'orphaned recording')} (no collected test uses them):"
            )
            lines.extend(f"{_INDENT}{orphan}" for orphan in self.orphans)
        elif self.orphans_not_checked is not None and verbose:
            # Said only when asked (-v): a run that selects tests selects them on purpose.
            lines.append(f"orphaned recordings not looked for: {self.orphans_not_checked}")
        return lines

    def _totals(self) -> str:
        kinds = ", ".join(f"{count} {kind}" for kind, count in self.counts.items() if count)
        parts = [f"{plural(len(self.outcomes), 'test')}: {kinds}"]
        parts.append(f"{plural(self.calls_replayed, 'call')} replayed")
        if self.tokens_replayed:
            parts.append(f"{self.tokens_replayed:,} tokens replayed instead of spent")
        if self.calls_recorded:
            parts.append(f"{plural(self.calls_recorded, 'call')} recorded")
        if self.calls_dropped:
            parts.append(f"{plural(self.calls_dropped, 'unused call')} dropped")
        return "; ".join(parts)


def _test_lines(outcome: TestOutcome) -> list[str]:
    head = f"{outcome.kind:<12} {outcome.nodeid}"
    detail = _detail(outcome)
    lines = [f"{head}  ({detail})" if detail else head]
    if outcome.difference and outcome.kind in ("re-recorded", "mismatched", "error"):
        lines.extend(f"{_INDENT}{line}" for line in outcome.difference.splitlines())
    return lines


def _detail(outcome: TestOutcome) -> str:
    parts = []
    if outcome.replayed_calls:
        parts.append(f"{plural(len(outcome.replayed_calls), 'call')} replayed")
    if outcome.recorded_calls:
        parts.append(f"{plural(outcome.recorded_calls, 'call')} recorded")
    if outcome.dropped_calls:
        parts.append(f"{plural(outcome.dropped_calls, 'unused call')} dropped")
    if outcome.unconsumed_calls:
        parts.append(f"{which_calls(outcome.unconsumed_calls)} never requested")
    if outcome.kind == "failed":
        parts.append("the test failed: its new recording was discarded")
    if outcome.kind == "re-recorded" and outcome.difference is None:
        parts.append("the same calls as before")
    if outcome.tokens_replayed:
        parts.append(f"{outcome.tokens_replayed:,} tokens")
    if outcome.not_recorded:
        listed = ", ".join(outcome.not_recorded)
        parts.append(f"{plural(len(outcome.not_recorded), 'connection')} not recorded: {listed}")
    return ", ".join(parts)
