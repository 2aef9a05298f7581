"""One replay session serves a recording's calls in order to whichever boundary asks; the
provider boundary's ReplayProvider is built on it and can share it with the HTTP boundary."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import ReplayMismatch, UnconsumedCallsError
from openprogram.provider_boundary.codec import read_recording as read_with_provider_events
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    ReplayProvider,
    UserMessage,
)
from openprogram.recording.format import RecordedCall
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from tests.support.http_call_rows import chat_request, provider_call, sse_call, write_calls

CONVERSATION = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "what is in notes.txt?"},
    {"role": "tool", "tool_call_id": "call_1", "content": "hello from a file"},
]


def http_sections(request: dict[str, Any]) -> dict[str, Any]:
    """The sections a boundary hands to ``take``: the request row without ``boundary``."""
    return {key: value for key, value in request.items() if key != "boundary"}


def redact(sections: dict[str, Any]) -> dict[str, Any]:
    return SecretRedactor([]).redact_http_request(sections)


def session_on(path: Path, **kwargs: Any) -> ReplaySession:
    return ReplaySession(read_recording(path), **kwargs)


def test_http_calls_are_served_in_order(tmp_path: Path) -> None:
    first, second = chat_request("one"), chat_request("two")
    path = write_calls(tmp_path / "r.jsonl", sse_call(0, first), sse_call(1, second))
    session = session_on(path)

    served = [session.take("http", http_sections(r), redactor=redact) for r in (first, second)]

    assert [call.call_index for call in served] == [0, 1]
    assert session.calls_consumed == 2
    session.assert_consumed()


def test_a_drifted_body_names_the_path_into_the_json(tmp_path: Path) -> None:
    recorded = chat_request(messages=CONVERSATION)
    path = write_calls(tmp_path / "r.jsonl", sse_call(0), sse_call(1, recorded))
    session = session_on(path)
    session.take("http", http_sections(chat_request()), redactor=redact)
    drifted = [*CONVERSATION[:2], {**CONVERSATION[2], "content": "hello, changed"}]

    with pytest.raises(ReplayMismatch) as caught:
        session.take("http", http_sections(chat_request(messages=drifted)), redactor=redact)

    assert str(caught.value) == (
        "replay mismatch at call 1, field body.messages[2].content:\n"
        "recorded 'hello from a file', incoming 'hello, changed'"
    )
    assert session.mismatches == [caught.value]
    assert session.calls_consumed == 1  # a mismatch does not consume the call
    assert session.take("http", http_sections(recorded), redactor=redact).call_index == 1


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"method": "PUT"}, "method"),
        ({"url": "https://api.openai.com/v1/responses"}, "url"),
        ({"headers": {"content-type": "text/plain"}}, "headers.content-type"),
        ({"body_text": "a=1"}, "body"),
    ],
)
def test_each_section_is_compared(tmp_path: Path, change: dict[str, Any], field: str) -> None:
    session = session_on(write_calls(tmp_path / "r.jsonl", sse_call(0)))
    incoming = http_sections(chat_request()) | change
    if "body_text" in change:
        del incoming["body"]
    with pytest.raises(ReplayMismatch) as caught:
        session.take("http", incoming, redactor=redact)
    assert caught.value.field_path == field


def test_a_call_recorded_at_the_other_boundary_names_both(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", provider_call(0), sse_call(1))
    session = session_on(path, match="order")

    with pytest.raises(ReplayMismatch) as caught:
        session.take("http", http_sections(chat_request()), redactor=redact)

    mismatch = caught.value
    assert (mismatch.call_index, mismatch.field_path) == (0, "boundary")
    assert (mismatch.recorded, mismatch.incoming) == ("provider", "http")
    assert str(mismatch) == (
        "replay mismatch at call 0, field boundary:\n"
        "recorded a provider call (echo:echo), incoming an HTTP call (POST "
        "https://api.openai.com/v1/chat/completions): the run reaches the model through "
        "another boundary than the recorded run did"
    )
    assert session.calls_consumed == 0


def test_more_calls_than_recorded_and_calls_never_made(tmp_path: Path) -> None:
    session = session_on(write_calls(tmp_path / "r.jsonl", sse_call(0), sse_call(1)))
    with pytest.raises(UnconsumedCallsError, match=r"2 of 2 recorded calls never requested"):
        session.assert_consumed()
    session.take("http", http_sections(chat_request()), redactor=redact)
    session.take("http", http_sections(chat_request()), redactor=redact)
    with pytest.raises(ReplayMismatch) as caught:
        session.take("http", http_sections(chat_request()), redactor=redact)
    assert caught.value.field_path == "call_index"
    assert "recorded 2 calls (0..1), incoming call 2" in str(caught.value)
    assert session.unconsumed_calls == []


def test_a_call_a_request_differed_from_is_mismatched_not_never_requested(
    tmp_path: Path,
) -> None:
    path = write_calls(
        tmp_path / "r.jsonl", sse_call(0, chat_request("one")), sse_call(1, chat_request("two"))
    )
    session = session_on(path)
    with pytest.raises(ReplayMismatch):
        session.take("http", http_sections(chat_request("changed")), redactor=redact)

    assert session.unconsumed_calls == [0, 1]
    assert session.mismatched_calls == [0]
    assert session.never_requested_calls == [1]
    error = session.unconsumed_error()
    assert error is not None
    assert error.unconsumed == [1]
    assert "1 of 2 recorded calls never requested (call 1)" in str(error)

    session.take("http", http_sections(chat_request("two")), redactor=redact)
    assert session.unconsumed_error() is None  # call 0's mismatch is its report


def test_both_sides_are_redacted_before_they_are_compared(tmp_path: Path) -> None:
    key = "sk-" + "a1b2c3d4" * 4
    recorded = chat_request(api_key=key)
    path = tmp_path / "r.jsonl"
    write_calls(path, sse_call(0, {**recorded, **redact(http_sections(recorded))}))
    assert key not in path.read_text()
    session = session_on(path)
    assert session.take("http", http_sections(recorded), redactor=redact).call_index == 0


def test_http_requests_compare_every_field_but_the_ones_the_caller_ignores(
    tmp_path: Path,
) -> None:
    recorded = chat_request(metadata={"timestamp": 1, "run": "a"})
    incoming = http_sections(chat_request(metadata={"timestamp": 2, "run": "b"}))
    path = write_calls(tmp_path / "r.jsonl", sse_call(0, recorded))

    with pytest.raises(ReplayMismatch) as caught:  # nothing of a request is left out
        session_on(path).take("http", incoming, redactor=redact)
    assert caught.value.field_path == "body.metadata.run"

    ignoring = session_on(path, ignore_fields=["body.metadata.*"])
    assert ignoring.take("http", incoming, redactor=redact).call_index == 0


def test_the_matching_step_is_one_method_a_subclass_replaces(tmp_path: Path) -> None:
    class AnyCall(ReplaySession):
        def match(self, call: RecordedCall, *args: Any) -> ReplayMismatch | None:
            return None

    session = AnyCall(read_recording(write_calls(tmp_path / "r.jsonl", sse_call(0))))
    drifted = http_sections(chat_request("something else"))
    assert session.take("http", drifted, redactor=redact).call_index == 0


async def test_replay_provider_and_the_http_boundary_share_one_session(tmp_path: Path) -> None:
    path = write_calls(tmp_path / "r.jsonl", provider_call(0, "hi"), sse_call(1))
    session = ReplaySession(read_with_provider_events(path))
    provider = ReplayProvider(session=session)

    context = Context(messages=[UserMessage(content="hi")])
    events = [event async for event in provider.stream_simple(ECHO_MODEL, context)]
    assert [event.type for event in events] == ["start", "text_start", "text_delta", "text_end"]
    call = session.take("http", http_sections(chat_request()), redactor=redact)

    assert call.call_index == 1
    assert provider.calls_consumed == 2
    provider.assert_consumed()
    assert provider.path == path
    assert provider.recording is session.recording


async def test_replay_provider_reports_the_boundary_when_http_was_recorded(
    tmp_path: Path,
) -> None:
    provider = ReplayProvider(write_calls(tmp_path / "r.jsonl", sse_call(0)))
    context = Context(messages=[UserMessage(content="hi")])
    with pytest.raises(ReplayMismatch) as caught:
        _ = [event async for event in provider.stream_simple(ECHO_MODEL, context)]
    assert caught.value.field_path == "boundary"
    assert "recorded an HTTP call (POST https://api.openai.com/v1/chat/completions)" in str(
        caught.value
    )
    assert "incoming a provider call (echo:echo)" in str(caught.value)
    assert provider.mismatches == [caught.value]


def test_replay_provider_needs_a_session_with_decoded_events(tmp_path: Path) -> None:
    session = session_on(write_calls(tmp_path / "r.jsonl", provider_call(0)))
    with pytest.raises(ValueError, match="provider events decoded"):
        ReplayProvider(session=session)
    with pytest.raises(TypeError, match="path of a recording, or a session"):
        ReplayProvider()


@pytest.mark.parametrize("match", ["content", "order"])
def test_take_equal_serves_an_equal_call_and_otherwise_keeps_and_consumes_nothing(
    tmp_path: Path, match: str
) -> None:
    first, second = chat_request("one"), chat_request("two")
    path = write_calls(tmp_path / "r.jsonl", sse_call(0, first), sse_call(1, second))
    session = session_on(path, match=match)

    assert session.take_equal("http", http_sections(chat_request("three")), redactor=redact) is None
    assert (session.mismatches, session.calls_consumed) == ([], 0)
    taken = session.take_equal("http", http_sections(first), redactor=redact)
    assert taken is not None
    assert taken.call_index == 0
    assert session.take_equal("http", http_sections(first), redactor=redact) is None  # consumed
    assert session.served_calls == [0]
    assert session.unconsumed_calls == [1]


def test_take_equal_under_order_passes_over_a_call_made_inside_a_replayed_tool(
    tmp_path: Path,
) -> None:
    # Call 0 was made inside the tool lookup; replayed from its tape, the tool does not run,
    # so call 0 is never asked for: the next request is compared with call 1, as take does.
    inside, after = chat_request("inside the tool"), chat_request("after the tool")
    made_inside = sse_call(0, inside)
    made_inside[0]["within"] = "tool:lookup"
    path = write_calls(tmp_path / "r.jsonl", made_inside, sse_call(1, after))
    session = session_on(path, match="order", tools={"lookup": "replay"})

    taken = session.take_equal("http", http_sections(after), redactor=redact)

    assert taken is not None
    assert taken.call_index == 1
    session.assert_consumed()
