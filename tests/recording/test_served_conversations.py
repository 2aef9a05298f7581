"""Replay walks a session's conversation once: a request that extends one served before is
redacted only in what it adds; a recording redacted by older rules is redacted again in
full; a drift is reported exactly as a whole comparison reports it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from openprogram.agent.loop import run_agent
from openprogram.errors import ReplayMismatch
from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers import provider_scope
from openprogram.providers.registry import register_api_provider
from openprogram.recording.reader import read_recording as read_rows_only
from openprogram.recording.redaction import (
    REDACTION_VERSION,
    SecretRedactor,
    recorded_redaction_is_current,
)
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.writer import RecordingWriter
from tests.recording.test_request_deltas import Calls, conversation, record_session
from tests.support.recording_rows import read_rows, write_rows
from tests.support.scripted_provider import FAKE_MODEL
from tests.support.tool_sessions import lookup


def replay(path: Path, provider: ReplayProvider) -> None:
    with provider_scope():
        register_api_provider("fake", provider)
        asyncio.run(run_agent(FAKE_MODEL, "go", tools=[lookup], max_iterations=Calls))
    provider.assert_consumed()


def redacted_lengths(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of messages each request redaction is given, from now on."""
    lengths: list[int] = []
    redact = SecretRedactor.redact_request

    def counting(self: SecretRedactor, request: dict[str, Any]) -> dict[str, Any]:
        lengths.append(len(request["context"]["messages"]))
        return redact(self, request)

    monkeypatch.setattr(SecretRedactor, "redact_request", counting)
    return lengths


def test_each_request_is_redacted_only_in_what_it_adds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    record_session(path)
    provider = ReplayProvider(path)
    lengths = redacted_lengths(monkeypatch)
    replay(path, provider)
    assert lengths == [1] + [2] * (Calls - 1)


def test_a_recording_redacted_by_older_rules_is_redacted_again_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    record_session(path)
    rows = read_rows(path)
    rows[0]["redaction_version"] = REDACTION_VERSION - 1
    write_rows(path, rows)
    assert not recorded_redaction_is_current(rows[0], None)
    provider = ReplayProvider(path)
    lengths = redacted_lengths(monkeypatch)
    replay(path, provider)
    incoming = [2 * n + 1 for n in range(Calls)]
    assert sorted(set(lengths)) == sorted(set(incoming))  # each request and each recorded one


@pytest.mark.parametrize(
    ("header", "current"),
    [
        ({"redaction_version": REDACTION_VERSION}, True),
        ({"redaction_version": REDACTION_VERSION, "redaction_fingerprint": None}, True),
        ({"redaction_version": REDACTION_VERSION - 1}, False),
        ({}, False),
        ({"redaction_version": REDACTION_VERSION, "redaction_fingerprint": "f1"}, False),
    ],
)
def test_the_recorded_redaction_is_current_only_with_the_same_version_and_fingerprint(
    header: dict[str, Any], current: bool
) -> None:
    assert recorded_redaction_is_current(header, None) is current


def test_the_recorded_fingerprint_must_be_the_replays_user_redaction() -> None:
    from openprogram.recording.user_redaction import UserRedaction

    user = UserRedaction.of(patterns=[r"customer-\d+"])
    assert user is not None
    recorded = {"redaction_version": REDACTION_VERSION, "redaction_fingerprint": user.fingerprint}
    assert recorded_redaction_is_current(recorded, user)
    assert not recorded_redaction_is_current(recorded, None)
    assert not recorded_redaction_is_current({"redaction_version": REDACTION_VERSION}, user)
    other = UserRedaction.of(patterns=[r"order-\d+"])
    assert not recorded_redaction_is_current(recorded, other)


def report(session: ReplaySession, request: dict[str, Any], *, remembered: bool) -> str:
    redactor = SecretRedactor([])
    with pytest.raises(ReplayMismatch) as info:
        session.take(
            "provider",
            request,
            redactor=redactor.redact_request,
            redaction=redactor.rules if remembered else None,
        )
    return str(info.value)


@pytest.mark.parametrize("match", ["content", "order"])
def test_a_drift_late_in_a_session_is_reported_as_a_whole_comparison_reports_it(
    tmp_path: Path, match: str
) -> None:
    path = tmp_path / "s.jsonl"
    record_session(path)
    calls = read_recording(path).calls
    reports = []
    for remembered in (True, False):
        session = ReplaySession(read_recording(path), match=match)
        redactor = SecretRedactor([])
        for call in calls[:7]:
            session.take(
                "provider",
                call.request,
                redactor=redactor.redact_request,
                redaction=redactor.rules if remembered else None,
            )
        drifted = {**calls[7].request, "context": dict(calls[7].request["context"])}
        messages = list(drifted["context"]["messages"])
        messages[-1] = {**messages[-1], "content": "result-changed"}
        drifted["context"]["messages"] = messages
        reports.append(report(session, drifted, remembered=remembered))
    assert reports[0] == reports[1]
    assert "call 7, field context.messages[14].content" in reports[0]


def test_a_one_where_a_true_was_recorded_is_a_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    writer = RecordingWriter(path)
    first = {"model": {}, "context": {"messages": [{"n": 1}]}, "options": {}}
    second = {"model": {}, "context": {"messages": [{"n": 1}, {"m": 2}]}, "options": {}}
    for request in (first, second):
        writer.open_call(request).end_call("complete")
    writer.close()
    session = ReplaySession(read_rows_only(path))
    redactor = SecretRedactor([])
    take = session.take("provider", first, redactor=redactor.redact_request, redaction=())
    assert take.call_index == 0
    truthy = {"model": {}, "context": {"messages": [{"n": True}, {"m": 2}]}, "options": {}}
    with pytest.raises(ReplayMismatch, match=r"context\.messages\[0\]\.n"):
        session.take("provider", truthy, redactor=redactor.redact_request, redaction=())


def test_concurrent_conversations_each_reuse_their_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.jsonl"
    order = [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("a", 3), ("b", 3)]
    writer = RecordingWriter(path)
    for name, turns in order:
        writer.open_call(conversation(name, turns)).end_call("complete")
    writer.close()
    session = ReplaySession(read_rows_only(path))
    lengths = redacted_lengths(monkeypatch)
    redactor = SecretRedactor([])
    served = [
        session.take(
            "provider",
            conversation(name, turns),
            redactor=redactor.redact_request,
            redaction=redactor.rules,
        ).call_index
        for name, turns in [("b", 1), ("a", 1), ("b", 2), ("a", 2), ("a", 3), ("b", 3)]
    ]
    assert served == [1, 0, 3, 2, 4, 5]
    assert lengths == [1, 1, 1, 1, 1, 1]


def test_threads_replaying_their_own_conversations_at_once_are_each_served(
    tmp_path: Path,
) -> None:
    import threading

    path = tmp_path / "r.jsonl"
    names = [f"agent{n}" for n in range(8)]
    writer = RecordingWriter(path)
    for turns in range(1, 31):
        for name in names:
            writer.open_call(conversation(name, turns)).end_call("complete")
    writer.close()
    session = ReplaySession(read_rows_only(path))
    redactor = SecretRedactor([])
    problems: list[BaseException] = []

    def agent(name: str) -> None:
        try:
            for turns in range(1, 31):
                session.take(
                    "provider",
                    conversation(name, turns),
                    redactor=redactor.redact_request,
                    redaction=redactor.rules,
                )
        except BaseException as exc:
            problems.append(exc)

    threads = [threading.Thread(target=agent, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert session.unconsumed_calls == []
