"""Properties of the first difference over generated JSON values: none exactly when the values
are equal, and the path it names leads to the values it reports."""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from openprogram.recording.difference import (
    MISSING,
    find_first_difference,
)

# --- properties ------------------------------------------------------------------------------

NAN = float("nan")
KEYS = st.sampled_from(["a", "b", "c", "timestamp", "a b", "x.y", 'q"', "é", "", "0"]) | st.text(
    max_size=3
)
SCALARS = (
    st.sampled_from([None, True, False, 0, 1, 0.0, 1.0, -0.0, NAN, "", "1", "a\nb"])
    | st.integers(-3, 3)
    | st.floats()
    | st.text(max_size=3)
)
JSON_LIKE = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4)
        | st.lists(children, max_size=3).map(tuple)
        | st.dictionaries(KEYS, children, max_size=4)
    ),
    max_leaves=25,
)


def normalize(value: Any) -> Any:
    """Reference equality: None-valued entries dropped, every scalar tagged with its type."""
    if isinstance(value, dict):
        return ("dict", {key: normalize(item) for key, item in value.items() if item is not None})
    if isinstance(value, list | tuple):
        return ("list", [normalize(item) for item in value])
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if value is MISSING:
        return ("missing",)
    return (type(value).__name__, value)


_PLAIN = re.compile(r"[A-Za-z0-9_-]+")
_DECODER = json.JSONDecoder()


def parse_field_path(path: str) -> list[str | int]:
    """Read a reported field path back into dict keys and list indexes."""
    parts: list[str | int] = []
    position = 0
    while position < len(path):
        if path.startswith('["', position):
            key, end = _DECODER.raw_decode(path, position + 1)
            assert isinstance(key, str)
            assert path[end] == "]"
            parts.append(key)
            position = end + 1
        elif path[position] == "[":
            end = path.index("]", position)
            parts.append(int(path[position + 1 : end]))
            position = end + 1
        else:
            if position > 0:
                assert path[position] == "."
                position += 1
            match = _PLAIN.match(path, position)
            assert match is not None, path
            parts.append(match.group())
            position = match.end()
    return parts


def follow(value: Any, parts: list[str | int]) -> Any:
    """The value at the path; MISSING if the last slot is absent (the others must exist)."""
    for depth, part in enumerate(parts):
        last = depth == len(parts) - 1
        if isinstance(part, int):
            assert isinstance(value, list | tuple)
            if last and part >= len(value):
                return MISSING
            value = value[part]
        else:
            assert isinstance(value, dict)
            if last and part not in value:
                return MISSING
            value = value[part]
    return value


def reordered(value: Any) -> Any:
    """An equal value: dict order reversed, None entries dropped, lists and tuples swapped."""
    if isinstance(value, dict):
        items = [(k, reordered(v)) for k, v in reversed(value.items()) if v is not None]
        return dict(items)
    if isinstance(value, list):
        return tuple(reordered(item) for item in value)
    if isinstance(value, tuple):
        return [reordered(item) for item in value]
    if isinstance(value, float) and math.isnan(value):
        return float("nan")
    return value


def node_paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    paths = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += node_paths(item, (*prefix, key))
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            paths += node_paths(item, (*prefix, index))
    return paths


def replace_at(value: Any, parts: tuple[str | int, ...], change: Callable[[Any], Any]) -> Any:
    if not parts:
        return change(value)
    head, rest = parts[0], parts[1:]
    if isinstance(value, dict):
        return {**value, head: replace_at(value[head], rest, change)}
    assert isinstance(head, int)
    items = list(value)
    items[head] = replace_at(items[head], rest, change)
    return type(value)(items)


@st.composite
def mutated_pairs(draw: st.DrawFn) -> tuple[Any, Any]:
    original = draw(JSON_LIKE)
    target = draw(st.sampled_from(node_paths(original)))
    replacement = draw(JSON_LIKE)
    key = draw(KEYS)

    def change(node: Any) -> Any:
        choices: list[Any] = [replacement]
        if isinstance(node, dict):
            choices += [{**node, key: replacement}, {k: v for k, v in node.items() if k != key}]
            if node:
                dropped = next(iter(node))
                choices.append({k: v for k, v in node.items() if k != dropped})
        elif isinstance(node, list | tuple):
            choices += [type(node)([*node, replacement]), node[:-1]]
        return draw(st.sampled_from(choices))

    mutated = replace_at(original, target, change)
    return (mutated, original) if draw(st.booleans()) else (original, mutated)


PAIRS = st.tuples(JSON_LIKE, JSON_LIKE) | mutated_pairs()


@given(JSON_LIKE)
def test_property_a_value_equals_itself_and_its_copies(value: Any) -> None:
    assert find_first_difference(value, value, ignore_fields=()) is None
    assert find_first_difference(value, copy.deepcopy(value), ignore_fields=()) is None
    assert find_first_difference(value, reordered(value), ignore_fields=()) is None


@given(PAIRS)
def test_property_no_difference_exactly_when_reference_says_equal(pair: tuple[Any, Any]) -> None:
    recorded, incoming = pair

    found = find_first_difference(recorded, incoming, ignore_fields=())

    assert (found is None) == (normalize(recorded) == normalize(incoming))


@given(PAIRS)
def test_property_reported_path_leads_to_the_reported_values(pair: tuple[Any, Any]) -> None:
    recorded, incoming = pair

    found = find_first_difference(recorded, incoming, ignore_fields=())

    if found is None:
        return
    parts = parse_field_path(found.field_path)
    assert follow(recorded, parts) is found.recorded
    assert follow(incoming, parts) is found.incoming
    reported = [found.recorded, found.incoming]
    if parts and isinstance(parts[-1], str):  # in a dict an absent key equals None
        reported = [None if side is MISSING else side for side in reported]
    assert normalize(reported[0]) != normalize(reported[1])


@given(PAIRS)
def test_property_result_ignores_order_and_sides(pair: tuple[Any, Any]) -> None:
    recorded, incoming = pair

    found = find_first_difference(recorded, incoming, ignore_fields=())
    swapped = find_first_difference(incoming, recorded, ignore_fields=())
    reordered_found = find_first_difference(
        reordered(recorded), reordered(incoming), ignore_fields=()
    )

    if found is None:
        assert swapped is None
        assert reordered_found is None
    else:
        assert swapped is not None
        assert reordered_found is not None
        assert swapped.field_path == found.field_path == reordered_found.field_path
        assert swapped.recorded is found.incoming
        assert swapped.incoming is found.recorded
