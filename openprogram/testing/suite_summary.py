"""The suite summary: what every test did with its recording, in the terminal and as JSON.

Built from the :class:`~openprogram.testing.outcome.TestOutcome` of every test that used the
fixture (gathered from the pytest-xdist workers too) and the orphans
(:mod:`~openprogram.testing.orphan_recordings`). The terminal shows the totals — tests by
kind, calls replayed and recorded, tokens replayed instead of spent (the recorded usage of
every replayed call) — then one line per test that did anything but replay cleanly (every
test with ``-v``), the first difference under a re-recorded or mismatched one, and the
orphans. ``--openprogram-report PATH`` writes :meth:`SuiteSummary.to_json`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from openprogram.plural import plural
from openprogram.testing.outcome import OUTCOME_KINDS, TestOutcome

__all__ = ["REPORT_VERSION", "SuiteSummary"]

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
        elif self.orphans_not_checked is not None:
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
        from openprogram.recording.mismatch import which_calls

        parts.append(f"{which_calls(outcome.unconsumed_calls)} never requested")
    if outcome.kind == "failed":
        parts.append("the test failed: its new recording was discarded")
    if outcome.kind == "re-recorded" and outcome.difference is None:
        parts.append("the same calls as before")
    if outcome.tokens_replayed:
        parts.append(f"{outcome.tokens_replayed:,} tokens")
    return ", ".join(parts)
