"""``recordings list`` never drops a column: the table when it fits the width, two lines per
recording when it does not, an invalid file's problem shortened to one line."""

from __future__ import annotations

import json

import pytest

from openprogram.cli.recordings.list_layout import size_text
from openprogram.config.paths import recordings_dir
from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import short_hash, transcript_hash
from tests.support.cli_runner import run
from tests.support.recording_rows import write_corrupt_recording, write_recording

DEFAULT_NAMES = ("rec-20261130-105837", "rec-20261201-091500")
BROKEN = "rec-20261202-080000"


@pytest.fixture
def recordings() -> dict[str, str]:
    """Default-named recordings, one of them active, one truncated, one invalid; each
    mapped to its short hash."""
    write_recording(DEFAULT_NAMES[0], calls=2, created_at="2026-11-30T10:58:37Z")
    write_recording(DEFAULT_NAMES[1], calls=1, truncated=True, created_at="2026-12-01T09:15:00Z")
    write_corrupt_recording(recordings_dir() / f"{BROKEN}.jsonl")
    assert run("replay", DEFAULT_NAMES[0]).exit_code == 0
    return {
        name: short_hash(transcript_hash(read_recording(recordings_dir() / f"{name}.jsonl")))
        for name in DEFAULT_NAMES
    }


def listing(monkeypatch: pytest.MonkeyPatch, columns: int | None) -> list[str]:
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)  # piped, nothing said: 80
    else:
        monkeypatch.setenv("COLUMNS", str(columns))
    result = run("list")
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def lines_of(lines: list[str], name: str) -> str:
    """The lines about recording ``name``: its own, and the indented one after it."""
    [start] = [index for index, line in enumerate(lines) if name in line.split()]
    block = [lines[start]]
    if start + 1 < len(lines) and lines[start + 1].startswith("    "):
        block.append(lines[start + 1])
    return "\n".join(block)


@pytest.mark.parametrize("columns", [60, 80, 200, None], ids=["60", "80", "200", "piped"])
def test_every_field_of_every_recording_is_shown(
    monkeypatch: pytest.MonkeyPatch, recordings: dict[str, str], columns: int | None
) -> None:
    lines = listing(monkeypatch, columns)
    width = columns or 80

    assert all(len(line) <= width for line in lines), "\n".join(lines)
    active, cut = (lines_of(lines, name) for name in DEFAULT_NAMES)
    broken = lines_of(lines, BROKEN)
    for block, hash_, state, calls, created in (
        (active, recordings[DEFAULT_NAMES[0]], "valid", "2", "2026-11-30 10:58:37"),
        (cut, recordings[DEFAULT_NAMES[1]], "truncated", "1", "2026-12-01 09:15:00"),
    ):
        assert hash_ in block
        assert f" {state} " in f" {block} "
        assert created in block
        assert "fake:m1" in block
        assert calls in block.split() or f"{calls} call" in block
        size = (
            recordings_dir() / f"{block.split()[1 if block.startswith('*') else 0]}.jsonl"
        ).stat()
        assert size_text(size.st_size) in block
    assert active.startswith("*")
    assert not cut.startswith("*")
    assert "INVALID: line 3: not valid" in broken


def test_at_200_columns_it_is_one_table(
    monkeypatch: pytest.MonkeyPatch, recordings: dict[str, str]
) -> None:
    lines = listing(monkeypatch, 200)

    assert lines[0].split() == ["name", "created", "calls", "size", "models", "state", "hash"]
    assert len(lines) == 4
    assert "INVALID: line 3: not valid JSON (unexpected character" in "\n".join(lines)


@pytest.mark.parametrize("columns", [60, 80, None], ids=["60", "80", "piped"])
def test_when_the_table_does_not_fit_each_recording_takes_two_lines(
    monkeypatch: pytest.MonkeyPatch, recordings: dict[str, str], columns: int | None
) -> None:
    lines = listing(monkeypatch, columns)

    assert len(lines) == 6
    first, second = lines_of(lines, DEFAULT_NAMES[0]).splitlines()
    assert first == f"* {DEFAULT_NAMES[0]}  valid  {recordings[DEFAULT_NAMES[0]]}"
    size = size_text((recordings_dir() / f"{DEFAULT_NAMES[0]}.jsonl").stat().st_size)
    assert second == f"    created 2026-11-30 10:58:37 · 2 calls · {size} · fake:m1"
    broken = next(line for line in lines if BROKEN in line)
    assert broken.startswith(f"  {BROKEN}  INVALID: line 3: ")
    # shortened to the width, never wrapped (how long the problem is depends on the JSON
    # parser's wording, which differs between orjson versions)
    [problem] = [
        entry["problem"]
        for entry in json.loads(run("list", "--json").stdout)
        if entry["name"] == BROKEN
    ]
    whole_line = f"  {BROKEN}  INVALID: {problem}"
    assert len(broken) <= (columns or 80)
    if len(whole_line) <= (columns or 80):
        assert broken == whole_line
    else:
        assert broken.endswith("…")
        assert whole_line.startswith(broken[:-1])


def test_a_long_problem_is_shortened_in_the_table(monkeypatch: pytest.MonkeyPatch) -> None:
    write_recording("a", calls=1)
    write_corrupt_recording(recordings_dir() / "b.jsonl")

    lines = listing(monkeypatch, 100)

    assert lines[0].split()[0] == "name"
    [broken] = [line for line in lines if line.split()[0] == "b"]
    assert "INVALID: line 3:" in broken
    assert broken.rstrip().endswith("…")
    assert len(lines) == 3
