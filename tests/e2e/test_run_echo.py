"""``openprogram run`` on the echo default, recorded then replayed offline: separate processes
as a user runs them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.child_processes import openprogram_process, user_environment

README = "# Demo project\n\nA tool-using session reads this file.\n"
NEWLINE = "\n"
READ_README = '/tool read_file {"path": "README.md"}'


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "README.md").write_text(README)
    return folder


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return user_environment(tmp_path / "home")


def openprogram(
    env: dict[str, str], cwd: Path, *args: str, offline: bool = False
) -> subprocess.CompletedProcess[str]:
    """``openprogram ARGS`` in a new process; ``offline`` makes every socket connect fail."""
    return openprogram_process(*args, env=env, cwd=cwd, offline=offline)


def test_record_replay_offline_then_drift(env: dict[str, str], workdir: Path) -> None:
    recorded = openprogram(env, workdir, "recordings", "record", "s1")
    assert recorded.returncode == 0, recorded.stderr

    live = openprogram(env, workdir, "run", READ_README)
    assert live.returncode == 0, live.stderr
    assert live.stdout == f"echo:{README}"
    assert live.stderr.splitlines() == [
        '→ read_file {"path": "README.md"}',
        f"← {len(README)} chars: # Demo project",
    ]

    assert openprogram(env, workdir, "recordings", "replay", "s1").returncode == 0
    replayed = openprogram(env, workdir, "run", READ_README, offline=True)
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    assert replayed.stderr == live.stderr

    as_json = openprogram(env, workdir, "run", READ_README, "--json", offline=True)
    assert as_json.returncode == 0, as_json.stderr
    assert '"calls": 2' in as_json.stdout

    changed_prompt = '/tool read_file {"path": "README"}'
    drifted = openprogram(env, workdir, "run", changed_prompt, offline=True)
    assert drifted.returncode == 1
    assert drifted.stdout == ""
    assert drifted.stderr.splitlines() == [
        "error: replay mismatch at call 0, field context.messages[0].content:",
        f"recorded {READ_README!r}, incoming {changed_prompt!r}",
    ]

    # The file the tool reads changed: the request carrying the tool result drifts at call 1.
    (workdir / "README.md").write_text(README + "edited\n")
    edited = openprogram(env, workdir, "run", READ_README, offline=True)
    assert edited.returncode == 1
    assert edited.stderr.splitlines()[-2:] == [
        "error: replay mismatch at call 1, field context.messages[2].content[0].text:",
        f"recorded {README!r}, incoming {README + 'edited' + NEWLINE!r}",
    ]


def test_recorded_calls_left_unconsumed_exit_1(env: dict[str, str], workdir: Path) -> None:
    assert openprogram(env, workdir, "recordings", "record", "s2").returncode == 0
    first = openprogram(env, workdir, "run", READ_README)  # calls 0 and 1
    assert first.returncode == 0, first.stderr
    second = openprogram(env, workdir, "run", "anything else?")  # call 2, appended
    assert second.returncode == 0, second.stderr
    assert "already holds 2 calls" in second.stderr

    assert openprogram(env, workdir, "recordings", "replay", "s2").returncode == 0
    replayed = openprogram(env, workdir, "run", READ_README, offline=True)

    assert replayed.returncode == 1
    assert replayed.stdout == first.stdout
    store = Path(env["OPENPROGRAM_HOME"]) / "recordings"
    assert replayed.stderr.splitlines()[-1] == (
        "error: replay incomplete: 1 of 3 recorded calls never requested (call 2) from "
        f"{store / 's2.jsonl'}; the file holds 2 sessions recorded one after the other (the "
        "later one starts at call 2), and a replay serves them as one: record each session "
        "into its own file"
    )


def test_a_broken_recording_blocks_the_run(env: dict[str, str], workdir: Path) -> None:
    assert openprogram(env, workdir, "recordings", "record", "s3").returncode == 0
    assert openprogram(env, workdir, "run", "hello").returncode == 0
    assert openprogram(env, workdir, "recordings", "replay", "s3").returncode == 0
    store = Path(env["OPENPROGRAM_HOME"]) / "recordings"
    with (store / "s3.jsonl").open("a") as recording:
        recording.write("{not json\n")

    blocked = openprogram(env, workdir, "run", "hello", offline=True)

    assert blocked.returncode == 1
    assert blocked.stdout == ""
    [line] = blocked.stderr.splitlines()
    assert line.startswith("error: record/replay is blocked:")
    assert "openprogram recordings off" in line
