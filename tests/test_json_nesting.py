"""The shared nesting limit: depth counting and the cheap text pre-check."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from openprogram.json_nesting import (
    MAX_NESTING_DEPTH,
    exceeds_nesting_limit,
    json_text_may_exceed_nesting_limit,
    nesting_depth,
)


def nested_list(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_depth_counts_containers() -> None:
    assert nesting_depth(1) == 0
    assert nesting_depth("x") == 0
    assert nesting_depth([]) == 1
    assert nesting_depth({"a": 1}) == 1
    assert nesting_depth({"a": [1]}) == 2
    assert nesting_depth({"a": [1], "b": {"c": {"d": []}}}) == 4


def test_a_value_far_deeper_than_the_recursion_limit_is_measured_without_recursing() -> None:
    assert nesting_depth(nested_list(50_000)) == 50_000


def test_the_limit_itself_is_allowed_one_more_is_not() -> None:
    assert not exceeds_nesting_limit(nested_list(MAX_NESTING_DEPTH))
    assert exceeds_nesting_limit(nested_list(MAX_NESTING_DEPTH + 1))


def test_stop_after_ends_the_walk_early() -> None:
    assert nesting_depth(nested_list(10_000), stop_after=5) == 6


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=40,
)


@given(JSON, st.integers(min_value=0, max_value=8))
def test_the_text_pre_check_never_misses_a_value_over_the_limit(value: object, limit: int) -> None:
    text = orjson.dumps(value)
    if exceeds_nesting_limit(value, limit):
        assert json_text_may_exceed_nesting_limit(text, limit)
        assert json_text_may_exceed_nesting_limit(text.decode(), limit)
