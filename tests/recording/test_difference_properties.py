"""Properties of the first difference over generated JSON values: none exactly when the values
are equal, and the path it names leads to the values it reports."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import given

from openprogram.recording.difference import find_first_difference
from openprogram.recording.report import MISSING
from tests.support.json_values import JSON_LIKE, PAIRS, normalize, reordered

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
