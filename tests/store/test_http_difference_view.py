"""How a report names a difference: the event by index and type, the field inside it, and
the two values found at that field (read back from the path the comparison gives)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.difference import find_first_difference
from openprogram.recording.report import DIFF_SIDES, MISSING, FirstDifference, report_view, value_at

DATA = {"choices": [{"delta": {"content": "Hel"}}], "odd key.": {"[0]": 1}, "": [None]}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("", DATA),
        ("choices[0].delta.content", "Hel"),
        ('["odd key."]["[0]"]', 1),
        ('[""][0]', None),
        ("choices[1]", MISSING),
        ("choices.x", MISSING),
        ("choices[0].delta.content.more", MISSING),
        ("choices[0]]", MISSING),
    ],
)
def test_the_value_at_a_path(path: str, value: Any) -> None:
    assert (
        value_at(DATA, path) == value if value is not MISSING else value_at(DATA, path) is MISSING
    )


def test_a_request_difference_is_shown_at_its_path() -> None:
    found = FirstDifference(2, "body.messages[2].content", "a", "b", sides=DIFF_SIDES)

    shown = report_view(found)

    assert (shown.where, shown.field, shown.recorded, shown.incoming) == (
        "call 2",
        "body.messages[2].content",
        "a",
        "b",
    )


def test_an_event_missing_on_one_side_is_shown_whole() -> None:
    event = {"type": "sse", "data": "[DONE]"}
    shown = report_view(FirstDifference(0, "event", event, MISSING, event_index=9))

    assert (shown.where, shown.field, shown.recorded, shown.incoming) == (
        "call 0, event 9 (sse)",
        None,
        event,
        MISSING,
    )


KEYS = st.text(max_size=3) | st.sampled_from(["type", "data", "a.b", '"', "[0]", "x y"])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(a=st.dictionaries(KEYS, JSON, max_size=3), b=st.dictionaries(KEYS, JSON, max_size=3))
def test_the_values_shown_are_the_values_that_differ(a: dict[str, Any], b: dict[str, Any]) -> None:
    a, b = {**a, "type": "sse"}, {**b, "type": "sse"}
    found = find_first_difference(a, b, ignore_fields=(), path="event")
    if found is None:
        return
    difference = FirstDifference(1, found.field_path, a, b, event_index=3)

    shown = report_view(difference)

    assert shown.where == "call 1, event 3 (sse)"
    if shown.field is None:
        assert (shown.recorded, shown.incoming) == (a, b)
    else:
        assert _same(shown.recorded, found.recorded)
        assert _same(shown.incoming, found.incoming)


def _same(shown: Any, reported: Any) -> bool:
    return shown is reported or (shown is not MISSING and shown == reported)


def test_a_position_mismatch_of_replay_names_the_event_but_no_field() -> None:
    shown = report_view(FirstDifference(1, "event_index", 4, 5, event_index=4))

    assert (shown.where, shown.field) == ("call 1, event 4", None)


def test_calls_paired_across_indexes_name_both() -> None:
    found = FirstDifference(3, "model.id", "a", "b", incoming_call_index=4, sides=DIFF_SIDES)

    assert report_view(found).where == "call 3 (B: call 4)"
    same_index = FirstDifference(3, "model.id", "a", "b", incoming_call_index=3, sides=DIFF_SIDES)
    assert report_view(same_index).where == "call 3"
