"""One function works out the configured recording's path; the next start (activation),
``status`` and the store commands (``active_recording``) all use it and always agree."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram.activation.configured import activate_record_replay
from openprogram.config import paths
from openprogram.config.paths import configured_recording_path
from openprogram.config.settings import active_recording
from openprogram.store.status import configured_status


@pytest.fixture
def home() -> Path:
    folder = Path(os.environ["OPENPROGRAM_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def configure(home: Path, mode: str, file: str) -> None:
    (home / "config.toml").write_text(f'[record_replay]\nmode = "{mode}"\nfile = "{file}"\n')


@pytest.mark.parametrize(
    ("file", "expected"),
    [
        ("demo", "{store}/demo.jsonl"),
        ("sub/run.jsonl", "{cwd}/sub/run.jsonl"),
        ("run.jsonl", "{cwd}/run.jsonl"),
        ("~/runs/x.jsonl", "{home}/runs/x.jsonl"),
        ("{tmp}/abs/y.jsonl", "{tmp}/abs/y.jsonl"),
    ],
)
def test_activation_status_and_the_store_commands_agree(
    home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    file: str,
    expected: str,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    places = {
        "store": str(home / "recordings"),
        "cwd": str(work),
        "home": os.environ["HOME"],
        "tmp": str(tmp_path),
    }
    file = file.format(**places)
    path = Path(expected.format(**places))
    configure(home, "record", file)

    activation = activate_record_replay()
    report = configured_status()

    assert activation.mode == "record", activation.blocked_reason
    assert configured_recording_path(file) == path
    assert activation.recording == path
    assert report.recording is not None
    assert report.recording.path == path
    assert active_recording() == path


def test_all_three_ask_the_one_function(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    elsewhere = tmp_path / "chosen" / "by-the-function.jsonl"

    def answer(file: str, environ: object = None) -> Path:
        asked.append(file)
        return elsewhere

    monkeypatch.setattr(paths, "configured_recording_path", answer)
    configure(home, "record", "demo")

    activation = activate_record_replay()
    report = configured_status()
    active = active_recording()

    assert asked == ["demo", "demo", "demo"]
    assert activation.recording == elsewhere
    assert report.recording is not None
    assert report.recording.path == elsewhere
    assert active == elsewhere


def test_an_invalid_name_blocks_the_start_and_is_a_status_problem(home: Path) -> None:
    configure(home, "replay", "bad name")

    activation = activate_record_replay()
    report = configured_status()

    assert activation.mode == "blocked"
    assert "invalid recording name 'bad name'" in (activation.blocked_reason or "")
    assert report.broken
    assert active_recording() is None
