"""``new_episodes`` in-process: each request is served from an equal unconsumed recorded
call when there is one and recorded live otherwise, at the provider registry and at HTTP;
the merged recording holds the run's calls in the order it made them, the unrequested
recorded calls dropped, and replays; a run that drifted nowhere leaves the file untouched."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.reader import read_recording as read_rows
from openprogram.testing.recording_session import open_recording_session
from openprogram.testing.session_lifecycle import RecordingSession
from tests.support.gathered_agents import http_agents, provider_agents
from tests.support.sdk_server import SdkServer


def opened(path: Path, mode: str, **settings: object) -> RecordingSession:
    return open_recording_session(
        path,
        record_mode=mode,  # type: ignore[arg-type]
        display_path=path.name,
        test_argument="test_x",
        environ={},
        **settings,  # type: ignore[arg-type]
    )


def run(session: RecordingSession, delays: dict[str, float], url: str | None = None) -> None:
    with session.installed():
        if url is None:
            asyncio.run(provider_agents(delays))
        else:
            asyncio.run(http_agents(url, delays))
    assert session.problem_after_call() is None
    session.finish(passed=True)


def first_user_texts(path: Path) -> list[str]:
    texts = []
    for call in read_rows(path).calls:
        if call.boundary == "http":
            texts.append(call.request["body"]["messages"][-1]["content"])
        else:
            texts.append(call.request["context"]["messages"][-1]["content"])
    return texts


def test_gathered_agents_replay_in_another_order_without_touching_the_file(
    tmp_path: Path,
) -> None:
    path = tmp_path / "agents.jsonl"
    run(opened(path, "once"), {"A": 0.02, "B": 0.0})
    before = path.read_bytes()

    session = opened(path, "new_episodes")
    assert session.mode == "replay_or_record"
    run(session, {"A": 0.0, "B": 0.02})  # the other one slower: calls arrive reordered

    assert path.read_bytes() == before
    outcome = session.outcome("test_x", passed=True)
    assert (outcome.kind, len(outcome.replayed_calls), outcome.recorded_calls) == ("replayed", 6, 0)
    assert outcome.tokens_replayed
    assert outcome.tokens_replayed > 0


@pytest.mark.parametrize("boundary", ["provider", "http"])
def test_only_the_drifted_calls_are_recorded_and_the_merge_replays(
    tmp_path: Path, boundary: str
) -> None:
    path = tmp_path / "agents.jsonl"
    with SdkServer() as server:
        url = server.openai_url if boundary == "http" else None
        run(opened(path, "once"), {"A": 0.0, "B": 0.01}, url)
        recorded = dict(zip(first_user_texts(path), read_rows(path).calls, strict=True))
        sent_before = len(server.received)

        session = opened(path, "new_episodes")
        run(session, {"A": 0.0, "C": 0.01}, url)  # B is gone, C is new

        if boundary == "http":
            assert len(server.received) - sent_before == 3  # only C's calls went out
    merged = read_rows(path)
    texts = first_user_texts(path)
    assert sorted(texts) == sorted(
        [f"{name} {turn}" for name in "AC" for turn in ("start", "turn 1", "turn 2")]
    )
    for text, call in zip(texts, merged.calls, strict=True):
        if text.startswith("A"):  # replayed: kept exactly as it was recorded
            assert call.event_rows == recorded[text].event_rows
    assert [call.call_index for call in merged.calls] == list(range(6))
    outcome = session.outcome("test_x", passed=True)
    assert (outcome.kind, outcome.recorded_calls, outcome.dropped_calls) == ("re-recorded", 3, 3)
    assert outcome.difference is not None
    assert outcome.difference.startswith("difference at call ")
    assert "old " in outcome.difference
    assert "new " in outcome.difference

    replay = opened(path, "none")  # the merged recording replays by content
    run(replay, {"A": 0.01, "C": 0.0}, url if boundary == "http" else None)
    assert replay.replay is not None
    assert replay.replay.unconsumed_calls == []


def test_under_order_matching_the_calls_after_a_drift_go_live(tmp_path: Path) -> None:
    path = tmp_path / "one.jsonl"
    run(opened(path, "once"), {"A": 0.0}, None)

    session = opened(path, "new_episodes", match="order")
    with session.installed():
        asyncio.run(provider_agents({"A": 0.0}, turns=1))  # the first call only
        asyncio.run(provider_agents({"Z": 0.0}, turns=1))
    session.finish(passed=True)

    assert first_user_texts(path) == ["A start", "Z start"]
    assert session.outcome("t", passed=True).dropped_calls == 2


def test_a_failed_run_leaves_the_recording_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "recordings" / "agents.jsonl"
    run(opened(path, "once"), {"A": 0.0}, None)
    before = path.read_bytes()
    session = opened(path, "new_episodes")
    with session.installed():
        asyncio.run(provider_agents({"Q": 0.0}))
    session.finish(passed=False)
    assert path.read_bytes() == before
    assert session.outcome("t", passed=False).kind == "failed"
    assert [p.name for p in path.parent.iterdir()] == ["agents.jsonl"]  # no temporary left
    assert read_recording(path).calls  # still valid
