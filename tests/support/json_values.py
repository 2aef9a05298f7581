"""Generated JSON-like values for property tests of comparisons: scalars of every kind
(NaN, ``-0.0``, ``True`` beside ``1``), keys that need quoting, nested dicts, lists and
tuples; pairs of values, unrelated or one a small change of the other; equal variants of a
value (:func:`reordered`); and the reference equality comparisons are checked against
(:func:`normalize`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from openprogram.recording.report import MISSING

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
