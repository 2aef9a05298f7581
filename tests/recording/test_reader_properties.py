"""Properties of the strict recording reader over generated recordings: what it reads back is
what was written, and it refuses rather than crashes."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.format import Recording
from tests.support.recording_rows import (
    Row,
    call_end,
    done,
    event,
    header,
    request,
)

# --- properties ----------------------------------------------------------------------------

SHORT_TEXT = st.text(max_size=6)
OUTCOMES = ("complete", "error", "cancelled", "abandoned")

text_event_payloads: st.SearchStrategy[Row] = st.one_of(
    st.builds(lambda: {"type": "start"}),
    st.builds(lambda i: {"type": "text_start", "content_index": i}, st.integers(0, 3)),
    st.builds(
        lambda i, d: {"type": "text_delta", "content_index": i, "delta": d},
        st.integers(0, 3),
        SHORT_TEXT,
    ),
    st.builds(
        lambda i, c: {"type": "text_end", "content_index": i, "content": c},
        st.integers(0, 3),
        SHORT_TEXT,
    ),
    st.builds(done, SHORT_TEXT),
)


@dataclass
class GeneratedCall:
    call_index: int
    request: Row
    payloads: list[Row]
    outcome: str | None
    error: Row | None
    line: int = 0

    def rows(self) -> list[Row]:
        rows = [self.request]
        rows += [event(self.call_index, i, p) for i, p in enumerate(self.payloads)]
        if self.outcome is not None:
            rows.append(call_end(self.call_index, len(self.payloads), self.outcome, self.error))
        return rows


@dataclass
class GeneratedRecording:
    header: Row
    calls: list[GeneratedCall]
    data: bytes
    truncated_calls: list[int] = field(default_factory=list)


@st.composite
def generated_recordings(draw: st.DrawFn) -> GeneratedRecording:
    """A valid recording: interleaved calls, maybe a cut-short last call and a cut last line."""
    calls = []
    for index in range(draw(st.integers(0, 5))):
        outcome = draw(st.sampled_from(OUTCOMES))
        error = (
            {"type": draw(st.sampled_from(["RuntimeError", "x.Err"])), "message": draw(SHORT_TEXT)}
            if outcome == "error"
            else None
        )
        calls.append(
            GeneratedCall(
                index,
                request(index, text=draw(SHORT_TEXT)),
                draw(st.lists(text_event_payloads, max_size=5)),
                outcome,
                error,
            )
        )
    # How the last call ends: whole, without its call_end, or also with a line cut mid-write.
    cut = draw(st.sampled_from(["none", "call_end", "mid_line"])) if calls else "none"
    truncate = cut != "none"
    if truncate:
        calls[-1].outcome, calls[-1].error = None, None

    # Interleave the calls' rows as concurrent writers would: each call's rows in order,
    # request rows in call_index order (indexes are handed out in the order requests land).
    per_call = [(call, call.rows()) for call in calls]
    positions = [0] * len(calls)
    next_request = 0
    ordered: list[tuple[GeneratedCall, Row]] = []
    while True:
        ready = [
            i
            for i, (_, rows) in enumerate(per_call)
            if positions[i] < len(rows) and (positions[i] > 0 or i == next_request)
        ]
        if not ready:
            break
        chosen = draw(st.sampled_from(ready))
        if positions[chosen] == 0:
            next_request += 1
        call, rows = per_call[chosen]
        ordered.append((call, rows[positions[chosen]]))
        positions[chosen] += 1

    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    blank_before = draw(st.sets(st.integers(0, len(ordered)), max_size=3))
    first = header(recording_id=draw(SHORT_TEXT))
    out = [orjson.dumps(first) + newline]
    number = 1
    for position, (call, row) in enumerate(ordered, start=1):
        if position - 1 in blank_before:
            out.append(newline)
            number += 1
        number += 1
        if row["type"] == "request":
            call.line = number
        out.append(orjson.dumps(row) + newline)
    if cut == "mid_line":
        last = calls[-1]
        partial = orjson.dumps(event(last.call_index, len(last.payloads), {"type": "start"}))
        out.append(partial[: draw(st.integers(1, len(partial) - 1))])
    truncated = [calls[-1].call_index] if truncate else []
    return GeneratedRecording(first, calls, b"".join(out), truncated)


def summary(recording: Recording) -> list[tuple[Any, ...]]:
    return [
        (
            call.call_index,
            call.line,
            call.request,
            call.event_rows,
            call.outcome,
            None
            if call.error is None
            else {"type": call.error.type, "message": call.error.message},
        )
        for call in recording.calls
    ]


def expected_summary(generated: GeneratedRecording) -> list[tuple[Any, ...]]:
    return [
        (
            call.call_index,
            call.line,
            {key: call.request[key] for key in ("model", "context", "options")},
            call.payloads,
            call.outcome,
            call.error,
        )
        for call in generated.calls
    ]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=generated_recordings(), validate=st.booleans())
def test_generated_recordings_read_back_as_generated(
    generated: GeneratedRecording, validate: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "generated.jsonl"
        path.write_bytes(generated.data)
        recording = read_recording(path, validate_events=validate)
    assert recording.header == generated.header
    assert summary(recording) == expected_summary(generated)
    assert recording.truncated_calls == generated.truncated_calls
    for call in recording.calls:
        if validate:
            assert [e.type for e in call.events] == [p["type"] for p in call.event_rows]
        else:
            assert call.events == []


def read_or_refuse(path: Path, *, validate_events: bool) -> RecordingFileError | None:
    """None if ``path`` reads; its RecordingFileError if refused; anything else propagates."""
    try:
        read_recording(path, validate_events=validate_events)
    except RecordingFileError as error:
        return error
    return None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated=generated_recordings(), data=st.data())
def test_damaged_recordings_are_read_or_refused_never_crash(
    generated: GeneratedRecording, data: st.DataObject
) -> None:
    original = generated.data
    if data.draw(st.booleans(), label="drop a line"):
        lines = original.split(b"\n")
        del lines[data.draw(st.integers(0, len(lines) - 1), label="line")]
        damaged = b"\n".join(lines)
    else:
        position = data.draw(st.integers(0, len(original) - 1), label="position")
        byte = data.draw(st.integers(0, 255), label="byte")
        damaged = original[:position] + bytes([byte]) + original[position + 1 :]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "damaged.jsonl"
        path.write_bytes(damaged)
        refusals = [read_or_refuse(path, validate_events=v) for v in (True, False)]
    for refusal in refusals:
        if refusal is not None:
            assert refusal.path == str(path)
            assert refusal.line is None or 1 <= refusal.line <= damaged.count(b"\n") + 1
