"""A recording written by the previous openprogram (before the HTTP boundary), byte for byte,
reads, hashes and replays as it did then; no call is appended to it, since it is of
format_version 1 and this openprogram writes 2 (it says so, and changes nothing).

``data/previous_version.jsonl`` was recorded by the commit before the HTTP boundary: a
two-call tool session on ``echo``, then a call whose provider raised
``ConnectionResetError``. The transcript hash below is the one version 4 of the hash gives it
(version 1, which that openprogram printed, was 90dc355e…, version 2 68a8419c…, version 3
f5b40bfc…); the file itself is unchanged.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.types import Context, Model, SimpleStreamOptions
from openprogram.recording.writer import RecordingWriter
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary import summarize_recording
from tests.support.http_call_rows import chat_request

PREVIOUS = Path(__file__).parent / "data" / "previous_version.jsonl"
PREVIOUS_SHA256 = "931fed1a72251d2beac6d119880efc7bebf3358ce8f6f53e7a0b2a027ab63a6a"
PREVIOUS_TRANSCRIPT_HASH = "2fff5087fe9caec57b812e56467e14f9d251aee07bb03f743cb11c872631e4fb"


@pytest.fixture
def previous(tmp_path: Path) -> Path:
    assert hashlib.sha256(PREVIOUS.read_bytes()).hexdigest() == PREVIOUS_SHA256
    return Path(shutil.copy(PREVIOUS, tmp_path / "previous.jsonl"))


def test_it_reads_as_provider_calls_with_their_events(previous: Path) -> None:
    recording = read_recording(previous)
    assert "features" not in recording.header
    assert [call.boundary for call in recording.calls] == ["provider"] * 3
    assert [call.outcome for call in recording.calls] == ["complete", "complete", "error"]
    assert [type(event).__name__ for event in recording.calls[0].events] == [
        "StartEvent",
        "ToolCallStartEvent",
        "ToolCallDeltaEvent",
        "ToolCallEndEvent",
        "DoneEvent",
    ]
    assert recording.calls[2].error is not None
    assert recording.calls[2].error.type == "ConnectionResetError"


def test_its_transcript_hash_and_summary_are_what_they_were(previous: Path) -> None:
    assert transcript_hash(read_recording(previous)) == PREVIOUS_TRANSCRIPT_HASH
    summary = summarize_recording(previous)
    assert summary.valid
    assert (summary.calls, summary.events, summary.models) == (3, 10, ["echo:echo"])
    assert summary.transcript_hash == PREVIOUS_TRANSCRIPT_HASH


async def test_it_replays_call_by_call(previous: Path) -> None:
    recording = read_recording(previous)
    replay = ReplayProvider(previous)
    for call in recording.calls:
        model = Model.model_validate(call.request["model"])
        context = Context.model_validate(call.request["context"])
        options = SimpleStreamOptions.model_validate(call.request["options"])
        events = replay.stream_simple(model, context, options)
        if call.outcome == "error":
            with pytest.raises(ConnectionResetError, match="the server hung up"):
                _ = [event async for event in events]
        else:
            assert [event async for event in events] == call.events
    replay.assert_consumed()
    assert replay.mismatches == []


@pytest.mark.parametrize(
    "request_fields", [chat_request(), {"model": {}, "context": {}, "options": {}}]
)
def test_no_call_is_appended_to_it(previous: Path, request_fields: dict[str, object]) -> None:
    writer = RecordingWriter(previous)
    before = previous.read_bytes()
    with pytest.raises(RecordingFileError) as caught:
        writer.open_call(request_fields)
    writer.close()
    assert caught.value.line == 1
    assert caught.value.problem == (
        "cannot append to a recording of format_version 1 (this openprogram writes "
        "format_version 2)"
    )
    assert "new recording" in str(caught.value)
    assert previous.read_bytes() == before
