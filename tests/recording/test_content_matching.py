"""Content matching: a request is served by the earliest unconsumed recorded call of its
boundary whose request equals it, wherever it stands; with none, the report compares it with
the nearest unconsumed call and names it."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordingTruncatedError, ReplayMismatch, UnconsumedCallsError
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    ReplayProvider,
    TextDeltaEvent,
    UserMessage,
)
from openprogram.recording.format import RecordedCall, new_header
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import REDACTION_VERSION, SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from tests.support.http_call_rows import chat_request, provider_call, sse_call, write_calls

TOOL_TURN = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "what is in notes.txt?"},
    {"role": "assistant", "tool_calls": [{"id": "call_1", "function": {"name": "read"}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello from a file"},
]


def sections(request: dict[str, Any]) -> dict[str, Any]:
    """What a boundary hands to ``take``: the request row without ``boundary``."""
    return {key: value for key, value in request.items() if key != "boundary"}


def redact(request: dict[str, Any]) -> dict[str, Any]:
    return SecretRedactor([]).redact_http_request(request)


def session_of(tmp_path: Path, *requests: dict[str, Any], **kwargs: Any) -> ReplaySession:
    calls = [sse_call(index, request) for index, request in enumerate(requests)]
    return ReplaySession(read_recording(write_calls(tmp_path / "r.jsonl", *calls)), **kwargs)


def take(session: ReplaySession, request: dict[str, Any]) -> int:
    return session.take("http", sections(request), redactor=redact).call_index


def report(session: ReplaySession, request: dict[str, Any]) -> ReplayMismatch:
    with pytest.raises(ReplayMismatch) as caught:
        take(session, request)
    return caught.value


def test_requests_arriving_in_another_order_are_served_by_content(tmp_path: Path) -> None:
    requests = [chat_request(f"{agent} turn {n}") for n in range(3) for agent in "AB"]
    session = session_of(tmp_path, *requests)

    served = [take(session, request) for request in [*requests[1::2], *requests[0::2]]]

    assert served == [1, 3, 5, 0, 2, 4]
    assert session.calls_consumed == 6
    session.assert_consumed()


def test_identical_requests_are_served_in_recorded_order(tmp_path: Path) -> None:
    same, other = chat_request("again"), chat_request("other")
    session = session_of(tmp_path, same, other, same, same)

    assert [take(session, same) for _ in range(3)] == [0, 2, 3]
    assert take(session, other) == 1
    assert report(session, same).field_path == "call_index"  # all four served


def test_order_matching_serves_only_the_next_call(tmp_path: Path) -> None:
    first, second = chat_request("first"), chat_request("second")
    session = session_of(tmp_path, first, second, match="order")

    mismatch = report(session, second)

    assert str(mismatch) == (
        "replay mismatch at call 0, field body.messages[0].content:\n"
        "recorded 'first', incoming 'second'"
    )
    assert (take(session, first), take(session, second)) == (0, 1)


def test_unknown_matching_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown matching 'fuzzy'"):
        session_of(tmp_path, chat_request(), match="fuzzy")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"messages": [*TOOL_TURN[:3], {**TOOL_TURN[3], "content": "changed"}]}, "messages[3]"),
        ({"messages": [*TOOL_TURN[:1], {**TOOL_TURN[1], "content": "what?"}, *TOOL_TURN[2:]]}, ""),
        ({"temperature": 0.5}, "temperature"),
        ({"model": "gpt-4o"}, "model"),
        ({"messages": TOOL_TURN[:3]}, "messages[3]"),
        ({"messages": [*TOOL_TURN, {"role": "user", "content": "and?"}]}, "messages[4]"),
    ],
)
def test_a_drift_in_a_sequential_session_is_reported_exactly_as_by_order(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    turns = [TOOL_TURN[:2], TOOL_TURN, [*TOOL_TURN, {"role": "user", "content": "thanks"}]]
    recorded = [chat_request(messages=messages) for messages in turns]
    drifted = chat_request(messages=TOOL_TURN)
    drifted["body"] = {**drifted["body"], **change}
    by_content = session_of(tmp_path, *recorded)
    by_order = session_of(tmp_path, *recorded, match="order")
    for session in (by_content, by_order):
        take(session, recorded[0])

    content_report, order_report = report(by_content, drifted), report(by_order, drifted)

    assert str(content_report) == str(order_report)
    assert content_report.call_index == 1
    assert content_report.field_path.startswith(f"body.{field}")


def test_with_no_equal_request_the_nearest_unconsumed_call_is_named(tmp_path: Path) -> None:
    recorded = [chat_request(f"{agent} starts", user=agent) for agent in "ABC"]
    session = session_of(tmp_path, *recorded)

    mismatch = report(session, chat_request("C starts!", user="C"))

    assert str(mismatch) == (
        "replay mismatch at call 2, field body.messages[0].content:\n"
        "recorded 'C starts', incoming 'C starts!'"
    )
    assert session.unconsumed_calls == [0, 1, 2]  # a mismatch consumes no call


def test_nearest_counts_differing_leaves_and_ties_go_to_the_lowest_index(tmp_path: Path) -> None:
    base = chat_request("hi", temperature=1, top_p=1, user="u")
    two_off = chat_request("hi", temperature=2, top_p=2, user="u")
    one_off = chat_request("hi", temperature=1, top_p=1, user="v")
    also_one_off = chat_request("hi", temperature=1, top_p=3, user="u")
    session = session_of(tmp_path, two_off, one_off, also_one_off)

    mismatch = report(session, base)

    assert (mismatch.call_index, mismatch.field_path) == (1, "body.user")


def test_the_search_for_the_nearest_call_stops_after_64_candidates(tmp_path: Path) -> None:
    far = [chat_request(f"far {n}", temperature=n) for n in range(64)]
    near = chat_request("near", temperature=70)
    session = session_of(tmp_path, *far, near)

    mismatch = report(session, chat_request("near", temperature=71))

    assert mismatch.call_index < 64  # call 64, the nearest, is the 65th candidate
    take(session, far[0])
    assert report(session, chat_request("near", temperature=71)).call_index == 64


def test_a_lookup_compares_only_the_calls_with_the_same_digest(tmp_path: Path) -> None:
    compared: list[int] = []

    class Counting(ReplaySession):
        def match(self, call: RecordedCall, *args: Any, **kwargs: Any) -> ReplayMismatch | None:
            compared.append(call.call_index)
            return super().match(call, *args, **kwargs)

    requests = [chat_request(f"call {n}") for n in range(300)]
    calls = [sse_call(index, request) for index, request in enumerate(requests)]
    session = Counting(read_recording(write_calls(tmp_path / "r.jsonl", *calls)))

    assert take(session, requests[299]) == 299
    assert take(session, requests[150]) == 150
    assert compared == [299, 150]


def test_ignored_fields_and_absent_keys_do_not_stop_a_lookup(tmp_path: Path) -> None:
    recorded = [
        chat_request("one", metadata={"run": "a", "step": 1}, tags=["x", "run-a"]),
        chat_request("two", metadata={"run": "a", "step": 2}, tags=["x", "run-a"], seed=None),
    ]
    session = session_of(
        tmp_path, *recorded, ignore_fields=["body.metadata.run", "body.tags[1]", "stream"]
    )
    incoming = [
        chat_request("two", metadata={"run": "b", "step": 2}, tags=["x"], stream=False),
        chat_request("one", metadata={"step": 1}, tags=["x", "run-b"], user=None),
    ]

    assert [take(session, request) for request in incoming] == [1, 0]


def test_provider_calls_are_matched_without_their_timestamps(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", provider_call(0, "first"), provider_call(1, "second"))
    provider = ReplayProvider(path)

    async def ask(text: str) -> str:
        context = Context(messages=[UserMessage(content=text, timestamp=123)])
        events = [event async for event in provider.stream_simple(ECHO_MODEL, context)]
        return "".join(event.delta for event in events if isinstance(event, TextDeltaEvent))

    assert asyncio.run(ask("second")) == "echo:second"
    assert asyncio.run(ask("first")) == "echo:first"
    provider.assert_consumed()


def test_a_request_equal_only_under_its_own_redaction_is_still_served(tmp_path: Path) -> None:
    key = "per-call-key-0123456789"
    recorded = [chat_request("one"), chat_request(f"my key is {key}")]
    session = session_of(tmp_path, *recorded)

    def redact_with_the_key(request: dict[str, Any]) -> dict[str, Any]:
        return SecretRedactor([key]).redact_http_request(request)

    incoming = sections(chat_request("my key is [secret removed]"))
    served = session.take("http", incoming, redactor=redact_with_the_key)

    assert served.call_index == 1


def test_with_nothing_of_its_boundary_left_the_other_boundary_is_named(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", sse_call(0), provider_call(1), sse_call(2))
    session = ReplaySession(read_recording(path))
    take(session, chat_request())
    take(session, chat_request())

    mismatch = report(session, chat_request())

    assert (mismatch.call_index, mismatch.field_path) == (1, "boundary")
    assert str(mismatch).startswith(
        "replay mismatch at call 1, field boundary:\n"
        "recorded a provider call (echo:echo), incoming an HTTP call (POST "
    )


def test_past_the_end_is_reported_as_by_order(tmp_path: Path) -> None:
    by_content = session_of(tmp_path, chat_request("a"), chat_request("b"))
    by_order = session_of(tmp_path, chat_request("a"), chat_request("b"), match="order")
    for session in (by_content, by_order):
        take(session, chat_request("a"))
        take(session, chat_request("b"))

    assert str(report(by_content, chat_request("c"))) == str(report(by_order, chat_request("c")))


def test_unconsumed_calls_are_reported_by_index(tmp_path: Path) -> None:
    requests = [chat_request(f"call {n}") for n in range(5)]
    session = session_of(tmp_path, *requests)
    take(session, requests[1])
    take(session, requests[3])

    assert session.unconsumed_calls == [0, 2, 4]
    with pytest.raises(UnconsumedCallsError) as caught:
        session.assert_consumed()
    assert caught.value.unconsumed == [0, 2, 4]
    assert "3 of 5 recorded calls never requested (calls 0, 2, 4) from" in str(caught.value)


@pytest.mark.parametrize(
    ("unconsumed", "named"),
    [
        ([3], "call 3"),
        ([1, 2], "calls 1..2"),
        ([0, 2, 3, 5], "calls 0, 2..3, 5"),
        ([0, 2, 4, 6, 8, 10, 11], "calls 0, 2, 4, 6, 8, …"),
    ],
)
def test_calls_never_requested_are_named_by_their_runs_of_indexes(
    unconsumed: list[int], named: str
) -> None:
    assert f"({named}) from r.jsonl" in str(UnconsumedCallsError("r.jsonl", unconsumed, 20))


async def test_a_truncated_call_is_served_when_requested_and_stops_at_its_cut(
    tmp_path: Path,
) -> None:
    cut = provider_call(1, "cut")[:-1]  # no call_end: the recording process stopped
    path = write_calls(tmp_path / "r.jsonl", provider_call(0, "whole"), cut)
    provider = ReplayProvider(path)

    context = Context(messages=[UserMessage(content="cut")])
    with pytest.raises(RecordingTruncatedError) as caught:
        _ = [event async for event in provider.stream_simple(ECHO_MODEL, context)]

    assert caught.value.call_index == 1
    assert provider.unconsumed_calls == [0]


def test_threads_asking_at_once_are_each_served_their_own_call(tmp_path: Path) -> None:
    requests = [chat_request(f"thread {n}") for n in range(16)]
    session = session_of(tmp_path, *requests)
    served: dict[int, int] = {}
    start = threading.Barrier(len(requests))

    def ask(n: int) -> None:
        start.wait()
        served[n] = take(session, requests[n])

    threads = [threading.Thread(target=ask, args=(n,)) for n in reversed(range(16))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert served == {n: n for n in range(16)}
    session.assert_consumed()


def test_a_recording_of_older_redaction_rules_is_indexed_as_the_current_rules_see_it(
    tmp_path: Path,
) -> None:
    key = "sk-" + "a1b2c3d4" * 4
    others = [sse_call(n, chat_request(f"other {n}")) for n in range(70)]
    keyed = sse_call(70, chat_request(f"use {key}"))  # stored before a rule removed it
    header = {**new_header("old"), "redaction_version": REDACTION_VERSION - 1}
    path = write_calls(tmp_path / "r.jsonl", *others, keyed, header=header)
    session = ReplaySession(read_recording(path))

    assert take(session, chat_request(f"use {key}")) == 70  # past the 64 nearest candidates
