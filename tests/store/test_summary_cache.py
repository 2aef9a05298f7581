"""``summarize_store``: newest first, and a summary cache that saves re-reading files."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import orjson
import pytest

from openprogram.recording.format import encode_row
from openprogram.store import summary as summary_module
from openprogram.store import summary_cache
from openprogram.store.summary import RecordingSummary
from openprogram.store.summary_cache import (
    CACHE_FILE_NAME,
    load_summary_cache,
    summarize_store,
)
from tests.support.recording_rows import call_rows, header, text_events, write_recording, write_rows


class CountingSummaries:
    """Stands in for ``summarize_recording`` and records which files it read."""

    def __init__(self) -> None:
        self.read: list[str] = []
        self.real = summary_module.summarize_recording

    def __call__(self, path: Path) -> RecordingSummary:
        self.read.append(path.name)
        return self.real(path)


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> CountingSummaries:
    counter = CountingSummaries()
    monkeypatch.setattr(summary_module, "summarize_recording", counter)
    return counter


@pytest.fixture
def store(tmp_path: Path) -> Path:
    folder = tmp_path / "store"
    folder.mkdir(mode=0o700)
    write_recording(folder / "old.jsonl", created_at="2026-01-01T00:00:00Z")
    write_recording(folder / "new.jsonl", calls=3, created_at="2026-02-01T00:00:00Z")
    write_recording(folder / "mid.jsonl", calls=1, created_at="2026-01-15T00:00:00Z")
    return folder


def names(summaries: list[RecordingSummary]) -> list[str]:
    return [summary.name for summary in summaries]


def test_lists_newest_first(store: Path) -> None:
    summaries = summarize_store(store)
    assert names(summaries) == ["new", "mid", "old"]
    assert [s.calls for s in summaries] == [3, 1, 2]
    assert all(s.path == store / f"{s.name}.jsonl" for s in summaries)


def test_files_without_a_created_at_sort_by_mtime_and_ties_by_name(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    write_recording(store / "dated.jsonl", created_at="2026-01-01T00:00:00Z")
    dated = summarize_store(store)[0].created_time
    for name in ("b", "a"):
        write_rows(store / f"{name}.jsonl", [header(created_at=None)], mtime=dated + 60)
    (store / "garbage.jsonl").write_bytes(b"garbage\n")
    os.utime(store / "garbage.jsonl", (dated - 60, dated - 60))
    assert names(summarize_store(store)) == ["a", "b", "dated", "garbage"]


def test_only_regular_jsonl_files_are_listed(store: Path, tmp_path: Path) -> None:
    (store / "notes.txt").write_text("x")
    (store / ".hidden.jsonl").write_bytes(encode_row(header()))
    (store / "link.jsonl").symlink_to(store / "old.jsonl")
    (store / "folder.jsonl").mkdir()
    assert names(summarize_store(store)) == ["new", "mid", "old"]


def test_a_missing_store_lists_nothing_and_creates_nothing(tmp_path: Path) -> None:
    assert summarize_store(tmp_path / "nowhere") == []
    assert not (tmp_path / "nowhere").exists()


def test_an_empty_store_writes_no_cache(tmp_path: Path) -> None:
    assert summarize_store(tmp_path) == []
    assert not (tmp_path / CACHE_FILE_NAME).exists()


def test_a_warm_cache_reads_no_recording(store: Path, reads: CountingSummaries) -> None:
    first = summarize_store(store)
    assert sorted(reads.read) == ["mid.jsonl", "new.jsonl", "old.jsonl"]
    reads.read.clear()
    assert summarize_store(store) == first
    assert reads.read == []


def test_the_cache_is_private_and_not_rewritten_when_nothing_changed(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summarize_store(store)
    cache = store / CACHE_FILE_NAME
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    saves: list[Path] = []
    monkeypatch.setattr(summary_cache, "save_summary_cache", lambda s, e: saves.append(s))
    summarize_store(store)
    assert saves == []


def test_a_changed_file_is_read_again(store: Path, reads: CountingSummaries) -> None:
    summarize_store(store)
    reads.read.clear()
    with (store / "old.jsonl").open("ab") as file:
        for row in call_rows(2, text_events("more")):
            file.write(encode_row(row))
    summaries = {s.name: s for s in summarize_store(store)}
    assert reads.read == ["old.jsonl"]
    assert summaries["old"].calls == 3
    reads.read.clear()
    summarize_store(store)
    assert reads.read == []


def test_a_touched_file_is_read_again(store: Path, reads: CountingSummaries) -> None:
    summarize_store(store)
    reads.read.clear()
    info = (store / "mid.jsonl").stat()
    os.utime(store / "mid.jsonl", ns=(info.st_atime_ns, info.st_mtime_ns + 1_000))
    summarize_store(store)
    assert reads.read == ["mid.jsonl"]


def test_vanished_files_are_dropped_from_the_cache(store: Path) -> None:
    summarize_store(store)
    (store / "mid.jsonl").unlink()
    assert names(summarize_store(store)) == ["new", "old"]
    assert sorted(Path(key).name for key in load_summary_cache(store)) == ["new.jsonl", "old.jsonl"]


@pytest.mark.parametrize(
    "content",
    [
        b"not json",
        b"[]",
        b'{"cache_version": 999, "entries": {}}',
        b'{"cache_version": 1, "format_version": 1, "entries": []}',
        b"",
    ],
)
def test_a_corrupt_cache_is_ignored_and_rebuilt(
    store: Path, reads: CountingSummaries, content: bytes
) -> None:
    (store / CACHE_FILE_NAME).write_bytes(content)
    assert names(summarize_store(store)) == ["new", "mid", "old"]
    assert len(reads.read) == 3
    assert len(load_summary_cache(store)) == 3


def test_a_bad_entry_is_read_again_alone(store: Path, reads: CountingSummaries) -> None:
    summarize_store(store)
    cache = store / CACHE_FILE_NAME
    document = orjson.loads(cache.read_bytes())
    document["entries"][str(store / "new.jsonl")]["summary"]["calls"] = "three"
    document["entries"][str(store / "old.jsonl")]["size"] = "big"
    cache.write_bytes(orjson.dumps(document))
    reads.read.clear()
    assert [s.calls for s in summarize_store(store)] == [3, 1, 2]
    assert sorted(reads.read) == ["new.jsonl", "old.jsonl"]


def test_a_cache_that_cannot_be_written_is_not_an_error(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    assert names(summarize_store(store)) == ["new", "mid", "old"]
    assert sorted(p.name for p in store.iterdir()) == ["mid.jsonl", "new.jsonl", "old.jsonl"]
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    assert names(summarize_store(store)) == ["new", "mid", "old"]


def test_a_cached_invalid_file_stays_invalid(store: Path, reads: CountingSummaries) -> None:
    (store / "broken.jsonl").write_bytes(b"garbage\n")
    first = {s.name: s for s in summarize_store(store)}
    reads.read.clear()
    second = {s.name: s for s in summarize_store(store)}
    assert reads.read == []
    assert second["broken"] == first["broken"]
    assert second["broken"].valid is False
    assert second["broken"].problem == first["broken"].problem


def test_the_cache_is_keyed_by_absolute_path(
    store: Path, monkeypatch: pytest.MonkeyPatch, reads: CountingSummaries
) -> None:
    monkeypatch.chdir(store.parent)
    summarize_store(Path("store"))
    assert all(Path(key).is_absolute() for key in load_summary_cache(store))
    reads.read.clear()
    summaries = summarize_store(store)
    assert reads.read == []
    assert all(s.path.is_absolute() for s in summaries)


def test_listing_works_where_the_kernel_cannot_read_ahead(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "posix_fadvise", raising=False)
    assert names(summarize_store(store)) == ["new", "mid", "old"]
