"""``replay incomplete``: the calls never requested, in words that fit one call or many."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import UnconsumedCallsError
from openprogram.providers import ECHO_MODEL, Context, ReplayProvider, UserMessage, complete_simple
from tests.support.tool_sessions import recording_into


async def test_a_one_call_recording_never_requested_is_the_1_recorded_call(
    tmp_path: Path,
) -> None:
    path = tmp_path / "one.jsonl"
    with recording_into(path):
        await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")]))

    with pytest.raises(UnconsumedCallsError) as caught:
        ReplayProvider(path).assert_consumed()

    assert str(caught.value) == (
        f"replay incomplete: the 1 recorded call was never requested (call 0) from {path}; "
        "the run stopped before the recorded session did"
    )


@pytest.mark.parametrize(
    ("unconsumed", "total", "words"),
    [
        ([0], 1, "the 1 recorded call was never requested (call 0)"),
        ([2], 3, "1 of 3 recorded calls never requested (call 2)"),
        ([1, 2], 3, "2 of 3 recorded calls never requested (calls 1..2)"),
        ([0, 1], 2, "2 of 2 recorded calls never requested (calls 0..1)"),
    ],
)
def test_the_count_reads_right_for_one_call_and_for_many(
    unconsumed: list[int], total: int, words: str
) -> None:
    message = str(UnconsumedCallsError("r.jsonl", unconsumed, total))
    assert message.startswith(f"replay incomplete: {words} from r.jsonl; ")
    assert "1 recorded calls" not in message
