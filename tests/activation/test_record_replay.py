"""``openprogram.record_replay()``: both boundaries for a block, in every thread; the first
mismatch (even one the block swallowed) or the unconsumed calls raised when it ends; the
placeholder keys under replay."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import openprogram
from openprogram.activation import PLACEHOLDER_API_KEY
from openprogram.activation.boundaries import set_placeholder_keys
from openprogram.errors import RecordingFileError, ReplayMismatch, UnconsumedCallsError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
from openprogram.recording.mismatch import RecordReplayEscape
from tests.support.http_agent import answering, ask
from tests.support.offline import offline
from tests.support.sse_server import ScriptedServer

REPORT = "replay mismatch at call 0, field body.question:\nrecorded 'hi', incoming 'bye'"


def echo(text: str) -> str:
    context = Context(messages=[UserMessage(content=text)])
    return asyncio.run(complete_simple(ECHO_MODEL, context)).text


def record(server: ScriptedServer, path: Path, *questions: str) -> None:
    for question in questions:
        server.serve(answering(f"answer to {question}"))
    with openprogram.record_replay(path, mode="record"):
        for question in questions:
            ask(server.base_url, question)


def test_one_recording_holds_both_boundaries_and_replays_offline(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    server.serve(answering("hello"))
    with openprogram.record_replay(path, mode="record") as active:
        assert ask(server.base_url, "hi") == "hello"
        assert echo("and you?") == "echo:and you?"
    assert active.mode == "record"
    assert [call.boundary for call in read_recording(path).calls] == ["http", "provider"]
    with offline(), openprogram.record_replay(path, mode="replay") as active:
        assert ask(server.base_url, "hi") == "hello"
        assert echo("and you?") == "echo:and you?"
    assert active.session is not None
    assert active.session.calls_consumed == 2
    assert len(server.received) == 1


def test_threads_and_executor_workers_are_served_from_the_recording_never_live(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi", "more")
    with offline(), openprogram.record_replay(path, mode="replay"):
        answers: list[str] = []
        thread = threading.Thread(target=lambda: answers.append(ask(server.base_url, "hi")))
        thread.start()
        thread.join()
        with ThreadPoolExecutor(max_workers=1) as pool:
            answers.append(pool.submit(ask, server.base_url, "more").result())
    assert answers == ["answer to hi", "answer to more"]
    assert len(server.received) == 2  # both while recording


def test_a_drifting_thread_is_refused_and_its_mismatch_raised_when_the_block_ends(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi")
    died: list[BaseException] = []
    with (
        pytest.raises(ReplayMismatch) as raised,
        offline(),
        openprogram.record_replay(path, mode="replay"),
    ):
        thread = threading.Thread(target=lambda: _catch(died, ask, server.base_url, "bye"))
        thread.start()
        thread.join()
    assert str(raised.value) == REPORT
    assert type(died[0]).__name__ == "RecordReplayEscape"  # what the thread itself saw
    assert len(server.received) == 1


def _catch(into: list[BaseException], function: object, *args: object) -> None:
    try:
        function(*args)  # type: ignore[operator]
    except BaseException as error:  # the way a worker loop would swallow it
        into.append(error)


def test_a_mismatch_escaping_the_sdk_leaves_the_block_as_the_replay_mismatch(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi")
    with pytest.raises(ReplayMismatch) as raised, openprogram.record_replay(path, mode="replay"):
        ask(server.base_url, "bye")
    assert str(raised.value) == REPORT
    assert isinstance(raised.value, AssertionError)


def test_a_mismatch_swallowed_even_by_except_base_exception_is_raised_at_the_end(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi")
    with (
        pytest.raises(ReplayMismatch, match="incoming 'bye'"),
        openprogram.record_replay(path, mode="replay") as active,
    ):
        with contextlib.suppress(BaseException):
            ask(server.base_url, "bye")
        assert len(active.mismatches) == 1


def test_a_mismatch_cleared_on_purpose_is_not_raised(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi")
    with openprogram.record_replay(path, mode="replay") as active:
        with pytest.raises(RecordReplayEscape) as raised:  # what the block's code sees
            ask(server.base_url, "bye")
        assert raised.value.error is active.mismatches[0]
        active.mismatches.clear()
        assert ask(server.base_url, "hi") == "answer to hi"


def test_another_error_caused_by_nothing_of_replay_is_left_alone_but_a_mismatch_wins(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi")
    with pytest.raises(KeyError), openprogram.record_replay(path, mode="replay"):
        raise KeyError("the agent's own bug")  # not an unconsumed-calls error either
    with (
        pytest.raises(ReplayMismatch) as raised,
        openprogram.record_replay(path, mode="replay"),
    ):
        with contextlib.suppress(BaseException):
            ask(server.base_url, "bye")
        raise RuntimeError("the agent gave up after the swallowed mismatch")
    assert isinstance(raised.value.__context__, RuntimeError)


def test_recorded_calls_never_requested_raise_when_the_block_ends(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi", "more")
    with (
        pytest.raises(UnconsumedCallsError, match=r"1 of 2 recorded calls never requested"),
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(server.base_url, "hi")


def test_placeholder_keys_while_replaying_only_and_only_where_unset(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path)  # no calls
    with openprogram.record_replay(path, mode="record"):
        assert "OPENAI_API_KEY" not in os.environ
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-users-own-key")
    with openprogram.record_replay(path, mode="replay"):
        assert os.environ["OPENAI_API_KEY"] == PLACEHOLDER_API_KEY
        assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-the-users-own-key"
    assert "OPENAI_API_KEY" not in os.environ
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-the-users-own-key"


def test_google_and_aws_placeholders_only_where_no_key_of_theirs_is_set() -> None:
    environ: dict[str, str] = {}
    restore = set_placeholder_keys(environ)
    assert environ == {
        "OPENAI_API_KEY": PLACEHOLDER_API_KEY,
        "ANTHROPIC_API_KEY": PLACEHOLDER_API_KEY,
        "GEMINI_API_KEY": PLACEHOLDER_API_KEY,
        "AWS_ACCESS_KEY_ID": PLACEHOLDER_API_KEY,
        "AWS_SECRET_ACCESS_KEY": PLACEHOLDER_API_KEY,
    }
    restore()
    assert environ == {}
    own = {"GOOGLE_API_KEY": "the-users-own", "AWS_PROFILE": "work"}
    environ = dict(own)
    set_placeholder_keys(environ)()
    assert environ == own  # google-genai would warn of two keys; botocore reads the profile
    set_placeholder_keys(environ)
    assert "GEMINI_API_KEY" not in environ
    assert "AWS_ACCESS_KEY_ID" not in environ


def test_the_placeholder_is_a_secret_a_request_carrying_it_matches_one_with_a_real_key(
    server: ScriptedServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "agent.jsonl"
    real_key = "a-real-key-read-from-the-environment"
    monkeypatch.setenv("OPENAI_API_KEY", real_key)
    record(server, path, f"my key is {real_key}")
    assert real_key not in path.read_text()
    monkeypatch.delenv("OPENAI_API_KEY")
    with offline(), openprogram.record_replay(path, mode="replay"):
        question = f"my key is {os.environ['OPENAI_API_KEY']}"
        assert ask(server.base_url, question) == "answer to my key is [secret removed]"
    assert PLACEHOLDER_API_KEY not in path.read_text()


def test_a_recording_that_cannot_be_used_is_refused_at_the_start(tmp_path: Path) -> None:
    with (
        pytest.raises(RecordingFileError, match="no such recording"),
        openprogram.record_replay(tmp_path / "missing.jsonl", mode="replay"),
    ):
        pass
    (tmp_path / "folder.jsonl").mkdir()
    with (
        pytest.raises(RecordingFileError),
        openprogram.record_replay(tmp_path / "folder.jsonl", mode="record"),
    ):
        pass
    with (
        pytest.raises(ValueError, match="mode must be 'record' or 'replay'"),
        openprogram.record_replay(tmp_path / "x.jsonl", mode="live"),  # type: ignore[arg-type]
    ):
        pass
    with (
        pytest.raises(ValueError, match="unknown matching 'fuzzy'"),
        openprogram.record_replay(tmp_path / "x.jsonl", match="fuzzy"),
    ):
        pass


def test_recording_into_a_recording_that_holds_calls_says_it_appends(
    server: ScriptedServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "agent.jsonl"
    server.serve(answering("one"), answering("two"))
    with openprogram.record_replay(path, mode="record") as first:
        ask(server.base_url, "hi")
    assert first.appended_to == 0
    assert "already holds" not in caplog.text

    with (
        caplog.at_level("WARNING", logger="openprogram"),
        openprogram.record_replay(path, mode="record") as second,
    ):
        ask(server.base_url, "hi")

    assert second.appended_to == 1
    assert (
        f"openprogram: {path} already holds 1 call: this block's calls are appended after "
        "them, and a replay of it serves both sessions in order" in caplog.text
    )


def test_a_replay_left_incomplete_says_the_file_holds_several_sessions(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    server.serve(answering("one"), answering("two"), answering("three"), answering("four"))
    for questions in (["hi"], ["again", "more"], ["last"]):
        with openprogram.record_replay(path, mode="record"):
            for question in questions:
                ask(server.base_url, question)
    recording = read_recording(path)
    assert recording.appended_sessions == [1, 3]
    ends = [line for line in path.read_text().splitlines() if '"call_end"' in line]
    assert ['"new_session":true' in line for line in ends] == [False, True, False, True]

    with (
        offline(),
        pytest.raises(UnconsumedCallsError) as raised,
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(server.base_url, "hi")  # one run of the program: the first session

    assert str(raised.value) == (
        f"replay incomplete: 3 of 4 recorded calls never requested (calls 1..3) from {path}; "
        "the file holds 3 sessions recorded one after the other (the later ones start at "
        "calls 1, 3), and a replay serves them as one: record each session into its own file"
    )
    assert raised.value.appended_sessions == [1, 3]


def test_a_replay_of_one_session_left_incomplete_says_the_run_stopped_early(
    server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path, "hi", "again")
    assert read_recording(path).appended_sessions == []

    with (
        offline(),
        pytest.raises(UnconsumedCallsError, match="the run stopped before the recorded session"),
        openprogram.record_replay(path, mode="replay"),
    ):
        ask(server.base_url, "hi")


@pytest.mark.parametrize(
    ("damage", "line"),
    [(b"not json\n", 2), (b'{"type":"event","call_index":0,"event_index":5,"event":{}}\n', 2)],
)
def test_a_damaged_recording_is_not_recorded_into(
    damage: bytes, line: int, server: ScriptedServer, tmp_path: Path
) -> None:
    path = tmp_path / "agent.jsonl"
    record(server, path)  # a header
    path.write_bytes(path.read_bytes() + damage)
    before = path.read_bytes()

    with (
        pytest.raises(
            RecordingFileError, match=rf"agent\.jsonl, line {line}: .*could never be read"
        ),
        openprogram.record_replay(path, mode="record"),
    ):
        ask(server.base_url, "hi")

    assert path.read_bytes() == before
