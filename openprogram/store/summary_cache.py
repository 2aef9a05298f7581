"""Every recording in a store, summarized, through a cache kept in the store.

:func:`summarize_store` is what ``openprogram recordings list`` shows; it reads only the files that
changed since it last looked. ``<store>/.summary-cache.json`` (``0600``) maps each recording's
absolute path to the size and ``mtime_ns`` it had when it was summarized, and the summary's fields.
The cache only saves work: one that is missing, unreadable, corrupt or written for another format or
another version of the transcript hash is ignored and rebuilt (a cached hash is never shown once the
hash has changed), and one that cannot be written (a read-only store) is not an error."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from openprogram.private_files import PRIVATE_FILE_MODE, replace_file
from openprogram.recording.call_digest import TRANSCRIPT_HASH_VERSION
from openprogram.recording.format import RECORDING_FORMAT_VERSION
from openprogram.store import summary
from openprogram.store.names import recording_files, resolve_store
from openprogram.store.summary import RecordingSummary

__all__ = [
    "CACHE_FILE_NAME",
    "CacheEntry",
    "load_summary_cache",
    "save_summary_cache",
    "summarize_store",
]

CACHE_FILE_NAME = ".summary-cache.json"
CACHE_VERSION = 3
"""Bumped when the summary fields or their meaning change; an older cache is rebuilt."""
READ_AHEAD = 2
"""While one file is scanned, the kernel reads the next few (a listing with a cold cache)."""


@dataclass(frozen=True, slots=True)
class CacheEntry:
    """A summary (as its JSON fields) and the file size and mtime it was made from."""

    size: int
    mtime_ns: int
    summary: dict[str, Any]

    def matches(self, info: os.stat_result) -> bool:
        return self.size == info.st_size and self.mtime_ns == info.st_mtime_ns


def summarize_store(
    store: Path, files: list[tuple[Path, os.stat_result]] | None = None
) -> list[RecordingSummary]:
    """Every recording in ``store``, newest first (by ``created_at``, else mtime; then name).

    Paths are inside the resolved store folder (see
    :func:`~openprogram.store.names.resolve_store`). Files whose size and mtime match
    the summary cache are not read; the cache is rewritten (atomically, ``0600``) only when
    an entry was added, changed or dropped. ``files`` are the store's
    :func:`~openprogram.store.names.recording_files`, when the caller has read them already."""
    store = resolve_store(store)
    if files is None:
        files = recording_files(store)
    cache = load_summary_cache(store)
    entries: dict[str, CacheEntry] = {}
    summaries: list[RecordingSummary] = []
    stale: list[tuple[Path, os.stat_result]] = []
    for path, info in files:
        cached = _cached_summary(cache.get(str(path)), info, path)
        if cached is None:
            stale.append((path, info))
        else:
            entries[str(path)] = cache[str(path)]
            summaries.append(cached)
    for path, _ in stale[:READ_AHEAD]:
        _read_ahead(path)
    for position, (path, info) in enumerate(stale):
        if position + READ_AHEAD < len(stale):
            _read_ahead(stale[position + READ_AHEAD][0])
        fresh = summary.summarize_recording(path)  # looked up here, so tests can count reads
        entries[str(path)] = CacheEntry(info.st_size, info.st_mtime_ns, fresh.to_json())
        summaries.append(fresh)
    if stale or entries.keys() != cache.keys():
        save_summary_cache(store, entries)
    summaries.sort(key=lambda item: (-item.created_time, item.name))
    return summaries


def _read_ahead(path: Path) -> None:
    """Ask the kernel to start reading ``path`` into the page cache while we scan another."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return
    try:
        advise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
    except OSError:
        pass
    finally:
        os.close(fd)


def _cached_summary(
    entry: CacheEntry | None, info: os.stat_result, path: Path
) -> RecordingSummary | None:
    if entry is None or not entry.matches(info):
        return None
    try:
        return RecordingSummary.from_json(entry.summary, path)
    except ValueError:
        return None


def load_summary_cache(store: Path) -> dict[str, CacheEntry]:
    """The cached entries by absolute path; empty when there is no usable cache."""
    try:
        document = orjson.loads((store / CACHE_FILE_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if (
        not isinstance(document, dict)
        or document.get("cache_version") != CACHE_VERSION
        or document.get("format_version") != RECORDING_FORMAT_VERSION
        or document.get("transcript_hash_version") != TRANSCRIPT_HASH_VERSION
        or not isinstance(document.get("entries"), dict)
    ):
        return {}
    entries: dict[str, CacheEntry] = {}
    for path, raw in document["entries"].items():
        if (
            isinstance(raw, dict)
            and type(raw.get("size")) is int
            and type(raw.get("mtime_ns")) is int
            and isinstance(raw.get("summary"), dict)
        ):
            entries[path] = CacheEntry(raw["size"], raw["mtime_ns"], raw["summary"])
    return entries


def save_summary_cache(store: Path, entries: dict[str, CacheEntry]) -> bool:
    """Replace the cache atomically (temp file in the store, fsync, rename), ``0600``.

    Returns False, leaving no temp file behind, when the store cannot be written."""
    document = {
        "cache_version": CACHE_VERSION,
        "format_version": RECORDING_FORMAT_VERSION,
        "transcript_hash_version": TRANSCRIPT_HASH_VERSION,
        "entries": {
            path: {"size": entry.size, "mtime_ns": entry.mtime_ns, "summary": entry.summary}
            for path, entry in entries.items()
        },
    }
    try:
        data = orjson.dumps(document)
        replace_file(store / CACHE_FILE_NAME, data, mode=PRIVATE_FILE_MODE)
    except (OSError, orjson.JSONEncodeError):
        return False
    return True
