"""A replay session's claim: asked before each call and tape entry is served, told of each
mismatch the session keeps, never while the session's lock is held (exec's claim reports at
once, reading what is left unserved under that lock)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.errors import ReplayInAnotherProcessError, ReplayMismatch
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from tests.support.http_call_rows import chat_request, sse_call, write_calls

REDACT = SecretRedactor([]).redact_http_request


def sections(prompt: str) -> dict[str, object]:
    return {key: value for key, value in chat_request(prompt).items() if key != "boundary"}


class Claim:
    """Refuses while ``holder`` is another process; notes what it was told, and whether the
    session's lock was free each time."""

    def __init__(self, holder: int | None = None) -> None:
        self.holder = holder
        self.asked = 0
        self.told: list[ReplayMismatch] = []
        self.lock_free: list[bool] = []

    def refusal(self, session: ReplaySession) -> ReplayMismatch | None:
        self.asked += 1
        if self.holder is None:
            return None
        return ReplayInAnotherProcessError(session.calls_consumed, self.holder, 1)

    def kept(self, session: ReplaySession, mismatch: ReplayMismatch) -> None:
        self.told.append(mismatch)
        self.lock_free.append(not session.lock.locked())


@pytest.fixture
def recording_path(tmp_path: Path) -> Path:
    return write_calls(tmp_path / "r.jsonl", sse_call(0, chat_request("one")))


@pytest.mark.parametrize("match", ["content", "order"])
def test_a_refusing_claim_stops_every_call_and_tape_entry_before_it_is_served(
    recording_path: Path, match: str
) -> None:
    claim = Claim(holder=4242)
    session = ReplaySession(read_recording(recording_path), match=match, claim=claim)

    with pytest.raises(ReplayInAnotherProcessError) as call:
        session.take("http", sections("one"), redactor=REDACT)
    with pytest.raises(ReplayInAnotherProcessError) as entry:
        session.take_tape("clock", {})

    assert session.calls_consumed == 0
    assert session.mismatches == [call.value, entry.value] == claim.told
    assert claim.asked == 2


@pytest.mark.parametrize("match", ["content", "order"])
def test_a_mismatch_is_told_to_the_claim_with_the_session_lock_released(
    recording_path: Path, match: str
) -> None:
    claim = Claim()
    session = ReplaySession(read_recording(recording_path), match=match, claim=claim)

    with pytest.raises(ReplayMismatch) as drifted:
        session.take("http", sections("two"), redactor=REDACT)
    with pytest.raises(ReplayMismatch) as past_the_end:
        session.take_tape("clock", {})
    assert session.take("http", sections("one"), redactor=REDACT).call_index == 0

    assert claim.told == session.mismatches == [drifted.value, past_the_end.value]
    assert claim.lock_free == [True, True]
    assert claim.asked == 3


def test_take_equal_asks_no_claim_and_keeps_nothing(recording_path: Path) -> None:
    claim = Claim(holder=4242)
    session = ReplaySession(read_recording(recording_path), claim=claim)

    assert session.take_equal("http", sections("two"), redactor=REDACT) is None
    assert claim.asked == 0
    assert claim.told == session.mismatches == []
