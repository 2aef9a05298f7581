"""``openprogram recordings record NAME --seed N --clock-start MS --clock-step MS``: the
deterministic sources are kept in the configuration with the recording, for the next start
(every process then records with them, in UTC), shown by ``status``, cleared by the next
``record`` that gives none, kept by ``off`` and by ``replay`` of that recording, removed by
``replay`` of another; a bad value is one line and exit 2, and changes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.config.settings import read_settings
from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.child_processes import python_process
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file, write_config
from tests.support.seeded_session import PROGRAM, START_MS, ZONES

ROOT = Path(__file__).resolve().parents[2]


def sources() -> tuple[int | None, int | None, int | None]:
    settings = read_settings().record_replay
    return settings.seed, settings.clock_start, settings.clock_step


def test_record_keeps_the_sources_in_the_configuration_and_status_shows_them() -> None:
    result = run("record", "seeded", "--seed", "99", "--clock-start", "2025-07-03T00:00:00Z")
    assert result.exit_code == 0, result.stderr
    assert sources() == (99, START_MS, 1000)
    assert (
        "It draws openprogram.now() and random() from seed 99 and a clock from "
        "2025-07-03T00:00:00Z, 1000 ms a reading (and runs in UTC)." in result.stdout
    )
    assert "clock_start = 1751500800000\n" in config_file().read_text()

    status = run("status")
    assert status.exit_code == 0, status.stderr
    assert (
        "note:    openprogram.now() and random() draw from seed 99 and a clock from "
        "2025-07-03T00:00:00Z, 1000 ms a reading while recording; processes run in UTC"
    ) in status.stdout


def test_record_json_says_the_sources() -> None:
    result = run("record", "seeded", "--clock-start", "0", "--clock-step", "0", "--json")
    assert result.exit_code == 0, result.stderr
    change = json.loads(result.stdout)
    assert change["sources"] == {"clock_start": 0, "clock_step": 0}
    assert change["sources_removed"] == []


def test_the_sources_stay_with_their_recording() -> None:
    assert run("record", "seeded", "--seed", "7").exit_code == 0
    assert run("off").exit_code == 0
    assert sources() == (7, None, None)  # off keeps the file, and its sources with it
    assert (
        "note:    record_replay.file keeps its sources (seed 7): `openprogram recordings "
        "replay seeded` uses them again, a `record` of another name clears them"
    ) in run("status").stdout
    assert run("replay", "seeded").exit_code == 0
    assert sources() == (7, None, None)  # its own replay: the zone it was recorded in

    other = recordings_dir() / "other.jsonl"
    other.write_bytes((recordings_dir() / "seeded.jsonl").read_bytes())
    moved = run("replay", "other")
    assert moved.exit_code == 0, moved.stderr
    assert sources() == (None, None, None)
    assert "note: removed record_replay.seed = 7: they drove the recording configured before\n" in (
        moved.stderr
    )

    assert run("record", "third", "--seed", "8").exit_code == 0
    cleared = run("record", "fourth")
    assert cleared.exit_code == 0
    assert sources() == (None, None, None)  # a record that gives none: the real ones
    assert "note: removed record_replay.seed = 8" in cleared.stderr


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (("--seed", "-2"), "error: --seed: a seed is a whole number from 0 to"),
        (("--clock-step", "5"), "error: --clock-step needs --clock-start"),
        (("--clock-start", "July"), "error: --clock-start: 'July' is not a time"),
    ],
)
def test_a_bad_value_changes_nothing(options: tuple[str, ...], error: str) -> None:
    assert run("record", "first").exit_code == 0
    before = config_file().read_bytes()
    result = run("record", "seeded", *options)
    assert result.exit_code == 2
    assert error_line(result).startswith(error)
    assert config_file().read_bytes() == before
    assert not (recordings_dir() / "seeded.jsonl").exists()


def test_a_source_the_configuration_cannot_hold_is_named_by_status() -> None:
    write_config('[record_replay]\nmode = "off"\nclock_step = 10\n')
    status = run("status")
    assert status.exit_code == 1
    assert "record_replay.clock_step: needs clock_start: the time the clock reads first" in (
        status.stdout
    )
    write_config('[record_replay]\nmode = "off"\nseed = -1\n')
    status = run("status")
    assert status.exit_code == 1
    assert "record_replay.seed: a seed is a whole number from 0 to" in status.stdout


def test_every_process_started_records_with_them_in_utc(tmp_path: Path) -> None:
    """The configured mode at the next start: the same session run plainly in two time zones,
    each recorded into a recording of its own made with the same sources, hashes alike."""
    hashes = []
    for name, zone in zip(("tokyo", "new-york"), ZONES, strict=True):
        assert run("record", name, "--seed", "99", "--clock-start", str(START_MS)).exit_code == 0
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TZ": zone}  # OPENPROGRAM_HOME: the test's
        result = python_process(PROGRAM, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("echo:at 2025-07-03 00:00:00 drew ")
        hashes.append(transcript_hash(read_recording(recordings_dir() / f"{name}.jsonl")))
    assert hashes[0] == hashes[1]


def test_the_keys_are_written_into_the_table_as_it_is_written() -> None:
    write_config(
        '# mine\n[record_replay]\nmode = "off"  # for now\n\n'
        '[record_replay.tools]\n"*" = "replay"\n\n[providers.echo]\ntimeout = 5\n'
    )
    assert run("record", "seeded", "--seed", "3", "--clock-start", "10").exit_code == 0
    assert config_file().read_text() == (
        '# mine\n[record_replay]\nmode = "record"  # for now\nfile = "seeded"\n'
        "seed = 3\nclock_start = 10\nclock_step = 1000\n\n"
        '[record_replay.tools]\n"*" = "replay"\n\n[providers.echo]\ntimeout = 5\n'
    )
    assert run("record", "plain").exit_code == 0
    assert config_file().read_text() == (
        '# mine\n[record_replay]\nmode = "record"  # for now\nfile = "plain"\n\n'
        '[record_replay.tools]\n"*" = "replay"\n\n[providers.echo]\ntimeout = 5\n'
    )
