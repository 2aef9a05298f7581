"""Format version 2: the version says what changed, as the first seed's rule asks.

Version 2 changed what rows mean (a request stored against a ``base``, HTTP calls, the
``raw`` text replay serves), so every file this openprogram writes says 2, and a reader that
knows only version 1 — written to the seed: the version compared for equality, header
metadata it does not know ignored — refuses it instead of misreading it. Files of version 1
(those written by hand, and those an openprogram from before the change wrote, with the same
changed rows announced only as header features) still read as they did, with the same
transcript hash: the hash is taken over content, never over the header.

``data/version_one_session.jsonl`` is :func:`write_changed_rows_session`'s file as the
openprogram of commit 8418cac (the one before the change) wrote it, with that openprogram's
transcript hash of it below.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.call_digest import deterministic_part
from openprogram.recording.format import RECORDING_FORMAT_VERSION
from openprogram.recording.rewriting import rewrite_recording
from openprogram.recording.writer import forget_writer
from openprogram.store.hashing import transcript_hash
from openprogram.store.status import check_record_target
from openprogram.store.summary import summarize_recording
from tests.support.changed_rows_session import write_changed_rows_session
from tests.support.cli_runner import run
from tests.support.recording_rows import call_end, write_rows

VERSION_ONE = Path(__file__).parent / "data" / "version_one_session.jsonl"
VERSION_ONE_HASH = "12a4a052845bae9ff8fea628fe9c4094727730174fcac0abcffea27187a461d2"
"""The transcript hash the openprogram of commit 8418cac gave the file."""


class SeedReaderRefusal(Exception):
    """What the seed's reader raises for a file of another version."""


def seed_reader(path: Path) -> dict[int, dict[str, Any]]:
    """A reader written to the first seed, which knows format_version 1: it compares the
    header's ``format_version`` for equality and refuses any other, ignores header metadata
    it does not know, and reads ``request`` rows by their ``model``, ``context`` and
    ``options``, ``event`` rows by their ``event`` (rows of other types it skips)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    header = rows[0]
    if header["format_version"] != 1:
        raise SeedReaderRefusal(
            f"format_version {header['format_version']!r}, but this reader reads 1"
        )
    calls: dict[int, dict[str, Any]] = {}
    for row in rows[1:]:
        if row["type"] == "request":
            sections = {name: row.get(name) for name in ("model", "context", "options")}
            calls[row["call_index"]] = {**sections, "events": []}
        elif row["type"] == "event":
            calls[row["call_index"]]["events"].append(row["event"])
    return calls


@pytest.fixture
def today(tmp_path: Path) -> Path:
    """The session of ``data/version_one_session.jsonl``, written by this openprogram."""
    path = tmp_path / "today.jsonl"
    write_changed_rows_session(path)
    forget_writer(path)
    return path


def test_new_files_say_version_2() -> None:
    assert RECORDING_FORMAT_VERSION == 2


def test_the_seeds_reader_misreads_a_version_1_file_holding_the_changed_rows() -> None:
    # Why the version had to change: the file says 1, and a reader of version 1 reads call
    # 1's conversation as the two messages its row adds to call 0's.
    assert seed_reader(VERSION_ONE)[1]["context"]["messages"][0]["role"] == "assistant"
    assert len(seed_reader(VERSION_ONE)[1]["context"]["messages"]) == 2
    assert len(read_recording(VERSION_ONE).calls[1].request["context"]["messages"]) == 3


def test_the_seeds_reader_refuses_what_this_openprogram_writes(today: Path) -> None:
    with pytest.raises(SeedReaderRefusal, match="format_version 2, but this reader reads 1"):
        seed_reader(today)


def test_the_seeds_reader_refuses_a_rewritten_version_1_file(tmp_path: Path) -> None:
    # A rewrite (scan --fix, a merged re-recording) writes requests against a base.
    path = Path(shutil.copy(VERSION_ONE, tmp_path / "rewritten.jsonl"))
    recording = read_recording(path)
    rewrite_recording(path, recording.header, recording.calls, tapes=recording.tapes)
    rewritten = read_recording(path)
    assert rewritten.format_version == 2
    assert transcript_hash(rewritten) == VERSION_ONE_HASH
    with pytest.raises(SeedReaderRefusal):
        seed_reader(path)


def test_the_version_1_file_made_before_the_change_reads_and_hashes_as_it_did() -> None:
    recording = read_recording(VERSION_ONE)
    assert recording.format_version == 1
    assert [call.boundary for call in recording.calls] == ["provider"] * 2 + ["http"] * 2
    assert [len(call.request["context"]["messages"]) for call in recording.calls[:2]] == [1, 3]
    assert len(recording.calls[3].request["body"]["messages"]) == 3
    assert recording.calls[2].event_rows[1]["raw"].startswith('data: {"id": "chatcmpl-Bx7", ')
    assert transcript_hash(recording) == VERSION_ONE_HASH
    summary = summarize_recording(VERSION_ONE)
    assert (summary.valid, summary.format_version) == (True, 1)
    assert summary.transcript_hash == VERSION_ONE_HASH


def test_the_same_session_today_is_the_same_content_under_version_2(today: Path) -> None:
    before, now = read_recording(VERSION_ONE), read_recording(today)
    assert now.format_version == 2
    assert now.header["features"] == before.header["features"]
    # Alike but for the times the echo provider stamped its replies with.
    requests = [[deterministic_part(call.request) for call in r.calls] for r in (now, before)]
    assert requests[0] == requests[1]
    assert transcript_hash(now) == VERSION_ONE_HASH
    assert summarize_recording(today).transcript_hash == VERSION_ONE_HASH
    result = run("diff", str(VERSION_ONE), str(today))
    assert result.exit_code == 0, result.output


def test_a_version_1_file_written_by_hand_reads(tmp_path: Path) -> None:
    request = {"model": {"id": "m1", "api": "fake"}, "context": {"messages": []}, "options": {}}
    path = write_rows(
        tmp_path / "by-hand.jsonl",
        [
            {"type": "header", "format_version": 1, "made_by": "hand"},
            {"type": "request", "call_index": 0, **request},
            {"type": "event", "call_index": 0, "event_index": 0, "event": {"type": "start"}},
            call_end(0, 1),
        ],
    )
    recording = read_recording(path, validate_events=False)
    assert (recording.format_version, len(recording.calls)) == (1, 1)
    assert recording.calls[0].request == request
    assert seed_reader(path)[0]["events"] == [{"type": "start"}]


def test_list_json_says_each_files_own_version(today: Path) -> None:
    recordings_dir().mkdir(parents=True)
    shutil.copy(VERSION_ONE, recordings_dir() / "before.jsonl")
    shutil.copy(today, recordings_dir() / "today.jsonl")
    result = run("list", "--json")
    assert result.exit_code == 0, result.output
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert listed["before"]["format_version"] == 1
    assert listed["today"]["format_version"] == 2
    assert listed["before"]["transcript_hash"] == listed["today"]["transcript_hash"]


def test_recording_into_a_version_1_file_is_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recordings_dir().mkdir(parents=True)
    path = Path(shutil.copy(VERSION_ONE, recordings_dir() / "old.jsonl"))
    before = path.read_bytes()
    refusal = (
        f"{path}, line 1: cannot append to a recording of format_version 1 (this openprogram "
        "writes format_version 2); re-record the session into a new file, or start a new "
        "recording"
    )
    with pytest.raises(RecordingFileError) as refused:
        check_record_target(path, "old")  # what exec --record and the configured mode ask
    assert str(refused.value) == refusal
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "record")
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__FILE", "old")
    status = run("status")
    assert status.exit_code == 1
    assert f"problem: {refusal}" in status.stdout
    assert path.read_bytes() == before
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "replay")
    assert "(valid, 4 calls, format 1)" in run("status").stdout


def test_an_imported_cassette_says_version_2(tmp_path: Path) -> None:
    interaction = {
        "request": {"method": "GET", "uri": "http://example.test/", "headers": {}, "body": None},
        "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "hi"}},
    }
    cassette = tmp_path / "c.json"
    cassette.write_text(json.dumps({"version": 1, "interactions": [interaction]}))
    result = run("import", str(cassette), "--into", str(tmp_path / "out"))
    assert result.exit_code == 0, result.output
    recording = read_recording(tmp_path / "out" / "c.jsonl")
    assert recording.format_version == 2
    with pytest.raises(SeedReaderRefusal):
        seed_reader(tmp_path / "out" / "c.jsonl")
