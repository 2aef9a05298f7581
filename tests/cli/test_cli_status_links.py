"""``openprogram recordings status`` says what the next start will do with a recording in the
store that is a symbolic link (record refuses it; replay reads through it), and calls INVALID
exactly what recording refuses."""

from __future__ import annotations

import json
from pathlib import Path

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import openprogram, run
from tests.support.config_files import write_config
from tests.support.recording_rows import call_rows, header, write_recording, write_rows


def stored(name: str) -> Path:
    return recordings_dir() / f"{name}.jsonl"


def configure(mode: str) -> None:
    write_config(f'[record_replay]\nmode = "{mode}"\nfile = "demo"\n')


def test_record_mode_names_a_dangling_link_as_a_link_and_the_problem(tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "elsewhere.jsonl"
    recordings_dir().mkdir(parents=True)
    stored("demo").symlink_to(outside)
    configure("record")

    result = run("status")

    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert f"file:    {stored('demo')} (a symbolic link to {outside}: never recorded through)" in (
        lines
    )
    assert (
        f"problem: {stored('demo')}: it is a symbolic link (to {outside}), and openprogram "
        "writes into its store only, never through a link out of it; remove it, or record "
        "into another name (or give a path of your own)"
    ) in lines
    report = json.loads(run("status", "--json").stdout)
    assert report["recording"]["link"] == str(outside)
    assert report["broken"] is True
    assert not outside.parent.exists()


def test_record_mode_refuses_a_link_to_a_valid_recording_too(tmp_path: Path) -> None:
    outside = write_recording(tmp_path / "elsewhere.jsonl", calls=2)
    recordings_dir().mkdir(parents=True)
    stored("demo").symlink_to(outside)
    configure("record")

    result = run("status")

    assert result.exit_code == 1
    assert f"(a symbolic link to {outside}: never recorded through)" in result.stdout
    assert "problem: " in result.stdout


def test_replay_mode_reads_through_a_link_and_says_it_is_one(tmp_path: Path) -> None:
    outside = write_recording(tmp_path / "elsewhere.jsonl", calls=2)
    recordings_dir().mkdir(parents=True)
    stored("demo").symlink_to(outside)
    configure("replay")

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert (
        f"file:    {stored('demo')} (a symbolic link to {outside}; valid, 2 calls, format "
    ) in result.stdout


def test_a_path_of_the_users_own_may_be_a_link(tmp_path: Path) -> None:
    outside = write_recording(tmp_path / "elsewhere.jsonl", calls=1)
    mine = tmp_path / "mine.jsonl"
    mine.symlink_to(outside)
    write_config(f'[record_replay]\nmode = "record"\nfile = "{mine}"\n')

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert f"file:    {mine} (valid, 1 call, format " in result.stdout


def test_record_mode_calls_invalid_what_recording_refuses_events_replay_cannot_read() -> None:
    # a row every reader takes, holding an event replay cannot build
    write_rows(stored("demo"), [header("demo"), *call_rows(0, [{"type": "no-such-event"}])])
    configure("record")

    status = run("status")
    recorded = openprogram("run", "hello")

    assert status.exit_code == 1
    assert "(INVALID)" in status.stdout
    assert recorded.exit_code == 1  # what status calls INVALID, recording refuses
    assert "record/replay is blocked" in recorded.stderr


def test_record_mode_into_an_empty_file_is_a_new_recording() -> None:
    recordings_dir().mkdir(parents=True)
    stored("demo").write_bytes(b"")
    configure("record")

    result = run("status")

    assert result.exit_code == 0, result.stdout
    assert f"file:    {stored('demo')} (valid, 0 calls)" in result.stdout
