"""Canonical JSON and the transcript hash."""

from __future__ import annotations

import asyncio
import hashlib
import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.errors import CanonicalJSONError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    UserMessage,
    complete_simple,
)
from openprogram.recording.call_digest import TRANSCRIPT_HASH_VERSION
from openprogram.store.comparison import first_difference
from openprogram.store.hashing import canonical_json, short_hash, transcript_hash
from tests.support.tool_sessions import recording_into


def test_canonical_json_sorts_keys_at_every_level_and_is_compact() -> None:
    value = {"b": [{"z": 1, "a": 2}], "a": "é", "c": {"y": None, "x": True}}
    assert canonical_json(value) == '{"a":"é","b":[{"a":2,"z":1}],"c":{"x":true,"y":null}}'.encode()


def test_canonical_json_keeps_true_one_and_one_point_zero_apart() -> None:
    assert len({canonical_json(v) for v in (True, 1, 1.0)}) == 3


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ({"a": [1, math.nan]}, "a[1]"),
        ({"a": math.inf}, "a"),
        ({"a": -math.inf}, "a"),
        ({1: "x"}, ""),
        ({"a": (1, 2)}, "a"),
        ({"a": {1, 2}}, "a"),
        ({"a": b"bytes"}, "a"),
        ({"a": 2**64}, "a"),
        ({"when": __import__("datetime").date(2026, 1, 1)}, "when"),
    ],
)
def test_canonical_json_refuses_what_json_cannot_carry(value: Any, where: str) -> None:
    with pytest.raises(CanonicalJSONError) as caught:
        canonical_json(value)
    assert caught.value.field_path == where


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES)
def test_canonical_json_round_trips(value: Any) -> None:
    encoded = canonical_json(value)
    assert orjson.loads(encoded) == value
    assert canonical_json(orjson.loads(encoded)) == encoded


async def record(path: Path, *texts: str) -> None:
    with recording_into(path):
        for text in texts:
            await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=text)]))


async def test_the_same_session_at_different_times_has_the_same_hash(tmp_path: Path) -> None:
    await record(tmp_path / "a.jsonl", "hi", "there")
    await asyncio.sleep(0.01)  # other timestamps
    await record(tmp_path / "b.jsonl", "hi", "there")
    a, b = (read_recording(tmp_path / name) for name in ("a.jsonl", "b.jsonl"))
    timestamps = [
        call.request["context"]["messages"][0]["timestamp"] for call in (a.calls[0], b.calls[0])
    ]
    assert timestamps[0] != timestamps[1]
    assert transcript_hash(a) == transcript_hash(b)
    assert len(transcript_hash(a)) == 64
    assert short_hash(transcript_hash(a)) == transcript_hash(a)[:12]


async def test_any_change_to_a_request_or_an_event_changes_the_hash(tmp_path: Path) -> None:
    await record(tmp_path / "a.jsonl", "hi", "there")
    original = transcript_hash(read_recording(tmp_path / "a.jsonl"))
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    for number, line in enumerate(lines):
        row = orjson.loads(line)
        if row["type"] not in ("request", "event"):
            continue
        changed = line.replace('"echo:hi"', '"echo:HI"').replace('"hi"', '"ho"', 1)
        if changed == line:
            continue
        edited = tmp_path / f"edit-{number}.jsonl"
        edited.write_text("\n".join([*lines[:number], changed, *lines[number + 1 :]]) + "\n")
        assert transcript_hash(read_recording(edited)) != original, line


async def test_the_hash_agrees_with_the_first_difference(tmp_path: Path) -> None:
    await record(tmp_path / "a.jsonl", "hi")
    await record(tmp_path / "b.jsonl", "hi")
    await record(tmp_path / "c.jsonl", "bye")
    a, b, c = (read_recording(tmp_path / f"{n}.jsonl") for n in "abc")
    assert first_difference(a, b) is None
    assert transcript_hash(a) == transcript_hash(b)
    assert first_difference(a, c) is not None
    assert transcript_hash(a) != transcript_hash(c)


def test_a_known_recording_has_a_fixed_hash(tmp_path: Path) -> None:
    """Same recording, same hash, for as long as the hash version stays 4."""
    rows = [
        {"type": "header", "format_version": 1, "created_at": "2026-11-30T00:00:00Z"},
        {
            "type": "request",
            "call_index": 0,
            "model": {"id": "echo", "api": "echo", "provider": "echo"},
            "context": {"messages": [{"role": "user", "content": "hi", "timestamp": 1}]},
            "options": {},
        },
        {"type": "event", "call_index": 0, "event_index": 0, "event": {"type": "start"}},
        {"type": "call_end", "call_index": 0, "event_count": 1, "outcome": "complete"},
        {"type": "tape", "tape": "weather", "args": {"city": "Paris"}, "result": {"temp": 21}},
        {
            "type": "tape",
            "tape": "clock",
            "args": {},
            "result": 1767225600.5,
            "nondeterministic": True,
        },
    ]
    path = tmp_path / "fixed.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    assert transcript_hash(read_recording(path)) == FIXED_HASH
    assert TRANSCRIPT_HASH_VERSION == 4
    entries = [
        b'T "weather" {"args":{"city":"Paris"},"result":{"temp":21}}',
        b'T "clock" {"args":{},"nondeterministic":true}',
    ]
    digests = sorted([CALL_DIGEST, *(hashlib.sha256(entry).hexdigest() for entry in entries)])
    text = b"openprogram-transcript-4\n" + b"".join(d.encode() + b"\n" for d in digests)
    assert hashlib.sha256(text).hexdigest() == FIXED_HASH


FIXED_HASH = "bc5aaf8f339bb6bcbd9702130e1ecaebdcb76e3b893a57dc892d59100c85311c"
"""Version 4: the SHA-256 of ``openprogram-transcript-4`` and the digests, sorted, each on a
line: the call's — the SHA-256 of ``R {request}``, ``E 0 {"type":"start"}`` and ``X
{"outcome":"complete"}`` (the timestamp left out) — and each tape entry's: the SHA-256 of
``T "tape" {"args":…,"result":…}``, the clock's result left out (it is non-deterministic)."""
CALL_DIGEST = "679f8fc195821129fcdcbe71b3e4a73139ade7f4a7d23ab9fb3bd571c109daf0"
