"""A summary cache written under another version of the transcript hash is not trusted: the
hashes it holds are not what ``list`` would print now."""

from __future__ import annotations

from pathlib import Path

import orjson

from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.call_digest import TRANSCRIPT_HASH_VERSION
from openprogram.store.hashing import transcript_hash
from openprogram.store.summary_cache import CACHE_FILE_NAME, summarize_store
from tests.support.recording_rows import write_recording

OLD_HASH = "0" * 64


def test_a_cache_of_an_earlier_hash_version_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir(mode=0o700)
    path = write_recording(store / "session.jsonl", calls=2)
    summarize_store(store)
    cache = store / CACHE_FILE_NAME
    document = orjson.loads(cache.read_bytes())
    assert document["transcript_hash_version"] == TRANSCRIPT_HASH_VERSION
    for older in ({"transcript_hash_version": TRANSCRIPT_HASH_VERSION - 1}, {}):
        document.pop("transcript_hash_version", None)
        document.update(older)
        for entry in document["entries"].values():
            entry["summary"]["transcript_hash"] = OLD_HASH
        cache.write_bytes(orjson.dumps(document))

        (summary,) = summarize_store(store)

        assert summary.transcript_hash == transcript_hash(read_recording(path))
        document = orjson.loads(cache.read_bytes())
