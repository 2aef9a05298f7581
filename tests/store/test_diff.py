"""``compare_recordings`` and ``openprogram recordings diff``: calls aligned by content."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.report import MISSING
from openprogram.store.comparison import compare_recordings, first_difference
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.recording_rows import Row, call_rows, header, text_events, write_rows


def write(path: Path, calls: list[tuple[str, str]], *, outcome: str | None = "complete") -> Path:
    """A recording of ``calls``, each a user text and the reply to it; the last call ends with
    ``outcome`` (None: cut short)."""
    rows: list[Row] = [header()]
    for index, (text, reply) in enumerate(calls):
        end = outcome if index == len(calls) - 1 else "complete"
        rows += call_rows(index, text_events(reply), text=text, outcome=end)
    return write_rows(path, rows)


def compare(tmp_path: Path, first: list[tuple[str, str]], second: list[tuple[str, str]]) -> Any:
    a = write(tmp_path / "a.jsonl", first)
    b = write(tmp_path / "b.jsonl", second)
    return compare_recordings(read_recording(a), read_recording(b))


def test_a_request_difference_names_the_call_and_the_field(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi"), ("x", "echo:x")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:hi"), ("y", "echo:x")])
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.call_index, found.field_path, found.recorded, found.incoming) == (
        1,
        "context.messages[0].content",
        "x",
        "y",
    )
    assert (found.event_index, found.incoming_call_index) == (None, 1)
    comparison = compare_recordings(read_recording(a), read_recording(b))
    assert (comparison.only_in_a, comparison.only_in_b) == ([1], [1])
    assert [entry.kind for entry in comparison.differences] == ["request"]


def test_a_changed_reply_is_an_event_difference_of_a_paired_call(tmp_path: Path) -> None:
    comparison = compare(tmp_path, [("hi", "echo:hi")], [("hi", "echo:ho")])
    assert (comparison.only_in_a, comparison.only_in_b) == ([], [])
    (entry,) = comparison.differences
    found = entry.difference
    assert entry.kind == "reply"
    assert (found.call_index, found.event_index, found.field_path) == (0, 2, "event.delta")
    assert found.recorded == {"type": "text_delta", "content_index": 0, "delta": "echo:hi"}
    assert found.incoming["delta"] == "echo:ho"


def test_a_call_only_in_b_is_reported_alone(tmp_path: Path) -> None:
    comparison = compare(tmp_path, [("hi", "echo:hi")], [("hi", "echo:hi"), ("more", "echo:more")])
    assert (comparison.only_in_a, comparison.only_in_b) == ([], [1])
    (entry,) = comparison.differences
    assert (entry.kind, entry.a_call_index, entry.b_call_index) == ("only_in_b", None, 1)
    assert entry.difference.recorded is MISSING
    assert entry.difference.detail == (
        "only in B: a provider call (fake:m1); A has no unpaired call left to compare it with"
    )
    assert (comparison.calls_a, comparison.calls_b) == (1, 2)


def test_an_inserted_call_does_not_shift_the_later_calls(tmp_path: Path) -> None:
    calls = [(f"q{n}", f"r{n}") for n in range(4)]
    comparison = compare(tmp_path, calls, [calls[0], ("new", "r-new"), *calls[1:]])
    assert (comparison.only_in_a, comparison.only_in_b) == ([], [1])
    assert [entry.kind for entry in comparison.differences] == ["only_in_b"]

    removed = compare(tmp_path, calls, [*calls[:2], *calls[3:]])
    assert (removed.only_in_a, removed.only_in_b) == ([2], [])
    assert [entry.kind for entry in removed.differences] == ["only_in_a"]


def test_another_interleaving_of_the_same_calls_is_the_same(tmp_path: Path) -> None:
    first = [("A start", "a1"), ("B start", "b1"), ("A next", "a2"), ("B next", "b2")]
    second = [first[1], first[0], first[3], first[2]]
    comparison = compare(tmp_path, first, second)
    assert comparison.same
    assert comparison.hash_a == comparison.hash_b
    result = run("diff", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"))
    assert result.exit_code == 0, result.stdout
    assert result.stdout.startswith("✔ the recordings are the same")


def test_identical_requests_pair_in_recorded_order(tmp_path: Path) -> None:
    comparison = compare(tmp_path, [("x", "r1"), ("x", "r2")], [("x", "r1"), ("x", "r3")])
    (entry,) = comparison.differences
    assert (entry.kind, entry.a_call_index, entry.b_call_index) == ("reply", 1, 1)
    assert (entry.difference.recorded["delta"], entry.difference.incoming["delta"]) == (
        "r2",
        "r3",
    )

    in_order = compare(tmp_path, [("x", "r1"), ("x", "r2")], [("x", "r3"), ("x", "r4")])
    assert [(e.a_call_index, e.b_call_index) for e in in_order.differences] == [(0, 0), (1, 1)]


def test_identical_requests_whose_replies_came_in_another_order_are_the_same(
    tmp_path: Path,
) -> None:
    # Two agents sent the same request; which reply was recorded first depends on timing.
    comparison = compare(tmp_path, [("x", "r1"), ("x", "r2")], [("x", "r2"), ("x", "r1")])
    assert comparison.same
    assert comparison.hash_a == comparison.hash_b


def test_an_unpaired_call_is_compared_with_the_nearest_unpaired_call(tmp_path: Path) -> None:
    a = write_rows(tmp_path / "a.jsonl", [header(), *call_rows(0, text="a", model_id="m1")])
    b = write_rows(
        tmp_path / "b.jsonl",
        [
            header(),
            *call_rows(0, text="b", model_id="m2"),  # two fields away
            *call_rows(1, text="c", model_id="m1"),  # one field away: the nearest
        ],
    )
    comparison = compare_recordings(read_recording(a), read_recording(b))
    assert (comparison.only_in_a, comparison.only_in_b) == ([0], [0, 1])
    request, alone = comparison.differences
    assert (request.kind, request.a_call_index, request.b_call_index) == ("request", 0, 1)
    assert request.difference.field_path == "context.messages[0].content"
    assert (alone.kind, alone.b_call_index) == ("only_in_b", 0)


def test_of_equally_near_unpaired_calls_the_earliest_is_the_counterpart(tmp_path: Path) -> None:
    a = write_rows(tmp_path / "a.jsonl", [header(), *call_rows(0, text="a", model_id="m2")])
    b = write_rows(
        tmp_path / "b.jsonl",
        [
            header(),
            *call_rows(0, text="b", model_id="m3"),  # two fields away
            *call_rows(1, text="c", model_id="m1"),  # two fields away
            *call_rows(2, text="d", model_id="m1"),  # two fields away
        ],
    )
    comparison = compare_recordings(read_recording(a), read_recording(b))
    assert [(e.kind, e.b_call_index) for e in comparison.differences] == [
        ("request", 0),
        ("only_in_b", 1),
        ("only_in_b", 2),
    ]


def test_a_truncated_call_differs_from_a_complete_one(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    b = write(tmp_path / "b.jsonl", [("hi", "echo:hi")], outcome=None)
    found = first_difference(read_recording(a), read_recording(b))
    assert found is not None
    assert (found.field_path, found.recorded, found.incoming) == ("outcome", "complete", None)


def test_timestamps_do_not_count(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    text = a.read_text().replace('"timestamp":1', '"timestamp":12345')
    b = tmp_path / "b.jsonl"
    b.write_text(text)
    assert first_difference(read_recording(a), read_recording(b)) is None


def test_a_negative_zero_equals_zero_in_the_hash_as_in_the_comparison(tmp_path: Path) -> None:
    rows = [header(), *call_rows(0, text="hi", options={"temperature": 0.0})]
    a = write_rows(tmp_path / "a.jsonl", rows)
    b = tmp_path / "b.jsonl"
    b.write_text(a.read_text().replace('"temperature":0.0', '"temperature":-0.0'))
    assert '"temperature":-0.0' in b.read_text()
    recordings = read_recording(a), read_recording(b)
    assert first_difference(*recordings) is None
    assert transcript_hash(recordings[0]) == transcript_hash(recordings[1])


TEXTS = st.sampled_from(["hi", "ho", "echo:hi", "x"])
CALLS = st.lists(st.tuples(TEXTS, TEXTS), max_size=4)


@settings(max_examples=80, deadline=None)
@given(CALLS, CALLS)
def test_same_hash_exactly_when_no_difference(
    tmp_path_factory: Any, first: list[tuple[str, str]], second: list[tuple[str, str]]
) -> None:
    folder = tmp_path_factory.mktemp("diff")
    a = read_recording(write(folder / "a.jsonl", first))
    b = read_recording(write(folder / "b.jsonl", second))
    comparison = compare_recordings(a, b)
    assert comparison.same == (transcript_hash(a) == transcript_hash(b))
    assert comparison.same == (sorted(first) == sorted(second))
    assert (comparison.hash_a, comparison.hash_b) == (transcript_hash(a), transcript_hash(b))


ENDED_CALLS = st.lists(
    st.tuples(TEXTS, TEXTS, st.sampled_from(["complete", "cancelled", None])), max_size=4
)


@settings(max_examples=80, deadline=None)
@given(ENDED_CALLS, ENDED_CALLS)
def test_same_hash_exactly_when_no_difference_whatever_the_endings(
    tmp_path_factory: Any,
    first: list[tuple[str, str, str | None]],
    second: list[tuple[str, str, str | None]],
) -> None:
    folder = tmp_path_factory.mktemp("endings")

    def recording(name: str, calls: list[tuple[str, str, str | None]]) -> Any:
        rows: list[Row] = [header()]
        for index, (text, reply, outcome) in enumerate(calls):
            rows += call_rows(index, text_events(reply), text=text, outcome=outcome)
        return read_recording(write_rows(folder / f"{name}.jsonl", rows), validate_events=False)

    a, b = recording("a", first), recording("b", second)
    comparison = compare_recordings(a, b)
    assert comparison.same == (transcript_hash(a) == transcript_hash(b))
    assert comparison.same == (sorted(first, key=repr) == sorted(second, key=repr))


INTERLEAVED = CALLS.flatmap(lambda calls: st.tuples(st.just(calls), st.permutations(calls)))


@settings(max_examples=40, deadline=None)
@given(INTERLEAVED)
def test_any_interleaving_hashes_alike_and_diff_finds_nothing(
    tmp_path_factory: Any, calls: tuple[list[tuple[str, str]], list[tuple[str, str]]]
) -> None:
    folder = tmp_path_factory.mktemp("interleaved")
    a = read_recording(write(folder / "a.jsonl", calls[0]))
    b = read_recording(write(folder / "b.jsonl", calls[1]))
    assert compare_recordings(a, b).same
    assert transcript_hash(a) == transcript_hash(b)


def test_diff_command_exit_codes_and_output(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    same = write(tmp_path / "same.jsonl", [("hi", "echo:hi")])
    other = write(tmp_path / "other.jsonl", [("hi", "echo:ho")])

    result = run("diff", str(a), str(same))
    assert result.exit_code == 0, result.output
    assert "the recordings are the same" in result.stdout
    assert "calls: A 1, B 1" in result.stdout

    result = run("diff", str(a), str(other))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:3] == [
        "✘ the recordings differ: 1 paired call whose reply differs",
        "difference at call 0, event 2 (text_delta), field delta:",
        "A 'echo:hi', B 'echo:ho'",
    ]
    assert transcript_hash(read_recording(a)) in result.stdout

    result = run("diff", str(a), str(other), "--json")
    data = json.loads(result.stdout)
    assert data["same"] is False
    assert data["difference"]["event_index"] == 2
    assert data["hash"]["a"] == transcript_hash(read_recording(a))


def test_human_output_shows_the_first_differences_and_json_lists_all(tmp_path: Path) -> None:
    first = [(f"q{n}", f"r{n}") for n in range(6)]
    second = [("q0", "r0"), ("new", "r"), *[(f"q{n}", f"other {n}") for n in range(2, 6)]]
    a, b = write(tmp_path / "a.jsonl", first), write(tmp_path / "b.jsonl", second)

    result = run("diff", str(a), str(b))

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "✘ the recordings differ: 1 call only in A, 1 only in B, "
        "4 paired calls whose replies differ"
    )
    assert lines[1:3] == [
        "difference at call 1, field context.messages[0].content:",
        "A 'q1', B 'new'",
    ]
    assert lines[3] == "difference at call 2, event 2 (text_delta), field delta:"
    assert lines[7] == "… and 2 more differences (--json lists all)"
    assert lines[8] == "calls: A 6, B 6"

    data = json.loads(run("diff", str(a), str(b), "--json").stdout)
    assert (data["only_in_a"], data["only_in_b"]) == ([1], [1])
    assert [entry["kind"] for entry in data["differences"]] == ["request"] + ["reply"] * 4
    assert [entry["a_call_index"] for entry in data["differences"]] == [1, 2, 3, 4, 5]
    assert data["differences"][0]["b_call_index"] == 1
    assert data["differences"][0] == data["difference"]


def test_diff_of_an_unreadable_recording_exits_2(tmp_path: Path) -> None:
    a = write(tmp_path / "a.jsonl", [("hi", "echo:hi")])
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"type":"header","format_version":1}\n{oops\n{"type":"x"}\n')
    result = run("diff", str(a), str(broken))
    assert result.exit_code == 2
    assert "broken.jsonl, line 2" in result.stderr
    result = run("diff", str(a), str(tmp_path / "gone.jsonl"))
    assert result.exit_code == 2
    result = run("diff", "../bad", str(a))
    assert result.exit_code == 2
