"""The record → replay → off cycle, as a user runs it: separate processes."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, python_process, user_environment

ECHO_SESSION = """
import asyncio, json, sys
from openprogram.providers import ECHO_MODEL, Context, UserMessage, stream_simple

async def main():
    replies = []
    for text in sys.argv[1:]:
        events = [event async for event in stream_simple(
            ECHO_MODEL, Context(messages=[UserMessage(content=text)]))]
        replies.append([event.model_dump(mode="json", exclude={"message": {"timestamp"}})
                        for event in events])
    print(json.dumps(replies))

asyncio.run(main())
"""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return user_environment(tmp_path / "home")


def openprogram(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return openprogram_process(*args, env=env)


def session(
    env: dict[str, str], *texts: str, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    """The echo calls of a program that uses the library, in a new process."""
    return python_process(ECHO_SESSION, *texts, env=env, offline=offline)


def test_record_replay_off_cycle(env: dict[str, str]) -> None:
    recorded = openprogram(env, "recordings", "record", "demo")
    assert recorded.returncode == 0, recorded.stderr
    assert "from now on" in recorded.stdout

    live = session(env, "hello", "world")
    assert live.returncode == 0, live.stderr
    store = Path(env["OPENPROGRAM_HOME"]) / "recordings"
    lines = (store / "demo.jsonl").read_text().splitlines()
    assert sum('"type":"request"' in line for line in lines) == 2

    assert openprogram(env, "recordings", "replay", "demo").returncode == 0
    replayed = session(env, "hello", "world", offline=True)
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == json.loads(live.stdout)

    # 3. The recording is corrupted: the next process is blocked, status says why, off fixes.
    with (store / "demo.jsonl").open("a") as recording:
        recording.write("{this is not json\n")
    blocked = session(env, "hello")
    assert blocked.returncode != 0
    assert "record/replay is blocked" in blocked.stderr
    assert "openprogram recordings off" in blocked.stderr
    status = openprogram(env, "recordings", "status")
    assert status.returncode == 1
    assert "not valid JSON" in status.stdout
    assert openprogram(env, "recordings", "off").returncode == 0
    again = session(env, "hello")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)[0][-1]["message"]["content"][0]["text"] == "echo:hello"


def test_record_mode_on_a_read_only_store_is_blocked_not_crashed(env: dict[str, str]) -> None:
    assert openprogram(env, "recordings", "record", "demo").returncode == 0
    store = Path(env["OPENPROGRAM_HOME"]) / "recordings"
    (store / "demo.jsonl").unlink()
    if os.geteuid() == 0:
        # root writes through permission bits: put a file where the store folder was.
        store.rmdir()
        store.write_text("")
    else:
        store.chmod(0o500)
    try:
        blocked = session(env, "hello")
        assert blocked.returncode != 0
        assert "record/replay is blocked" in blocked.stderr
        status = openprogram(env, "recordings", "status")
        assert status.returncode == 1
        off = openprogram(env, "recordings", "off")
        assert off.returncode == 0, off.stderr
        assert session(env, "hello").returncode == 0
    finally:
        if store.is_dir():
            store.chmod(0o700)
