"""``openprogram demo``: a self-contained record → replay → verify round trip that changes
nothing of the user's."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from openprogram.config.paths import config_location, recordings_dir
from openprogram.harness.demo import CHANGED_TEXT, NOTES_TEXT, Demo
from tests.support.cli_runner import openprogram


def test_each_step_does_what_it_says(tmp_path: Path) -> None:
    demo = Demo(tmp_path)
    recorded = demo.record()
    assert recorded.final.text == f"echo:{NOTES_TEXT}"
    assert demo.recording.is_file()
    assert demo.replay().final.text == recorded.final.text
    drift = demo.drift()
    assert drift is not None
    assert drift.splitlines() == [
        "replay mismatch at call 1, field context.messages[2].content[0].text:",
        f"recorded {NOTES_TEXT!r}, incoming {CHANGED_TEXT!r}",
    ]
    assert demo.notes.read_text() == NOTES_TEXT  # put back for verify
    verified = demo.verify()
    assert verified.ok
    assert verified.calls == 2


def test_the_demo_passes_and_cleans_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.chdir(temporary)
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    result = openprogram("demo")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "1. Record a tool-using session on the offline echo model:"
    assert "replay mismatch at call 1, field context.messages[2].content[0].text:" in lines
    assert any(
        line.startswith("✔ 2 calls replayed and matched; transcript hash ") for line in lines
    )
    assert lines[-1] == (
        "The demo's files were removed; your configuration and recordings were not touched."
    )
    assert list(temporary.iterdir()) == []


def test_the_demo_ignores_and_keeps_the_configured_state(tmp_path: Path) -> None:
    """Whatever the configuration says — here, record into a recording of the store — the
    demo neither applies it nor changes it, and writes nothing into the store."""
    config = config_location().path
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text('[record_replay]\nmode = "record"\nfile = "mine"\n')
    before = config.read_bytes()
    result = openprogram("demo")
    assert result.exit_code == 0, result.output
    assert config.read_bytes() == before
    assert not recordings_dir().exists()


def test_keep_leaves_the_files_in_the_folder_given(tmp_path: Path) -> None:
    folder = tmp_path / "kept"
    result = openprogram("demo", "--keep", str(folder))
    assert result.exit_code == 0, result.output
    assert sorted(path.name for path in folder.iterdir()) == ["demo.jsonl", "notes.txt"]
    assert result.stdout.splitlines()[-1].startswith(f"The demo's files are kept in {folder};")


def test_keep_refuses_a_folder_that_holds_files(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("mine")
    result = openprogram("demo", "--keep", str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --keep ")
    assert (tmp_path / "x").read_text() == "mine"
