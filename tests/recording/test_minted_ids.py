"""Ids a server makes up are compared up to consistent renaming: two runs of a session against
a server that mints fresh ids hash equal and ``diff`` finds them the same, in the parsed
recording and through the digests a writer stores; a session that links a tool result to
another call, or sends other ids of its own, differs — and ``diff`` names the field."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.recording.call_digest import deterministic_part
from openprogram.recording.minted_ids import CallIds, is_id_key
from openprogram.recording.reader import read_recording
from openprogram.recording.rewriting import rewrite_recording
from openprogram.store.comparison import first_difference
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import summarize_recording
from tests.support.http_call_rows import write_calls

Row = dict[str, Any]
URL = "https://api.openai.com/v1/chat/completions"


def call(index: int, messages: list[Row], reply: Row, *, user: str = "u-1") -> list[Row]:
    """A non-streamed Chat Completions call sending ``messages``, answered ``reply``."""
    request = {
        "boundary": "http",
        "method": "POST",
        "url": URL,
        "headers": {"content-type": "application/json"},
        "body": {"model": "gpt-4o-mini", "messages": messages, "user_id": user},
    }
    events = [
        {"type": "http_response", "status": 200, "headers": {"content-type": "application/json"}},
        {"type": "http_body", "body": reply},
    ]
    return [
        {"type": "request", "call_index": index, **request},
        *(
            {"type": "event", "call_index": index, "event_index": n, "event": event}
            for n, event in enumerate(events)
        ),
        {"type": "call_end", "call_index": index, "event_count": 2, "outcome": "complete"},
    ]


def tool_calls(*ids: str) -> Row:
    return {
        "role": "assistant",
        "tool_calls": [
            {"id": tool_id, "type": "function", "function": {"name": f"f{n}", "arguments": "{}"}}
            for n, tool_id in enumerate(ids)
        ],
    }


def answer(message: Row, response_id: str) -> Row:
    return {"id": response_id, "object": "chat.completion", "choices": [{"message": message}]}


def tool_session(
    folder: Path, name: str, run: str, *, answers: tuple[int, int] = (0, 1), user: str = "u-1"
) -> Path:
    """Two tool calls made up by the server on run ``run``, answered in the next request
    (the result of ``f0`` under the id of tool call ``answers[0]``, and so on)."""
    first, second = f"call_{run}_a", f"call_{run}_b"
    made = (first, second)
    question = [{"role": "user", "content": "weather?"}]
    results = [
        {"role": "tool", "tool_call_id": made[answers[0]], "content": "sunny"},
        {"role": "tool", "tool_call_id": made[answers[1]], "content": "windy"},
    ]
    return write_calls(
        folder / f"{name}.jsonl",
        call(0, question, answer(tool_calls(first, second), f"chatcmpl-{run}0"), user=user),
        call(
            1,
            [*question, tool_calls(first, second), *results],
            answer({"role": "assistant", "content": "sunny, then windy"}, f"chatcmpl-{run}1"),
            user=user,
        ),
    )


def test_the_ids_of_a_call_are_named_by_the_order_they_are_first_seen() -> None:
    ids = CallIds()
    request = {"messages": [{"tool_call_id": "call_x"}, {"tool_call_id": "call_y"}]}
    assert ids.request(request, "body") == {
        "messages": [{"tool_call_id": "#q0"}, {"tool_call_id": "#q1"}]
    }
    assert ids.paths == ["body.messages[0].tool_call_id", "body.messages[1].tool_call_id"]
    reply = {"id": "chatcmpl-9", "echo": {"item_id": "call_y"}, "next": {"call_id": "call_z"}}
    assert ids.event(reply) == {"id": "#r0", "echo": {"item_id": "#q1"}, "next": {"call_id": "#r1"}}
    assert ids.event({"item_id": "call_z"}) == {"item_id": "#r1"}
    assert ids.value_of("#q1") == "call_y"
    unchanged = {"text": "call_x", "count": 3}
    assert ids.event(unchanged) is unchanged


def test_which_keys_hold_ids() -> None:
    named = ["id", "tool_call_id", "item_id", "responseId", "toolUseId", "signature"]
    assert all(map(is_id_key, [*named, "thoughtSignature", "encrypted_content"]))
    assert not any(map(is_id_key, ["paid", "identity", "model", "idle", "content"]))


def test_two_runs_with_fresh_ids_hash_equal_and_diff_finds_nothing(tmp_path: Path) -> None:
    a, b = tool_session(tmp_path, "a", "a"), tool_session(tmp_path, "b", "b")
    assert a.read_bytes() != b.read_bytes()
    assert transcript_hash(read_recording(a)) == transcript_hash(read_recording(b))
    assert first_difference(read_recording(a), read_recording(b)) is None


def test_results_sent_back_under_each_others_ids_differ(tmp_path: Path) -> None:
    a = tool_session(tmp_path, "a", "a")
    swapped = tool_session(tmp_path, "swapped", "b", answers=(1, 0))
    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(swapped))
    found = first_difference(read_recording(a), read_recording(swapped))
    assert found is not None
    assert found.field_path == "body.messages[2].tool_call_id"
    assert (found.recorded, found.incoming) == ("call_a_a", "call_b_b")


def test_an_id_of_the_programs_own_is_compared_by_its_value(tmp_path: Path) -> None:
    a = tool_session(tmp_path, "a", "a")
    other_user = tool_session(tmp_path, "b", "b", user="u-2")
    assert transcript_hash(read_recording(a)) != transcript_hash(read_recording(other_user))
    found = first_difference(read_recording(a), read_recording(other_user))
    assert found is not None
    assert (found.field_path, found.recorded, found.incoming) == ("body.user_id", "u-1", "u-2")
    assert found.detail is None


def linked_to(folder: Path, name: str, source: int) -> Path:
    """Two calls each answered with a tool call; the third sends back call ``source``'s."""
    made = [f"call_{name}_0", f"call_{name}_1"]
    calls = [
        call(n, [{"role": "user", "content": f"q{n}"}], answer(tool_calls(made[n]), f"r{name}{n}"))
        for n in (0, 1)
    ]
    follow_up = [{"role": "tool", "tool_call_id": made[source], "content": "done"}]
    calls.append(call(2, follow_up, answer({"role": "assistant", "content": "ok"}, f"r{name}2")))
    return write_calls(folder / f"{name}.jsonl", *calls)


def test_an_id_sent_back_to_another_call_is_named_with_both_calls(tmp_path: Path) -> None:
    to_first, to_second = linked_to(tmp_path, "a", 0), linked_to(tmp_path, "b", 1)
    assert transcript_hash(read_recording(to_first)) != transcript_hash(read_recording(to_second))
    found = first_difference(read_recording(to_first), read_recording(to_second))
    assert found is not None
    assert found.call_index == 2
    assert found.field_path == "body.messages[0].tool_call_id"
    assert found.detail == ("the id links to call 0's response in A and to call 1's response in B")
    again = linked_to(tmp_path, "c", 0)
    assert first_difference(read_recording(to_first), read_recording(again)) is None


def test_the_digests_a_writer_stores_give_the_same_hash(tmp_path: Path) -> None:
    for name, source in itertools.product(("a", "b"), (0, 1)):
        path = linked_to(tmp_path, f"{name}{source}", source)
        recording = read_recording(path)
        rewrite_recording(path, recording.header, recording.calls)
        assert '"ids":{' in path.read_text()
        summary = summarize_recording(path)
        assert summary.valid, summary.problem
        assert summary.transcript_hash == transcript_hash(read_recording(path))
    hashes = {
        source: summarize_recording(tmp_path / f"a{source}.jsonl").transcript_hash
        for source in (0, 1)
    }
    assert hashes[0] != hashes[1]
    assert hashes[0] == summarize_recording(tmp_path / "b0.jsonl").transcript_hash


ID_VALUES = st.sampled_from(["call_1", "call_2", "resp_1", ""])
WITH_IDS = st.recursive(
    st.none() | st.booleans() | st.floats(allow_nan=False) | st.integers() | ID_VALUES,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["id", "item_id", "text", "responseId", "n"]), children)
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(WITH_IDS, WITH_IDS)
def test_the_one_walk_of_an_event_is_its_part_renamed(request: Any, event: Any) -> None:
    one, two = CallIds(), CallIds()
    one.request(request)
    two.request(request)
    assert one.event_part(event) == two.event(deterministic_part(event, frozenset()))
    assert (one.refs, one.minted) == (two.refs, two.minted)
