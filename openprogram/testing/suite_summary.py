"""The suite summary: what every test did with its recording, in the terminal and as JSON.

Built from the :class:`TestOutcome` of every test that used the fixture (gathered from the
pytest-xdist workers too) and the orphans (:mod:`~openprogram.testing.summary_plugin`). The terminal
shows the totals — tests by kind, calls replayed and recorded, tokens replayed instead of spent (the
recorded usage of every replayed call) — then one line per test that did anything but replay cleanly
(every test with ``-v``), the first difference under a re-recorded or mismatched one, and the
orphans. In ``drift`` mode a section on the live answers comes before the orphans: the totals of the
drift checks (calls sent, by worst class; calls skipped, by reason), then each test whose answers
drifted in shape or got none, with those calls' lines (every test and line with ``-v``).
``--openprogram-report PATH`` writes :meth:`SuiteSummary.to_json`, each test's drift report and the
drift totals included.

What one test did with its recording is a :class:`TestOutcome`: the fixture stores it on the test
item (:data:`OUTCOME_KEY`) when it tears down; the plugin carries it to the process that prints the
summary as plain data (:meth:`TestOutcome.to_json` / :meth:`TestOutcome.from_json`), so the summary
is whole under pytest-xdist too. This module imports nothing heavy."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

import pytest

from openprogram.wording import plural, which_calls

if TYPE_CHECKING:
    from openprogram.testing.recording_settings import RecordMode

__all__ = ["REPORT_VERSION", "SuiteSummary", "outcome_detail"]

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
    """Indexes of recorded calls the test never requested (nor met in a mismatch)."""
    mismatched_calls: list[int] = field(default_factory=list)
    """Indexes of recorded calls a request of the test was compared with and differed from
    (the calls its mismatches name), and that were never served."""
    dropped_calls: int = 0
    """Recorded calls left out of a merged recording (``new_episodes``): never requested."""
    difference: str | None = None
    """The first difference: the mismatch report, or for a re-recorded test the first
    difference between the old recording and the new one (None when they are the same)."""
    differences: list[str] = field(default_factory=list)
    """For a re-recorded test: every difference between the recording it replaced and the
    new one (the first 50), each a report; the page to review shows them."""
    tokens_replayed: int | None = None
    """Tokens the replayed calls' recorded usage counts (input and output), filled in by the
    summary; None when no replayed call recorded its usage."""
    not_recorded: list[str] = field(default_factory=list)
    """While recording: the connections (``host:port (library)``) no boundary captured."""
    drift: dict[str, Any] | None = None
    """``drift`` mode: the drift check of the calls the test was served, as
    :meth:`openprogram.drift.check.DriftReport.to_json` gives it (None: not checked — another
    mode, or the test did not pass against its recording)."""

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
            "drift": self.drift_totals(),
        }

    def drift_totals(self) -> dict[str, Any] | None:
        """The totals of the drift checks (None when no test was checked): tests checked and
        failing, calls sent, calls by result (a drifted call counted under its worst class),
        and the calls skipped by reason."""
        checked = [outcome.drift for outcome in self.outcomes if outcome.drift is not None]
        if not checked:
            return None
        counts = dict.fromkeys(DRIFT_RESULTS, 0)
        reasons: dict[str, int] = {}
        for report in checked:
            for key, count in report["counts"].items():
                counts[key] = counts.get(key, 0) + count
            for call in report["calls"]:
                if call["result"] == "skipped":
                    reason = str(call["reason"])
                    reasons[reason] = reasons.get(reason, 0) + 1
        return {
            "tests": len(checked),
            "failing_tests": sum(1 for report in checked if report["failed"]),
            "calls_sent": sum(counts[key] for key in SENT_RESULTS),
            **counts,
            "skipped_reasons": reasons,
        }

    def lines(self, *, verbose: bool) -> list[str]:
        """The terminal section's lines."""
        lines = [self._totals()]
        for outcome in self.outcomes:
            if verbose or outcome.kind != "replayed" or outcome.unconsumed_calls:
                lines.extend(_test_lines(outcome))
        lines.extend(self._drift_lines(verbose=verbose))
        if self.orphans:
            lines.append(
                f"{plural(len(self.orphans), 'orphaned recording')} (no collected test uses them):"
            )
            lines.extend(f"{_INDENT}{orphan}" for orphan in self.orphans)
        elif self.orphans_not_checked is not None and verbose:
            # Said only when asked (-v): a run that selects tests selects them on purpose.
            lines.append(f"orphaned recordings not looked for: {self.orphans_not_checked}")
        return lines

    def _drift_lines(self, *, verbose: bool) -> list[str]:
        """The drift section: its totals (with the reasons calls were skipped), then each test
        whose live answers drifted in shape (breaking or additive) or could not be had, its
        worst result and those calls' lines. A live answer always holds other text, so
        content drift is counted, and its lines shown only with ``-v`` (which lists every
        test checked, and every call's line)."""
        totals = self.drift_totals()
        if totals is None:
            return []
        sent = ", ".join(f"{totals[key]} {key}" for key in SENT_RESULTS if totals[key])
        head = (
            f"drift against the live providers: {plural(totals['tests'], 'test')} checked, "
            f"{totals['failing_tests']} failing; {plural(totals['calls_sent'], 'call')} sent"
        )
        head += f" ({sent})" if sent else ""
        if totals["skipped"]:
            head += f"; {plural(totals['skipped'], 'call')} skipped"
        lines = [head]
        lines += [
            f"{_INDENT}skipped {count}: {reason}"
            for reason, count in totals["skipped_reasons"].items()
        ]
        for outcome in self.outcomes:
            report = outcome.drift
            if report is None:
                continue
            worst = _worst(report["counts"])
            if not verbose and worst not in SHOWN_RESULTS:
                continue
            failing = "  (the test failed)" if report["failed"] else ""
            lines.append(f"{worst:<12} {outcome.nodeid}{failing}")
            for call in report["calls"]:
                if not verbose:
                    shown = [drift for drift in call["drift"] if drift["class"] in SHOWN_RESULTS]
                    if call["result"] != "failed" and not shown:
                        continue
                    call = {**call, "drift": shown}
                lines.extend(f"{_INDENT}{line}" for line in drift_call_lines(call))
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


DRIFT_CLASSES = ("breaking", "additive", "content")
"""The classes of drift, worst first (:data:`openprogram.drift.check.DRIFT_CLASSES`, which
this module does not import: the plugin loads it in every pytest run)."""

SENT_RESULTS = (*DRIFT_CLASSES, "unchanged", "failed")
"""What a call sent live came to: its worst drift, no drift, or no answer."""

DRIFT_RESULTS = (*SENT_RESULTS, "skipped")
"""The keys of a drift report's ``counts``."""

SHOWN_RESULTS = ("breaking", "additive", "failed")
"""What the summary shows the lines of without ``-v``: drift in shape, and calls that got no
answer."""


def _worst(counts: dict[str, int]) -> str:
    """A checked test's worst result: its worst drift class, else ``failed`` (a call got no
    answer), ``unchanged``, or ``skipped`` (no call sent)."""
    order = (*DRIFT_CLASSES, "failed", "unchanged")
    return next((key for key in order if counts.get(key)), "skipped")


def drift_call_lines(call: dict[str, Any]) -> list[str]:
    """One checked call's lines, from its JSON: the lines
    :meth:`openprogram.drift.check.CallDrift.lines` writes (the summary gets the calls as
    plain data, from pytest-xdist workers too)."""
    head = f"call {call['call_index']} {call['call']}"
    if call["result"] == "drifted":
        return [
            f"{head}: {drift['class']}: {drift['path']} {drift['what']}: "
            f"{drift['recorded']} → {drift['live']}"
            for drift in call["drift"]
        ]
    if call["result"] == "unchanged":
        return [f"{head}: no drift"]
    return [f"{head}: {call['result']}: {call['reason']}"]


def _test_lines(outcome: TestOutcome) -> list[str]:
    head = f"{outcome.kind:<12} {outcome.nodeid}"
    detail = outcome_detail(outcome)
    lines = [f"{head}  ({detail})" if detail else head]
    if outcome.difference and outcome.kind in ("re-recorded", "mismatched", "error"):
        lines.extend(f"{_INDENT}{line}" for line in outcome.difference.splitlines())
    return lines


def outcome_detail(outcome: TestOutcome) -> str:
    """What a test's calls came to, on one line (the terminal's and the page's)."""
    parts = []
    if outcome.replayed_calls:
        parts.append(f"{plural(len(outcome.replayed_calls), 'call')} replayed")
    if outcome.recorded_calls:
        parts.append(f"{plural(outcome.recorded_calls, 'call')} recorded")
    if outcome.dropped_calls:
        parts.append(f"{plural(outcome.dropped_calls, 'unused call')} dropped")
    if outcome.mismatched_calls:
        parts.append(f"{which_calls(outcome.mismatched_calls)} requested but mismatched")
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
