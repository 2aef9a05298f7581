"""The first difference between two JSON values: each rule, the fields left out, and the
report line that names it."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from openprogram.errors import ReplayMismatch
from openprogram.recording.difference import (
    NON_DETERMINISTIC_FIELD_NAMES,
    Difference,
    find_first_difference,
    join_field_path,
)
from openprogram.recording.report import MISSING, format_report_path, format_report_value

# --- the rules, one by one -----------------------------------------------------------------


def _request(reply: str) -> dict[str, Any]:
    return {
        "context": {
            "system_prompt": "Be brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                {"role": "tool_result", "content": [{"type": "text", "text": reply}]},
            ],
        }
    }


def test_spec_example_reports_the_full_path() -> None:
    difference = find_first_difference(_request("echo:hi"), _request("echo:bye"), path="")

    assert difference == Difference("context.messages[2].content[0].text", "echo:hi", "echo:bye")


def test_equal_requests_have_no_difference() -> None:
    assert find_first_difference(_request("echo:hi"), _request("echo:hi")) is None


def test_difference_at_the_root_has_an_empty_path() -> None:
    assert find_first_difference("a", "b") == Difference("", "a", "b")


def test_starting_path_prefixes_every_reported_path() -> None:
    recorded = {"messages": [{"text": "a"}]}
    incoming = {"messages": [{"text": "b"}]}

    found = find_first_difference(recorded, incoming, path="context")

    assert found == Difference("context.messages[0].text", "a", "b")
    assert find_first_difference(1, 2, path="model") == Difference("model", 1, 2)


@pytest.mark.parametrize(
    ("recorded", "incoming"),
    [(True, 1), (1, 1.0), (True, 1.0), (False, 0), (0, 0.0), (False, 0.0), ("1", 1)],
)
def test_bool_int_and_float_are_distinct(recorded: Any, incoming: Any) -> None:
    assert find_first_difference(recorded, incoming) == Difference("", recorded, incoming)
    nested = find_first_difference({"n": [recorded]}, {"n": [incoming]})
    assert nested == Difference("n[0]", recorded, incoming)


def test_nan_equals_nan_but_nothing_else() -> None:
    assert find_first_difference(float("nan"), float("nan")) is None
    assert find_first_difference({"x": [float("nan")]}, {"x": [float("nan")]}) is None
    assert find_first_difference({"x": float("nan")}, {"x": 1.0}) is not None
    assert find_first_difference({"x": float("nan")}, {"x": None}) is not None


def test_absent_key_equals_explicit_none() -> None:
    assert find_first_difference({"a": 1, "b": None}, {"a": 1}) is None
    assert find_first_difference({"a": 1}, {"a": 1, "b": None}) is None
    assert find_first_difference({"x": [{"b": None}]}, {"x": [{}]}) is None


@pytest.mark.parametrize("value", [1, 0, False, "", [], {}])
def test_key_on_one_side_only_reports_missing(value: Any) -> None:
    assert find_first_difference({"a": value}, {}) == Difference("a", value, MISSING)
    assert find_first_difference({}, {"a": value}) == Difference("a", MISSING, value)


def test_none_against_a_value_reports_none() -> None:
    assert find_first_difference({"a": None}, {"a": 0}) == Difference("a", None, 0)


def test_longer_list_reports_first_extra_index() -> None:
    assert find_first_difference([1, 2], [1, 2, 3, 4]) == Difference("[2]", MISSING, 3)
    assert find_first_difference({"l": [1, 2, 3]}, {"l": [1]}) == Difference("l[1]", 2, MISSING)
    assert find_first_difference([], [None]) == Difference("[0]", MISSING, None)


def test_item_difference_comes_before_length_difference() -> None:
    assert find_first_difference([1, 2], [1, 5, 3]) == Difference("[1]", 2, 5)


def test_items_held_by_both_lists_as_the_same_objects_are_passed_over_to_the_first_change() -> None:
    shared = [{"n": n} for n in range(50)]
    assert find_first_difference([*shared, {"n": 1}], [*shared, {"n": 1}]) is None
    changed = find_first_difference([*shared, {"n": 1}, 7], [*shared, {"n": 2}, 7])
    assert changed == Difference("[50].n", 1, 2)
    assert find_first_difference(shared, [*shared[:30], {"n": 30}, *shared[31:]]) is None
    float_copy = [*shared[:30], {"n": 30.0}, *shared[31:]]  # 30.0 beside 30: unequal
    assert find_first_difference(shared, float_copy) == Difference("[30].n", 30, 30.0)
    assert find_first_difference(shared, [*shared, None]) == Difference("[50]", MISSING, None)
    assert find_first_difference([*shared, 1], shared) == Difference("[50]", 1, MISSING)


def test_type_change_reports_both_whole_values() -> None:
    found = find_first_difference({"a": {"b": 1}}, {"a": [1]})
    assert found == Difference("a", {"b": 1}, [1])
    assert find_first_difference({"a": "text"}, {"a": {"b": 1}}) == Difference(
        "a", "text", {"b": 1}
    )
    assert find_first_difference({"a": [1]}, {"a": "x"}) == Difference("a", [1], "x")


def test_tuple_counts_as_list() -> None:
    assert find_first_difference({"a": (1, 2)}, {"a": [1, 2]}) is None
    assert find_first_difference((1, 2), [1, 3]) == Difference("[1]", 2, 3)


def test_alphabetically_first_differing_key_wins_whatever_the_insertion_order() -> None:
    recorded = {"zeta": 1, "beta": 1, "alpha": 1}
    incoming = {"alpha": 2, "zeta": 2, "beta": 2}

    assert find_first_difference(recorded, incoming) == Difference("alpha", 1, 2)
    assert find_first_difference(incoming, recorded) == Difference("alpha", 2, 1)
    # A key present on one side only still sorts among the others.
    assert find_first_difference({"b": 1, "c": 1}, {"c": 2, "b": 1, "a": 3}) == Difference(
        "a", MISSING, 3
    )


@pytest.mark.parametrize(
    ("key", "root_path", "nested_path"),
    [
        ("plain_key-1", "plain_key-1", "x.plain_key-1"),
        ("0", "0", "x.0"),
        ("a b", '["a b"]', 'x["a b"]'),
        ("a.b", '["a.b"]', 'x["a.b"]'),
        ('say "hi"', '["say \\"hi\\""]', 'x["say \\"hi\\""]'),
        ("back\\slash", '["back\\\\slash"]', 'x["back\\\\slash"]'),
        ("é", '["é"]', 'x["é"]'),
        ("line\nbreak", '["line\\nbreak"]', 'x["line\\nbreak"]'),
        ("", '[""]', 'x[""]'),
    ],
)
def test_key_quoting(key: str, root_path: str, nested_path: str) -> None:
    assert find_first_difference({key: 1}, {key: 2}) == Difference(root_path, 1, 2)
    assert find_first_difference({"x": {key: 1}}, {"x": {key: 2}}) == Difference(nested_path, 1, 2)
    assert join_field_path("", key) == root_path
    assert join_field_path("x", key) == nested_path


def test_join_field_path_with_index() -> None:
    assert join_field_path("", 3) == "[3]"
    assert join_field_path("messages", 0) == "messages[0]"
    assert join_field_path('a["b c"]', 12) == 'a["b c"][12]'


# --- ignore_fields ---------------------------------------------------------------------------


def test_timestamp_is_skipped_at_any_depth_by_default() -> None:
    assert frozenset({"timestamp"}) == NON_DETERMINISTIC_FIELD_NAMES
    recorded = {"timestamp": 1, "a": [{"timestamp": 1, "b": {"timestamp": 1}}]}
    incoming = {"timestamp": 2, "a": [{"timestamp": 2, "b": {}}]}

    assert find_first_difference(recorded, incoming) is None


def test_custom_ignore_fields_replace_the_default() -> None:
    recorded = {"a": {"timestamp": 1, "id": "x"}}
    incoming = {"a": {"timestamp": 2, "id": "y"}}

    assert find_first_difference(recorded, incoming, ignore_fields=()) == Difference(
        "a.id", "x", "y"
    )
    assert find_first_difference(recorded, incoming, ignore_fields=["id"]) == Difference(
        "a.timestamp", 1, 2
    )
    assert find_first_difference(recorded, incoming, ignore_fields={"id", "timestamp"}) is None


def test_ignore_path_with_any_index() -> None:
    recorded = {"context": {"messages": [{"at": 1, "text": "a"}, {"at": 1, "text": "a"}]}}
    incoming = {"context": {"messages": [{"at": 2, "text": "a"}, {"at": 3, "text": "b"}]}}
    ignore = ["context.messages[*].at"]

    assert find_first_difference(recorded, incoming, ignore_fields=ignore) == Difference(
        "context.messages[1].text", "a", "b"
    )


def test_ignore_path_with_a_fixed_index_ignores_only_that_index() -> None:
    recorded = {"m": [{"at": 1}, {"at": 1}]}
    incoming = {"m": [{"at": 2}, {"at": 2}]}

    assert find_first_difference(recorded, incoming, ignore_fields=["m[0].at"]) == Difference(
        "m[1].at", 1, 2
    )


def test_ignore_path_with_any_key() -> None:
    recorded = {"options": {"metadata": {"run": 1, "a b": 1}, "temperature": 0.5}}
    incoming = {"options": {"metadata": {"run": 2, "a b": 2}, "temperature": 0.7}}

    found = find_first_difference(recorded, incoming, ignore_fields=["options.metadata.*"])

    assert found == Difference("options.temperature", 0.5, 0.7)


def test_ignore_path_skips_a_whole_subtree_and_missing_keys() -> None:
    recorded = {"options": {"metadata": {"run": 1}}, "model": "m"}
    incoming = {"options": {}, "model": "m"}

    assert find_first_difference(recorded, incoming, ignore_fields=["options.metadata"]) is None
    assert find_first_difference(recorded, incoming, ignore_fields=()) == Difference(
        "options.metadata", {"run": 1}, MISSING
    )


def test_ignore_path_with_any_index_covers_extra_list_items() -> None:
    assert find_first_difference({"l": [1]}, {"l": [1, 2, 3]}, ignore_fields=["l[*]"]) is None
    assert find_first_difference(
        {"l": [1]}, {"l": [1, 2, 3]}, ignore_fields=["l[1]"]
    ) == Difference("l[2]", MISSING, 3)


def test_ignore_path_with_quoted_key_and_star_at_root() -> None:
    recorded = {"a b": {"c": 1}, "d": {"c": 1}, "e": {"f": 1}}
    incoming = {"a b": {"c": 2}, "d": {"c": 2}, "e": {"f": 2}}

    assert find_first_difference(recorded, incoming, ignore_fields=['["a b"].c']) == Difference(
        "d.c", 1, 2
    )
    # A quoted plain key means the same field as the dotted form.
    assert find_first_difference(
        recorded, incoming, ignore_fields=['["a b"].c', '["d"]["c"]']
    ) == Difference("e.f", 1, 2)
    assert find_first_difference(recorded, incoming, ignore_fields=["*.c"]) == Difference(
        "e.f", 1, 2
    )


def test_ignore_path_matches_the_starting_path() -> None:
    found = find_first_difference({"a": 1}, {"a": 2}, path="options", ignore_fields=['["options"]'])
    assert found is None
    # A bare name only ever matches a dict key met during the walk.
    found = find_first_difference({"a": 1}, {"a": 2}, path="options", ignore_fields=["options"])
    assert found == Difference("options.a", 1, 2)
    found = find_first_difference({"a": 1}, {"a": 2}, path="options", ignore_fields=["options.a"])
    assert found is None
    found = find_first_difference({"a": 1}, {"a": 2}, path="options", ignore_fields=["a.a"])
    assert found == Difference("options.a", 1, 2)


@pytest.mark.parametrize("bad", ["a..b", ".a", "a.", "a[x]", 'a["b"c', "a[0]b", "a[*"])
def test_unreadable_ignore_path_is_an_error(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot read ignore path"):
        find_first_difference({"a": 1}, {"a": 1}, ignore_fields=[bad])


def test_a_single_string_as_ignore_fields_is_refused() -> None:
    with pytest.raises(TypeError):
        find_first_difference({}, {}, ignore_fields="timestamp")


# --- the report ------------------------------------------------------------------------------


def test_format_report_value_uses_repr() -> None:
    assert format_report_value("echo:hi") == "'echo:hi'"
    assert format_report_value(1.0) == "1.0"
    assert format_report_value(MISSING) == "<missing>"
    assert repr(MISSING) == "<missing>"


def test_a_long_field_path_is_cut_in_the_middle_in_the_report_but_kept_whole() -> None:
    key = "k" * 5_000
    difference = find_first_difference({"options": {key: 1}}, {"options": {key: 2}})
    assert difference is not None
    mismatch = ReplayMismatch(3, difference.field_path, 1, 2)
    first, second = str(mismatch).split("\n")
    assert len(first) <= 260
    assert first.startswith("replay mismatch at call 3, field options.kkk")
    assert first.endswith("kkk:")
    assert "…" in first
    assert second == "recorded 1, incoming 2"
    assert mismatch.field_path == difference.field_path  # the attribute keeps it whole
    assert len(mismatch.field_path) > 5_000


def test_format_report_path_keeps_short_paths_and_both_ends_of_long_ones() -> None:
    assert format_report_path("context.messages[2].content[0].text") == (
        "context.messages[2].content[0].text"
    )
    assert format_report_path("a" * 200) == "a" * 200
    long = "start." + "x" * 500 + ".leaf"
    shown = format_report_path(long)
    assert len(shown) == 200
    assert shown.startswith("start.x")
    assert shown.endswith("x.leaf")


def test_format_report_value_cuts_long_values() -> None:
    text = format_report_value("x" * 500)

    assert text == "'" + "x" * 199 + "…"
    assert len(text) == 201
    assert format_report_value("x" * 198) == "'" + "x" * 198 + "'"  # exactly 200: kept whole
    assert format_report_value("abcdef", limit=4) == "'abc…"


class _MultilineRepr:
    def __repr__(self) -> str:
        return "first\nsecond\r\nthird\tfourth\u2028fifth"


@pytest.mark.parametrize(
    "value", ["a\nb\r\tc", {"k": "a\nb"}, ["\n"], _MultilineRepr(), "\u2028\x85\x0b\x0c"]
)
def test_format_report_value_has_no_line_breaks(value: Any) -> None:
    text = format_report_value(value)

    assert len(text.splitlines()) == 1
    assert "\t" not in text


def test_format_report_value_escapes_a_custom_repr() -> None:
    assert format_report_value(_MultilineRepr()) == (
        "first\\nsecond\\r\\nthird\\tfourth\\u2028fifth"
    )


def test_missing_is_a_falsy_singleton() -> None:
    assert not MISSING
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert copy.copy(MISSING) is MISSING
    assert copy.deepcopy({"a": [MISSING]})["a"][0] is MISSING
