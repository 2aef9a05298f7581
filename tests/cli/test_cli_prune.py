"""``openprogram recordings prune``: old inactive recordings, by age or count, confirmed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_line, run
from tests.support.recording_rows import write_recording

DAY = 86_400


@pytest.fixture
def recordings() -> dict[str, Path]:
    """Four recordings, created (and last written) 1, 10, 40 and 90 days ago."""
    now = time.time()
    made = {}
    for days in (1, 10, 40, 90):
        moment = now - days * DAY
        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment))
        made[f"d{days}"] = write_recording(f"d{days}", calls=1, created_at=created, mtime=moment)
    return made


def remaining() -> list[str]:
    return sorted(path.stem for path in recordings_dir().glob("*.jsonl"))


def test_no_criterion_exits_2(recordings: dict[str, Path]) -> None:
    result = run("prune", "--yes")

    assert result.exit_code == 2
    assert "prune needs a criterion: give --older-than DAYS, --keep N, or both" in error_line(
        result
    )
    assert remaining() == ["d1", "d10", "d40", "d90"]


@pytest.mark.parametrize("option", [["--keep", "-1"], ["--older-than", "-2"]])
def test_a_negative_criterion_exits_2(recordings: dict[str, Path], option: list[str]) -> None:
    result = run("prune", *option, "--yes")

    assert result.exit_code == 2
    assert "must be 0 or more" in error_line(result)
    assert len(remaining()) == 4


def test_dry_run_lists_and_deletes_nothing(recordings: dict[str, Path]) -> None:
    result = run("prune", "--keep", "1", "--dry-run")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"Would delete {recordings['d10']}",
        f"Would delete {recordings['d40']}",
        f"Would delete {recordings['d90']}",
        "Would delete 3, kept 1",
    ]
    assert remaining() == ["d1", "d10", "d40", "d90"]


def test_keep_n_keeps_the_newest(recordings: dict[str, Path]) -> None:
    result = run("prune", "--keep", "1", "--yes")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "Deleted 3, kept 1"
    assert remaining() == ["d1"]


def test_older_than_uses_the_modification_time(recordings: dict[str, Path]) -> None:
    now = time.time()
    os.utime(recordings["d90"], (now, now))  # written to today, though created long ago

    result = run("prune", "--older-than", "30", "--yes")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [f"Deleted {recordings['d40']}", "Deleted 1, kept 3"]
    assert remaining() == ["d1", "d10", "d90"]


def test_both_criteria_must_select(recordings: dict[str, Path]) -> None:
    result = run("prune", "--keep", "1", "--older-than", "20", "--yes")

    assert result.exit_code == 0, result.stderr
    assert remaining() == ["d1", "d10"]


def test_never_the_active_recording(recordings: dict[str, Path]) -> None:
    assert run("replay", "d90").exit_code == 0

    result = run("prune", "--keep", "0", "--yes", "--json")

    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kept"] == [str(recordings["d90"])]
    assert sorted(report["removed"]) == sorted(str(recordings[n]) for n in ("d1", "d10", "d40"))
    assert report["failed"] == []
    assert report["dry_run"] is False
    assert remaining() == ["d90"]


def test_a_partial_failure_exits_1_and_names_what_was_kept(
    recordings: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_unlink = os.unlink
    stuck = recordings["d40"]

    def unlink(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if Path(path).name == stuck.name:  # removed by name, through the store's descriptor
            raise PermissionError(13, "Permission denied", str(path))
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)

    result = run("prune", "--older-than", "5", "--yes")

    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == "Deleted 2, kept 1, failed 1"
    assert f"warning: could not delete {stuck}: Permission denied; it is kept" in result.stderr
    assert remaining() == ["d1", "d40"]


def test_without_a_terminal_and_without_yes_nothing_is_deleted(
    recordings: dict[str, Path],
) -> None:
    result = run("prune", "--keep", "1")

    assert result.exit_code == 2
    assert "Delete 3 recordings from" in error_line(result)
    assert "pass --yes" in result.stderr
    assert len(remaining()) == 4


def test_nothing_to_prune_needs_no_confirmation(recordings: dict[str, Path]) -> None:
    result = run("prune", "--keep", "10")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Deleted 0, kept 4\n"


def test_an_invalid_recording_can_be_pruned(recordings: dict[str, Path]) -> None:
    broken = recordings_dir() / "broken.jsonl"
    broken.write_text("not a recording\n")
    old = time.time() - 100 * DAY
    os.utime(broken, (old, old))

    result = run("prune", "--older-than", "95", "--yes")

    assert result.exit_code == 0, result.stderr
    assert not broken.exists()
