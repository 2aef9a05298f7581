"""The suite summary: totals by kind, calls and tokens replayed instead of spent; one line
per test that did more than replay (every test with -v), the first difference beneath; the
orphans, or why they were not looked for; the same as JSON; outcomes survive the trip from
an xdist worker as plain data."""

from __future__ import annotations

import orjson
import pytest

from openprogram.testing.suite_summary import SuiteSummary, TestOutcome
from openprogram.testing.summary_plugin import CollectionScope, orphans_skipped_because

DIFFERENCE = "difference at call 1, field context.messages[0].content:\nold 'hello', new 'bye'"
MISMATCH = "replay mismatch at call 1, field body.model:\nrecorded 'a', incoming 'b'"


def outcomes() -> list[TestOutcome]:
    return [
        TestOutcome("t.py::test_a", "r/a.jsonl", "none", "replayed", [0, 1], tokens_replayed=1200),
        TestOutcome(
            "t.py::test_b",
            "r/b.jsonl",
            "new_episodes",
            "re-recorded",
            [0],
            recorded_calls=1,
            dropped_calls=1,
            difference=DIFFERENCE,
            tokens_replayed=34,
        ),
        TestOutcome("t.py::test_c", "r/c.jsonl", "none", "unconsumed", [0], unconsumed_calls=[1]),
        TestOutcome("t.py::test_d", "r/d.jsonl", "live", "live"),
        TestOutcome(
            "t.py::test_e",
            "r/e.jsonl",
            "none",
            "mismatched",
            [0],
            unconsumed_calls=[3],
            mismatched_calls=[1, 2],
            difference=MISMATCH,
        ),
    ]


def test_the_terminal_lines() -> None:
    summary = SuiteSummary(outcomes(), orphans=["tests/recordings/test_old/test_gone.jsonl"])
    assert summary.lines(verbose=False) == [
        "5 tests: 1 replayed, 1 re-recorded, 1 mismatched, 1 unconsumed, 1 live; "
        "5 calls replayed; 1,234 tokens replayed instead of spent; 1 call recorded; "
        "1 unused call dropped",
        "re-recorded  t.py::test_b  (1 call replayed, 1 call recorded, 1 unused call dropped, "
        "34 tokens)",
        "    difference at call 1, field context.messages[0].content:",
        "    old 'hello', new 'bye'",
        "unconsumed   t.py::test_c  (1 call replayed, call 1 never requested)",
        "live         t.py::test_d",
        "mismatched   t.py::test_e  (1 call replayed, calls 1..2 requested but mismatched, "
        "call 3 never requested)",
        "    replay mismatch at call 1, field body.model:",
        "    recorded 'a', incoming 'b'",
        "1 orphaned recording (no collected test uses them):",
        "    tests/recordings/test_old/test_gone.jsonl",
    ]
    verbose = summary.lines(verbose=True)
    assert verbose[1] == "replayed     t.py::test_a  (2 calls replayed, 1,200 tokens)"


def test_the_json_report() -> None:
    summary = SuiteSummary(outcomes(), orphans_not_checked="tests were selected with -k")
    data = orjson.loads(orjson.dumps(summary.to_json()))
    assert data["version"] == 1
    assert data["totals"] == {
        "tests": 5,
        "replayed": 1,
        "recorded": 0,
        "re-recorded": 1,
        "mismatched": 1,
        "unconsumed": 1,
        "live": 1,
        "failed": 0,
        "error": 0,
        "calls_replayed": 5,
        "calls_recorded": 1,
        "calls_dropped": 1,
        "tokens_replayed": 1234,
    }
    assert [TestOutcome.from_json(test) for test in data["tests"]] == outcomes()
    assert (data["orphans"], data["orphans_not_checked"]) == (None, "tests were selected with -k")
    assert summary.lines(verbose=True)[-1] == (
        "orphaned recordings not looked for: tests were selected with -k"
    )
    assert not any("not looked for" in line for line in summary.lines(verbose=False))


def test_an_outcome_from_another_version_with_an_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown outcome kind 'teleported'"):
        TestOutcome.from_json({"nodeid": "x", "kind": "teleported"})


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        ({}, None),
        ({"explicit_args": True}, "tests were selected by path or node id"),
        ({"started_in_rootdir": False}, "pytest was not started from its rootdir"),
        ({"keyword": "agent"}, "tests were selected with -k"),
        ({"markers": "slow"}, "tests were selected with -m"),
        ({"ignored": True}, "paths were ignored (--ignore)"),
        ({"last_failed": True}, "only the tests that failed last were run (--lf)"),
        ({"deselected": 2}, "tests were deselected"),
        ({"collection_errors": 1}, "some test files could not be collected"),
    ],
)
def test_orphans_are_looked_for_only_after_the_whole_tree_was_collected(
    facts: dict[str, object], reason: str | None
) -> None:
    scope = CollectionScope(
        {"/r/a.jsonl"},
        deselected=int(facts.pop("deselected", 0)),  # type: ignore[call-overload]
        collection_errors=int(facts.pop("collection_errors", 0)),  # type: ignore[call-overload]
    )
    arguments: dict[str, object] = {
        "explicit_args": False,
        "started_in_rootdir": True,
        "keyword": "",
        "markers": "",
        "ignored": False,
        **facts,
    }
    assert orphans_skipped_because(scope, **arguments) == reason  # type: ignore[arg-type]
    assert CollectionScope.from_json(scope.to_json()) == scope
