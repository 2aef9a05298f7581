"""The configured record mode refuses what ``exec --record`` refuses, at every process's start:
a recording in the store that is a symbolic link (dangling or not), a recording ``status``
calls INVALID — one line, nothing written, exit 1 — while a symlinked store (a documented
setup) is recorded into as exec records into it."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.errors import RecordReplayBlockedError
from openprogram.provider_boundary.codec import read_for_replay
from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple
from tests.support.cli_runner import error_line, next_start, openprogram
from tests.support.config_files import write_config
from tests.support.recording_rows import write_recording

RECORD_DEMO = '[record_replay]\nmode = "record"\nfile = "demo"\n'


def stored(name: str) -> Path:
    return recordings_dir() / f"{name}.jsonl"


def link_in_the_store(tmp_path: Path, *, dangling: bool) -> tuple[Path, bytes | None]:
    """``demo`` in the store, a link to a file in another folder (a recording of one call,
    or nothing there); that file and what it holds (None: it does not exist)."""
    outside = tmp_path / "outside" / "elsewhere.jsonl"
    outside.parent.mkdir()
    before = None
    if not dangling:
        write_recording("elsewhere", calls=1)
        stored("elsewhere").rename(outside)
        before = outside.read_bytes()
    recordings_dir().mkdir(parents=True, exist_ok=True)
    stored("demo").symlink_to(outside)
    return outside, before


@pytest.mark.parametrize("dangling", [True, False], ids=["dangling", "to-a-recording"])
def test_openprogram_run_never_records_through_a_link_in_the_store(
    tmp_path: Path, dangling: bool
) -> None:
    outside, before = link_in_the_store(tmp_path, dangling=dangling)
    write_config(RECORD_DEMO)

    result = openprogram("run", "hello")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert error_line(result).startswith(
        f"error: record/replay is blocked: {stored('demo')}: it is a symbolic link (to "
        f"{outside}), and openprogram writes into its store only, never through a link out "
        "of it; remove it, or record into another name"
    )
    assert stored("demo").is_symlink()
    if before is None:
        assert not outside.exists()  # no file made outside the store
    else:
        assert outside.read_bytes() == before  # nothing appended through the link


async def test_a_provider_call_is_refused_through_a_dangling_link(tmp_path: Path) -> None:
    outside, _ = link_in_the_store(tmp_path, dangling=True)
    write_config(RECORD_DEMO)

    hello = Context(messages=[UserMessage(content="hello")])
    with pytest.raises(RecordReplayBlockedError, match="it is a symbolic link"):
        await complete_simple(ECHO_MODEL, hello)
    assert not outside.exists()


def test_openprogram_run_never_appends_to_a_recording_status_calls_invalid() -> None:
    write_recording("demo", calls=1)
    damaged = stored("demo").read_bytes() + b"not json\n"
    stored("demo").write_bytes(damaged)
    write_config(RECORD_DEMO)
    assert "(INVALID)" in openprogram("recordings", "status").stdout

    result = openprogram("run", "hello")

    assert result.exit_code == 1
    line = error_line(result)
    last = damaged.count(b"\n")
    where = f"{stored('demo')}, line {last}"
    assert line.startswith(f"error: record/replay is blocked: {where}: not valid JSON")
    assert "calls appended to it could never be read: record into a new name" in line
    assert stored("demo").read_bytes() == damaged


def test_a_symlinked_store_is_recorded_into_as_exec_records_into_it(tmp_path: Path) -> None:
    elsewhere = tmp_path / "shared-recordings"
    elsewhere.mkdir()
    recordings_dir().parent.mkdir(parents=True, exist_ok=True)
    recordings_dir().symlink_to(elsewhere, target_is_directory=True)
    write_config(RECORD_DEMO)

    result = openprogram("run", "hello")

    assert result.exit_code == 0, result.stderr
    assert len(read_for_replay(elsewhere / "demo.jsonl").calls) == 1


def test_a_recording_that_holds_calls_is_still_appended_to() -> None:
    write_recording("demo", calls=1)
    write_config(RECORD_DEMO)

    result = openprogram("run", "hello")

    assert result.exit_code == 0, result.stderr
    next_start()
    assert len(read_for_replay(stored("demo")).calls) == 2
