"""The nearest recorded request: differences counted as leaf paths under the comparison rules
(a missing or extra subtree counts once), fewest wins, ties to the earliest candidate, at
most 64 candidates looked at."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.recording.content_matching import (
    NEAREST_CANDIDATES,
    NearestRequest,
    nearest_request,
    request_differences,
)
from openprogram.recording.difference import count_differences, find_first_difference
from tests.support.json_values import JSON_LIKE, PAIRS, reordered


@pytest.mark.parametrize(
    ("recorded", "incoming", "count"),
    [
        ({"a": 1, "b": 2}, {"a": 1, "b": 2}, 0),
        ({"a": 1, "b": 2}, {"a": 9, "b": 8}, 2),
        ({"a": {"x": 1, "y": 2}}, {"a": {"x": 1, "y": 3}}, 1),
        ({"a": {"x": 1, "y": [1, 2, 3]}}, {}, 1),  # a missing subtree counts once
        ({}, {"a": {"x": 1, "y": [1, 2, 3]}}, 1),  # and so does an extra one
        ([1, 2], [1, 2, {"deep": [3, 4]}, 5], 2),  # each extra list item once
        ({"a": None}, {}, 0),  # absent equals null
        ({"a": [1, 2]}, {"a": {"0": 1}}, 1),  # a change of type once
        (True, 1, 1),
        (1, 1.0, 1),
        (float("nan"), float("nan"), 0),
        ({"m": [{"t": 1, "c": "x"}, {"t": 2, "c": "y"}]}, {"m": [{"t": 5, "c": "x"}]}, 2),
    ],
)
def test_differences_are_counted_as_leaf_paths(recorded: Any, incoming: Any, count: int) -> None:
    assert count_differences(recorded, incoming, ignore_fields=()) == count


def test_ignored_fields_are_not_counted() -> None:
    recorded = {"timestamp": 1, "m": [{"id": 1, "t": "a"}, {"id": 2, "t": "b"}], "o": {"k": 1}}
    incoming = {"timestamp": 2, "m": [{"id": 3, "t": "a"}, {"id": 4, "t": "c"}], "o": {"k": 2}}

    assert count_differences(recorded, incoming) == 4  # timestamp skipped by name
    assert count_differences(recorded, incoming, ignore_fields=["m[*].id", "o.*"]) == 2
    assert count_differences(recorded, incoming, ignore_fields=["timestamp", "m", "o"]) == 0


def test_counting_stops_once_past_the_limit() -> None:
    recorded = {str(n): n for n in range(10)}
    incoming = {str(n): -n - 1 for n in range(10)}

    assert count_differences(recorded, incoming, ignore_fields=()) == 10
    assert count_differences(recorded, incoming, ignore_fields=(), limit=3) == 4
    assert count_differences(recorded, incoming, ignore_fields=(), limit=0) == 1
    assert count_differences(recorded, recorded, ignore_fields=(), limit=0) == 0


@given(PAIRS)
def test_property_no_differences_exactly_when_there_is_no_first_difference(
    pair: tuple[Any, Any],
) -> None:
    recorded, incoming = pair

    count = count_differences(recorded, incoming, ignore_fields=())

    assert (count == 0) == (find_first_difference(recorded, incoming, ignore_fields=()) is None)
    assert count == count_differences(incoming, recorded, ignore_fields=())
    assert count == count_differences(reordered(recorded), reordered(incoming), ignore_fields=())


@given(PAIRS, st.integers(0, 4))
def test_property_a_limited_count_is_the_count_cut_after_the_limit(
    pair: tuple[Any, Any], limit: int
) -> None:
    recorded, incoming = pair
    whole = count_differences(recorded, incoming, ignore_fields=())

    limited = count_differences(recorded, incoming, ignore_fields=(), limit=limit)

    assert limited == min(whole, limit + 1)


@given(JSON_LIKE, st.sampled_from(["a", "[*]", "*", "a.b", "[0].a", "a[*]", '["x.y"]']))
def test_property_ignoring_agrees_with_the_first_difference(value: Any, ignored: str) -> None:
    other = {"a": value, "b": [value, 1]}
    for pair in ((value, other), (other, value), ([value, 1], [value, 2])):
        count = count_differences(*pair, ignore_fields=[ignored])
        first = find_first_difference(*pair, ignore_fields=[ignored])
        assert (count == 0) == (first is None)


def http(content: str, **body: Any) -> dict[str, Any]:
    return {
        "method": "POST",
        "url": "https://api.example/v1/chat",
        "headers": {"content-type": "application/json"},
        "body": {"messages": [{"role": "user", "content": content}], **body},
    }


def test_request_differences_add_up_over_the_sections() -> None:
    recorded = http("hi", temperature=1)
    incoming = {**http("bye", temperature=2), "method": "PUT", "url": "https://other/"}

    assert request_differences(recorded, incoming, boundary="http") == 4
    assert request_differences(recorded, incoming, boundary="http", limit=1) == 2
    ignoring = ["temperature", "body.messages[*].content"]
    assert request_differences(recorded, incoming, boundary="http", ignore_fields=ignoring) == 2
    assert request_differences(recorded, {**recorded, "body_text": "x"}, boundary="http") == 1


def test_a_provider_request_is_compared_without_its_timestamps() -> None:
    def provider(text: str, timestamp: int) -> dict[str, Any]:
        message = {"role": "user", "content": text, "timestamp": timestamp}
        return {"model": {"id": "m"}, "context": {"messages": [message]}, "options": {}}

    assert request_differences(provider("a", 1), provider("a", 2), boundary="provider") == 0
    assert request_differences(provider("a", 1), provider("b", 2), boundary="provider") == 1


def test_the_fewest_differences_win_and_ties_go_to_the_earliest() -> None:
    incoming = http("hi", temperature=1, top_p=1)
    candidates = [
        http("bye", temperature=2, top_p=1),  # 2
        http("hi", temperature=2, top_p=1),  # 1
        http("hi", temperature=1, top_p=2),  # 1, later
        http("hey", temperature=1, top_p=1, seed=3),  # 2
    ]

    assert nearest_request(incoming, candidates, boundary="http") == NearestRequest(1, 1)
    assert nearest_request(incoming, [*candidates, incoming], boundary="http") == (4, 0)
    assert nearest_request(incoming, [], boundary="http") is None


def test_only_the_first_candidates_are_looked_at() -> None:
    incoming = http("hi", temperature=1)
    far = [http(f"far {n}", temperature=n + 2) for n in range(NEAREST_CANDIDATES)]

    assert NEAREST_CANDIDATES == 64
    found = nearest_request(incoming, [*far, incoming], boundary="http")
    assert found is not None
    assert found.position < NEAREST_CANDIDATES
    assert nearest_request(incoming, [*far, incoming], boundary="http", cap=65) == (64, 0)
