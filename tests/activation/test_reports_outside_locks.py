"""A replay mismatch is kept outside the replay session's locks: exec's child reports each
mismatch the moment it is kept, and its report reads the calls and tape entries never
served, under the very locks the mismatch was found under. Kept under one of them, the report
waited for itself and the program hung (a clock read once more, a taped function called with
another argument, a tool checked under ``check``, a request that matches no call).

Each case drives exec's own session (a replay session given :class:`ExecClaim`) in a thread, so a
regression fails the test after a generous wait instead of hanging the suite."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.activation.exec_child import ExecClaim
from openprogram.agent import run_agent, tool
from openprogram.errors import ReplayMismatch
from openprogram.providers import ECHO_MODEL
from openprogram.recording.format import Recording
from openprogram.recording.reader import read_recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession

HANG_GUARD = 120.0
"""Seconds a replay step may take before the test calls it hung (it takes milliseconds)."""


@openprogram.taped
def lookup(word: str) -> str:
    return word.upper()


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return "sunny"


@pytest.fixture
def recording(tmp_path: Path) -> Recording:
    """A session of one taped call, ``lookup("a")``, and an agent run of two model calls
    with one call of the tool ``weather``."""
    path = tmp_path / "session.jsonl"
    with openprogram.record_replay(path, mode="record"):
        lookup("a")
        asyncio.run(run_agent(ECHO_MODEL, '/tool weather {"city": "Paris"}', tools=[weather]))
    return read_recording(path)


def exec_session(recording: Recording, tmp_path: Path, match: str) -> ReplaySession:
    """The session exec's child replays ``recording`` with, reporting into a new folder."""
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    claim = ExecClaim(exchange)
    return ReplaySession(recording, match=match, tools={"*": "check"}, claim=claim)


def other_first_request(recording: Recording) -> dict[str, Any]:
    """The first call's request with another prompt."""
    request = copy.deepcopy(recording.calls[0].request)
    request["context"]["messages"][0]["content"] = "/tool weather {}"
    return request


def finished(step: Callable[[], Any]) -> Any:
    """What ``step`` returned or raised, run in a thread; the test fails if it never ends."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(step())
        except ReplayMismatch as error:
            outcome.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    if worker.is_alive():
        pytest.fail(f"the replay step did not end within {HANG_GUARD:.0f} s: it hangs")
    return outcome[0]


STEPS: dict[str, Callable[[ReplaySession, Recording], Any]] = {
    "a taped call with another argument": lambda session, _: session.take_tape(
        "lookup", {"word": "b"}
    ),
    "a taped call past the tape's end": lambda session, _: (
        session.take_tape("lookup", {"word": "a"}),
        session.take_tape("lookup", {"word": "a"}),
    ),
    "a tool checked with another result": lambda session, _: (
        session.take_tape("lookup", {"word": "a"}),  # claims the replay, as a run's first call
        session.tapes.compare(
            "tool:weather", {"city": "Paris"}, {"text": "rainy", "is_error": False}
        ),
    )[1],
    "a request that matches no call": lambda session, recording: session.take(
        "provider", other_first_request(recording), redactor=SecretRedactor().redact_request
    ),
}

REPORTS = {
    "a taped call with another argument": (
        "replay mismatch at tape lookup[0], field args.word:\nrecorded 'a', incoming 'b'"
    ),
    "a taped call past the tape's end": "replay mismatch at tape lookup[1], field tape:\n",
    "a tool checked with another result": (
        "replay mismatch at tape tool:weather[0], field result.text:\n"
        "recorded 'sunny', incoming 'rainy'"
    ),
    "a request that matches no call": "replay mismatch at call 0, field context.messages[0]",
}


@pytest.mark.parametrize("match", ["content", "order"])
@pytest.mark.parametrize("step", list(STEPS))
def test_a_mismatch_is_reported_at_once_and_the_step_ends(
    recording: Recording, tmp_path: Path, step: str, match: str
) -> None:
    session = exec_session(recording, tmp_path, match)
    mismatch = finished(lambda: STEPS[step](session, recording))
    assert isinstance(mismatch, ReplayMismatch)
    assert str(mismatch).startswith(REPORTS[step])
    assert session.mismatches == [mismatch]
    # Reported to exec the moment it was kept, the account of what is left unread included.
    report = json.loads((tmp_path / "exchange" / f"report-{os.getpid()}.json").read_text())
    assert report["kind"] == "mismatch"
    assert report["problem"] == str(mismatch)
    # Nothing is left held: the session serves the next step (here, its account).
    assert finished(session.unconsumed_error) is not None
