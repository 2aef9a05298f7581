"""``openprogram recordings list``: the store, newest first, the active one marked."""

from __future__ import annotations

import json

from openprogram.config.paths import recordings_dir
from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.recording_rows import write_corrupt_recording, write_recording


def rows(stdout: str) -> list[list[str]]:
    """The table's rows (header first), split on runs of spaces."""
    return [line.split() for line in stdout.splitlines() if line.strip()]


def test_an_empty_store_says_how_to_start() -> None:
    result = run("list")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        f"No recordings in {recordings_dir()}. Start one with `openprogram recordings record`.\n"
    )


def test_recordings_newest_first_with_the_active_one_marked() -> None:
    write_recording("old", calls=1, created_at="2026-01-01T10:00:00Z")
    write_recording("middle", calls=2, created_at="2026-02-01T10:00:00Z", model_id="m2")
    write_recording("new", calls=3, created_at="2026-03-01T10:00:00Z")
    assert run("replay", "middle").exit_code == 0

    result = run("list")

    assert result.exit_code == 0, result.stderr
    table = rows(result.stdout)
    assert table[0] == ["name", "created", "calls", "size", "models", "state", "hash"]
    assert [row[0] for row in table[1:]] == ["new", "*", "old"]
    assert table[2][:5] == ["*", "middle", "2026-02-01", "10:00:00", "2"]
    assert table[2][-3:-1] == ["fake:m2", "valid"]
    assert table[1][:4] == ["new", "2026-03-01", "10:00:00", "3"]


def test_an_invalid_file_shows_its_problem_and_a_truncated_one_is_marked() -> None:
    write_corrupt_recording(recordings_dir() / "broken.jsonl")
    write_recording("cut", calls=2, truncated=True, created_at="2026-01-01T00:00:00Z")

    result = run("list")

    assert result.exit_code == 0, result.stderr
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "INVALID: line 3: not valid" in lines["broken"]  # shortened to the width
    assert " truncated " in lines["cut"]


def test_json_fields() -> None:
    path = write_recording("demo", calls=2, created_at="2026-01-01T00:00:00Z")
    write_corrupt_recording(recordings_dir() / "broken.jsonl")
    assert run("record", "fresh").exit_code == 0

    result = run("list", "--json")

    assert result.exit_code == 0, result.stderr
    listed = {item["name"]: item for item in json.loads(result.stdout)}
    assert set(listed) == {"demo", "broken", "fresh"}
    demo = listed["demo"]
    assert demo == {
        "name": "demo",
        "path": str(path),
        "size": path.stat().st_size,
        "mtime": path.stat().st_mtime,
        "created_at": "2026-01-01T00:00:00Z",
        "calls": 2,
        "events": 10,
        "models": ["fake:m1"],
        "format_version": 2,
        "valid": True,
        "truncated": False,
        "problem": None,
        "transcript_hash": transcript_hash(read_recording(path)),
        "http_calls": 0,
        "tape_entries": 0,
        "active": False,
    }
    assert listed["fresh"]["active"] is True
    assert listed["broken"]["valid"] is False
    assert listed["broken"]["problem"].startswith("line 3: not valid JSON")


def test_json_of_an_empty_store_is_an_empty_list() -> None:
    result = run("list", "--json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == []


def test_symlinks_and_other_files_are_not_listed() -> None:
    write_recording("real", calls=1)
    (recordings_dir() / "link.jsonl").symlink_to(recordings_dir() / "real.jsonl")
    (recordings_dir() / "notes.txt").write_text("hi")

    result = run("list", "--json")

    assert [item["name"] for item in json.loads(result.stdout)] == ["real"]
