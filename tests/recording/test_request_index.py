"""The digest content matching looks requests up by: requests equal under the comparison
rules share it (so an equal recorded call is always found without a scan), different ones do
not, and the index hands out each digest's unserved calls in recorded order."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram.recording.content_matching import RequestIndex, request_digest
from openprogram.recording.difference import find_first_difference, ignore_rules
from openprogram.recording.format import RecordedCall
from tests.support.json_values import JSON_LIKE, PAIRS, reordered

IGNORE_SETS = st.sampled_from(
    [(), ("timestamp",), ("a",), ("body.a",), ("body[*]",), ("body.*",), ("body.b[1]",)]
)


def digest(body: Any, ignored: tuple[str, ...] = ()) -> bytes:
    return request_digest({"method": "POST", "body": body}, "http", ignore_rules(ignored))


@given(PAIRS, IGNORE_SETS)
def test_property_equal_requests_share_a_digest(pair: tuple[Any, Any], ignored: Any) -> None:
    recorded, incoming = pair

    equal = find_first_difference(recorded, incoming, ignore_fields=ignored, path="body") is None

    if equal:
        assert digest(recorded, ignored) == digest(incoming, ignored)


@given(JSON_LIKE, IGNORE_SETS)
def test_property_reordering_keeps_the_digest(value: Any, ignored: Any) -> None:
    assert digest(value, ignored) == digest(reordered(value), ignored)


@pytest.mark.parametrize(
    ("recorded", "incoming"),
    [
        ({"a": 1}, {"a": 2}),
        ({"a": 1}, {"a": 1.0}),
        ({"a": True}, {"a": 1}),
        ({"a": "1"}, {"a": 1}),
        ([1, 2], [2, 1]),
        ([1, None], [1]),
        ({"a": {}}, {}),
        ({"a": []}, {"a": {}}),
    ],
)
def test_different_requests_have_different_digests(recorded: Any, incoming: Any) -> None:
    assert digest(recorded) != digest(incoming)


def test_what_the_rules_leave_out_does_not_change_the_digest() -> None:
    assert digest({"a": 1, "b": None}) == digest({"a": 1})
    assert digest({"x": -0.0}) == digest({"x": 0.0})
    assert digest({"x": (1, 2)}) == digest({"x": [1, 2]})
    stamped = [{"m": [{"timestamp": n}]} for n in (1, 2)]
    assert digest(stamped[0], ("timestamp",)) == digest(stamped[1], ("timestamp",))
    assert digest(stamped[0]) != digest(stamped[1])
    assert digest({"b": [1, 2, 3]}, ("body.b[1]",)) == digest({"b": [1, 9, 3]}, ("body.b[1]",))
    assert digest({"b": [1, 2]}, ("body.b[1]",)) == digest({"b": [1]}, ("body.b[1]",))
    assert digest({"b": [1, 2, 3]}, ("body.b[1]",)) != digest({"b": [1]}, ("body.b[1]",))


def test_values_json_cannot_hold_are_digested_too() -> None:
    assert digest({"n": 2**70}) == digest({"n": 2**70}) != digest({"n": 2**70 + 1})
    assert digest({"s": "\ud800"}) == digest({"s": "\ud800"}) != digest({"s": "\ud801"})


def test_an_absent_section_equals_null() -> None:
    rules = ignore_rules(())
    with_null = {"method": "GET", "url": "u", "headers": {}, "body": None}
    without = {"method": "GET", "url": "u", "headers": {}}
    assert request_digest(with_null, "http", rules) == request_digest(without, "http", rules)


def test_the_index_hands_out_unserved_calls_in_recorded_order() -> None:
    def call(index: int, text: str, boundary: str = "http") -> RecordedCall:
        request = {"method": "POST", "url": "u", "headers": {}, "body": {"text": text}}
        return RecordedCall(index, index + 2, request, boundary=boundary)  # type: ignore[arg-type]

    calls = [call(0, "a"), call(1, "b"), call(2, "a"), call(3, "a", "provider"), call(4, "a")]
    rules = ignore_rules(())
    index = RequestIndex(calls, "http", rules, lambda request: request)
    served = bytearray(len(calls))
    wanted = request_digest(calls[0].request, "http", rules)

    assert list(index.candidates(wanted, served)) == [0, 2, 4]
    served[0] = served[4] = 1
    assert list(index.candidates(wanted, served)) == [2]
    assert list(index.candidates(b"unknown", served)) == []
