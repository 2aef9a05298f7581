"""``prune_recordings``: by age, by count, or both; never the active one; partial failures."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from openprogram.errors import PruneCriteriaError
from openprogram.store.store import PruneResult, prune_recordings, select_for_prune
from tests.support.recording_rows import write_recording

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


def make(store: Path, name: str, *, days_old: float, created_days_ago: float | None = None) -> Path:
    """A recording last modified ``days_old`` days before NOW (created then, unless told)."""
    created = NOW - timedelta(days=days_old if created_days_ago is None else created_days_ago)
    path = write_recording(
        store / f"{name}.jsonl", created_at=created.isoformat().replace("+00:00", "Z")
    )
    mtime = (NOW - timedelta(days=days_old)).timestamp()
    os.utime(path, (mtime, mtime))
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir()
    make(folder, "d1", days_old=1)
    make(folder, "d10", days_old=10)
    make(folder, "d40", days_old=40)
    make(folder, "d90", days_old=90)
    return folder


def names(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def remaining(store: Path) -> list[str]:
    return sorted(path.stem for path in store.glob("*.jsonl"))


def test_needs_a_criterion(store: Path) -> None:
    with pytest.raises(PruneCriteriaError, match="give --older-than DAYS, --keep N"):
        prune_recordings(store)
    with pytest.raises(ValueError, match="criterion"):
        select_for_prune(store, older_than_days=None, keep=None, active=None)
    assert remaining(store) == ["d1", "d10", "d40", "d90"]


@pytest.mark.parametrize(("days", "keep"), [(-1, None), (None, -2)])
def test_negative_criteria_are_refused(store: Path, days: float | None, keep: int | None) -> None:
    with pytest.raises(PruneCriteriaError, match="0 or more"):
        prune_recordings(store, older_than_days=days, keep=keep)


def test_by_age(store: Path) -> None:
    result = prune_recordings(store, older_than_days=30, now=NOW)
    assert names(result.removed) == ["d40", "d90"]
    assert names(result.kept) == ["d1", "d10"]
    assert (result.failed, result.dry_run) == ([], False)
    assert remaining(store) == ["d1", "d10"]


def test_age_is_by_mtime_not_created_at(tmp_path: Path) -> None:
    make(tmp_path, "touched", days_old=1, created_days_ago=100)
    assert prune_recordings(tmp_path, older_than_days=30, now=NOW).removed == []


def test_by_count_keeps_the_newest(store: Path) -> None:
    result = prune_recordings(store, keep=1, now=NOW)
    assert names(result.removed) == ["d10", "d40", "d90"]
    assert names(result.kept) == ["d1"]
    assert remaining(store) == ["d1"]


def test_count_uses_created_at_first(tmp_path: Path) -> None:
    make(tmp_path, "young", days_old=50, created_days_ago=1)
    make(tmp_path, "aged", days_old=2, created_days_ago=60)
    assert names(prune_recordings(tmp_path, keep=1, now=NOW).removed) == ["aged"]


def test_keep_zero_removes_every_inactive_one(store: Path) -> None:
    result = prune_recordings(store, keep=0, active=store / "d40.jsonl", now=NOW)
    assert remaining(store) == ["d40"]
    assert names(result.kept) == ["d40"]


def test_both_criteria_remove_only_what_both_select(store: Path) -> None:
    result = prune_recordings(store, older_than_days=5, keep=3, now=NOW)
    assert names(result.removed) == ["d90"]
    assert remaining(store) == ["d1", "d10", "d40"]


def test_dry_run_removes_nothing(store: Path) -> None:
    result = prune_recordings(store, older_than_days=30, dry_run=True, now=NOW)
    assert result == PruneResult(
        removed=[store / "d40.jsonl", store / "d90.jsonl"],
        kept=[store / "d1.jsonl", store / "d10.jsonl"],
        failed=[],
        dry_run=True,
    )
    assert remaining(store) == ["d1", "d10", "d40", "d90"]


def test_the_active_recording_is_kept(store: Path) -> None:
    result = prune_recordings(store, older_than_days=30, active=store / "d90.jsonl", now=NOW)
    assert names(result.removed) == ["d40"]
    assert "d90" in names(result.kept)
    assert remaining(store) == ["d1", "d10", "d90"]


def test_symlinks_and_other_files_are_never_touched(store: Path, tmp_path: Path) -> None:
    outside = make(tmp_path, "outside", days_old=400)
    (store / "escape.jsonl").symlink_to(outside)
    os.utime(store / "escape.jsonl", (0, 0), follow_symlinks=False)
    (store / "notes.txt").write_text("keep")
    os.utime(store / "notes.txt", (0, 0))
    (store / "dir.jsonl").mkdir()
    result = prune_recordings(store, keep=0, now=NOW)
    assert names(result.removed) == ["d1", "d10", "d40", "d90"]
    assert outside.exists()
    assert (store / "escape.jsonl").is_symlink()
    assert (store / "notes.txt").exists()
    assert (store / "dir.jsonl").is_dir()


def test_a_corrupt_old_file_is_prunable_by_age(store: Path) -> None:
    corrupt = store / "corrupt.jsonl"
    corrupt.write_bytes(b"\x00 not a recording at all")
    old = (NOW - timedelta(days=100)).timestamp()
    os.utime(corrupt, (old, old))
    result = prune_recordings(store, older_than_days=30, now=NOW)
    assert "corrupt" in names(result.removed)
    assert not corrupt.exists()


def test_a_corrupt_file_is_ranked_by_mtime_for_keep(store: Path) -> None:
    corrupt = store / "corrupt.jsonl"
    corrupt.write_bytes(b"{broken\n")
    old = (NOW - timedelta(days=20)).timestamp()
    os.utime(corrupt, (old, old))
    removed, kept = select_for_prune(store, older_than_days=None, keep=2, active=None, now=NOW)
    assert names(kept) == ["d1", "d10"]
    assert names(removed) == ["corrupt", "d40", "d90"]


def test_a_file_that_fails_to_delete_is_reported_and_the_rest_continue(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_unlink = os.unlink
    stuck = store / "d40.jsonl"

    def unlink(path: str | os.PathLike[str], **kwargs: int) -> None:
        if Path(path).name == stuck.name:  # removed by name, through the store's descriptor
            raise PermissionError(13, "Permission denied")
        real_unlink(path, **kwargs)

    monkeypatch.setattr(os, "unlink", unlink)
    result = prune_recordings(store, older_than_days=5, now=NOW)
    assert names(result.removed) == ["d10", "d90"]
    assert result.failed == [(stuck, "Permission denied")]
    assert remaining(store) == ["d1", "d40"]


def test_an_empty_or_missing_store_prunes_nothing(tmp_path: Path) -> None:
    assert prune_recordings(tmp_path / "none", keep=0) == PruneResult()
    assert prune_recordings(tmp_path / "none", older_than_days=0) == PruneResult()
