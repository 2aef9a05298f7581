"""``call_views``: each recorded call as a person reads it (data only, no printing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from openprogram.errors import RecordingCallNotFoundError, RecordingFileError
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    SimpleStreamOptions,
    UserMessage,
    complete_simple,
)
from openprogram.store.show import CallView, call_views
from tests.support.recording_rows import Row, call_rows, header, text_events, write_rows
from tests.support.tool_sessions import record_tool_session, recording_into

SENDER = {"api": "fake", "provider": "fake", "model": "m1"}
"""The fields every recorded assistant message has."""


async def test_a_two_call_echo_tool_session(tmp_path: Path) -> None:
    path = tmp_path / "tool.jsonl"
    await record_tool_session(path)
    first, second = call_views(path)
    assert first == CallView(
        call_index=0,
        model="echo:echo",
        input_role="user",
        input_text='/tool lookup {"q": "x"}',
        reply_text="",
        thinking_text="",
        tool_calls=[("lookup", {"q": "x"})],
        stop_reason="toolUse",
        usage=first.usage,
        outcome="complete",
        error=None,
        event_count=5,
    )
    assert first.usage is not None
    assert first.usage["output"] > 0
    assert (second.call_index, second.input_role) == (1, "toolResult")
    assert second.input_text == "lookup → result-x"
    assert second.reply_text == "echo:result-x"
    assert (second.tool_calls, second.stop_reason, second.outcome) == ([], "stop", "complete")
    assert second.error is None
    assert not second.truncated


async def test_one_call_by_index(tmp_path: Path) -> None:
    path = tmp_path / "tool.jsonl"
    await record_tool_session(path)
    [view] = call_views(path, call=1)
    assert view.call_index == 1


async def test_a_call_out_of_range_names_how_many_there_are(tmp_path: Path) -> None:
    path = tmp_path / "tool.jsonl"
    await record_tool_session(path)
    with pytest.raises(
        RecordingCallNotFoundError, match="no call 2; it holds 2 calls: choose 0 to 1"
    ):
        call_views(path, call=2)
    with pytest.raises(IndexError) as info:
        call_views(path, call=-1)
    assert isinstance(info.value, RecordingCallNotFoundError)
    assert (info.value.call_index, info.value.calls) == (-1, 2)


def test_a_recording_with_no_calls(tmp_path: Path) -> None:
    path = write_rows(tmp_path / "empty.jsonl", [header()])
    assert call_views(path) == []
    with pytest.raises(RecordingCallNotFoundError, match="it holds no calls yet"):
        call_views(path, call=0)


def test_a_provider_error_shows_its_type_and_message(tmp_path: Path) -> None:
    events: list[Row] = [
        {"type": "start"},
        {"type": "text_delta", "content_index": 0, "delta": "par"},
    ]
    error = {"type": "ConnectionResetError", "message": "peer reset"}
    path = write_rows(
        tmp_path / "err.jsonl", [header(), *call_rows(0, events, outcome="error", error=error)]
    )
    [view] = call_views(path)
    assert view.outcome == "error"
    assert view.error == "ConnectionResetError: peer reset"
    assert view.reply_text == "par"
    assert (view.stop_reason, view.usage) == (None, None)


def test_an_error_event_shows_reason_message_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "aborted.jsonl"
    signal = asyncio.Event()
    signal.set()

    async def record() -> None:
        with recording_into(path):
            await complete_simple(
                ECHO_MODEL,
                Context(messages=[UserMessage(content="hi")]),
                SimpleStreamOptions(signal=signal),
            )

    asyncio.run(record())
    [view] = call_views(path)
    assert view.stop_reason == "aborted"
    assert view.error == "request aborted by signal"
    assert view.usage is not None
    assert view.usage["input"] == 1
    assert view.outcome == "complete"


def test_a_truncated_call_has_no_outcome(tmp_path: Path) -> None:
    rows = [
        header(),
        *call_rows(0, text_events("a")),
        *call_rows(1, text_events("Hel", "lo")[:4], outcome=None),
    ]
    first, second = call_views(write_rows(tmp_path / "cut.jsonl", rows))
    assert first.outcome == "complete"
    assert second.outcome is None
    assert second.truncated
    assert second.reply_text == "Hello"
    assert (second.stop_reason, second.usage, second.event_count) == (None, None, 4)


def test_text_end_content_stands_in_for_missing_deltas(tmp_path: Path) -> None:
    events: list[Row] = [
        {"type": "text_start", "content_index": 0},
        {"type": "text_end", "content_index": 0, "content": "whole"},
        {"type": "text_delta", "content_index": 1, "delta": "de"},
        {"type": "text_delta", "content_index": 1, "delta": "lta"},
        {"type": "text_end", "content_index": 1, "content": "ignored"},
    ]
    [view] = call_views(write_rows(tmp_path / "t.jsonl", [header(), *call_rows(0, events)]))
    assert view.reply_text == "whole\ndelta"


def test_thinking_and_tool_arguments(tmp_path: Path) -> None:
    tool = {"type": "toolCall", "id": "c1", "name": "add", "arguments": {"a": 1, "b": [2]}}
    events: list[Row] = [
        {"type": "thinking_start", "content_index": 0},
        {"type": "thinking_delta", "content_index": 0, "delta": "let me "},
        {"type": "thinking_delta", "content_index": 0, "delta": "add"},
        {"type": "thinking_end", "content_index": 0, "content": "let me add"},
        {"type": "toolcall_start", "content_index": 1, "id": "c1", "name": "add"},
        {"type": "toolcall_end", "content_index": 1, "tool_call": tool},
        {
            "type": "done",
            "reason": "toolUse",
            "message": {**SENDER, "content": [tool], "usage": {"input": 4}},
        },
    ]
    [view] = call_views(write_rows(tmp_path / "t.jsonl", [header(), *call_rows(0, events)]))
    assert view.thinking_text == "let me add"
    assert view.tool_calls == [("add", {"a": 1, "b": [2]})]
    assert view.stop_reason == "toolUse"
    assert view.usage is not None
    assert view.usage["input"] == 4


def test_a_reply_that_streamed_nothing_shows_the_final_message(tmp_path: Path) -> None:
    message = {
        **SENDER,
        "content": [
            {"type": "thinking", "thinking": "hm"},
            {"type": "text", "text": "final"},
            {"type": "toolCall", "id": "c", "name": "t", "arguments": {}},
        ],
    }
    events: list[Row] = [{"type": "done", "reason": "stop", "message": message}]
    [view] = call_views(write_rows(tmp_path / "t.jsonl", [header(), *call_rows(0, events)]))
    assert (view.reply_text, view.thinking_text, view.tool_calls) == ("final", "hm", [("t", {})])


def test_input_messages_with_images_and_assistant_turns(tmp_path: Path) -> None:
    rows = [header(), *call_rows(0, [])]
    rows[1]["context"]["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "data": "AAAA", "mime_type": "image/png"},
            ],
        }
    ]
    rows.extend(call_rows(1, []))
    rows[-2]["context"]["messages"] = [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "toolCall", "name": "f", "arguments": {"x": 1}},
            ],
        }
    ]
    rows.extend(call_rows(2, []))
    rows[-2]["context"]["messages"] = []
    first, second, third = call_views(write_rows(tmp_path / "t.jsonl", rows))
    assert (first.input_role, first.input_text) == ("user", "look\n[image]")
    assert (second.input_role, second.input_text) == ("assistant", 'ok\nf({"x":1})')
    assert (third.input_role, third.input_text) == (None, "")


@pytest.mark.parametrize(
    "event",
    [
        {"type": "text_delta", "content_index": "zero", "delta": "x"},
        {"type": "text_delta", "content_index": [0], "delta": "x"},
        {"type": "text_delta", "content_index": 0, "delta": 5},
        {"type": "toolcall_end", "content_index": 0, "tool_call": "not an object"},
        {"type": "done", "reason": 7, "message": []},
    ],
)
def test_an_event_replay_would_refuse_is_refused_naming_its_line(
    tmp_path: Path, event: Row
) -> None:
    path = write_rows(tmp_path / "t.jsonl", [header(), *call_rows(0, [event])])
    with pytest.raises(RecordingFileError, match=r"t\.jsonl, line 3: .* event field") as info:
        call_views(path)
    assert (info.value.line, info.value.call_index) == (3, 0)


def test_a_content_index_replay_reads_as_a_number_is_shown_as_one(tmp_path: Path) -> None:
    events: list[Row] = [
        {"type": "text_delta", "content_index": 1, "delta": "second"},
        {"type": "text_delta", "content_index": "0", "delta": "first"},
    ]
    [view] = call_views(write_rows(tmp_path / "t.jsonl", [header(), *call_rows(0, events)]))
    assert view.reply_text == "first\nsecond"


def test_a_corrupt_file_raises_the_reader_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"garbage\n")
    with pytest.raises(RecordingFileError, match="line 1"):
        call_views(path)
    with pytest.raises(RecordingFileError, match="no such recording"):
        call_views(tmp_path / "missing.jsonl")


async def test_to_json_is_plain(tmp_path: Path) -> None:
    path = tmp_path / "tool.jsonl"
    await record_tool_session(path)
    data = [view.to_json() for view in call_views(path)]
    assert orjson.loads(orjson.dumps(data)) == data
    assert data[0]["tool_calls"] == [{"name": "lookup", "arguments": {"q": "x"}}]
    assert data[1]["truncated"] is False
