"""What one test did with its recording: the fixture's outcome, read by the suite summary.

The fixture stores a :class:`TestOutcome` on the test item (:data:`OUTCOME_KEY`) when it
tears down; the plugin carries it to the process that prints the summary as plain data
(:meth:`TestOutcome.to_json` / :meth:`TestOutcome.from_json`), so the summary is whole under
pytest-xdist too. This module imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, cast, get_args

import pytest

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
    record_mode: str
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
