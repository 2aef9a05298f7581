"""``openprogram recordings delete``: one inactive recording in the store, confirmed."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.cli import output
from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_line, run
from tests.support.recording_rows import write_recording


@pytest.fixture
def on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """stdin reads as a terminal, so ``delete`` asks (CliRunner feeds the answer)."""

    monkeypatch.setattr(output, "stdin_is_terminal", lambda: True)


def test_yes_deletes() -> None:
    path = write_recording("old")

    result = run("delete", "old", "--yes")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"Deleted {path}\n"
    assert not path.exists()


def test_without_a_terminal_and_without_yes_nothing_is_deleted() -> None:
    path = write_recording("old")

    result = run("delete", "old")

    assert result.exit_code == 2
    assert "not a terminal, so pass --yes to confirm" in error_line(result)
    assert path.exists()


def test_on_a_terminal_it_asks(on_a_terminal: None) -> None:
    path = write_recording("old")

    refused = run("delete", "old", input="n\n")
    assert refused.exit_code == 1
    assert f"Delete {path}?" in refused.stdout
    assert "nothing was deleted" in error_line(refused)
    assert path.exists()

    accepted = run("delete", "old", input="y\n")
    assert accepted.exit_code == 0, accepted.stderr
    assert not path.exists()


def test_the_active_recording_is_refused() -> None:
    assert run("record", "live").exit_code == 0
    path = recordings_dir() / "live.jsonl"

    result = run("delete", "live", "--yes")

    assert result.exit_code == 1
    assert "it is the active recording; run `openprogram recordings off` first" in error_line(
        result
    )
    assert path.exists()


def test_the_active_recording_is_refused_before_asking() -> None:
    assert run("record", "live").exit_code == 0

    result = run("delete", "live")

    assert result.exit_code == 1
    assert "it is the active recording" in error_line(result)


def test_a_symlink_is_refused() -> None:
    target = write_recording("real")
    link = recordings_dir() / "link.jsonl"
    link.symlink_to(target)

    result = run("delete", "link", "--yes")

    assert result.exit_code == 1
    assert "it is a symbolic link" in error_line(result)
    assert link.is_symlink()
    assert target.exists()


def test_a_path_outside_the_store_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "mine.jsonl"
    outside.write_bytes(write_recording("x").read_bytes())

    result = run("delete", str(outside), "--yes")

    assert result.exit_code == 2
    assert "not a path" in error_line(result)
    assert outside.exists()


def test_a_path_inside_the_store_is_refused_too() -> None:
    path = write_recording("old")

    result = run("delete", str(path), "--yes")

    assert result.exit_code == 2
    assert "delete takes a recording name" in error_line(result)
    assert path.exists()


def test_dot_dot_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    write_recording("x")
    victim = recordings_dir().parent / "x.jsonl"
    victim.write_text("not mine to delete")
    monkeypatch.chdir(recordings_dir())

    result = run("delete", "../x", "--yes")

    assert result.exit_code == 2
    assert "'../x'" in error_line(result)
    assert victim.exists()
    assert (recordings_dir() / "x.jsonl").exists()


@pytest.mark.parametrize("name", ["", ".hidden", "-x.y"])
def test_an_invalid_name_exits_2(name: str) -> None:
    result = run("delete", "--yes", "--", name)

    assert result.exit_code == 2
    assert "recording name" in error_line(result)


def test_a_missing_recording_exits_2() -> None:
    result = run("delete", "nothere", "--yes")

    assert result.exit_code == 2
    assert "no recording 'nothere'" in error_line(result)
    assert "openprogram recordings list" in result.stderr


def test_a_missing_recording_is_reported_before_asking() -> None:
    result = run("delete", "nothere")

    assert result.exit_code == 2
    assert "no recording 'nothere'" in error_line(result)
