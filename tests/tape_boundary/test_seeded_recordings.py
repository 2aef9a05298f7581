"""``record_replay(seed=..., clock=...)``: a session whose output carries the time and random
draws, recorded twice with the same seed and clock — in other folders and time zones — hashes
alike; another seed hashes otherwise; replay serves the recorded values, whatever seed and
clock it is given; a clock runs the block in UTC, and only the block."""

from __future__ import annotations

import os
import time
from datetime import datetime
from pathlib import Path

import pytest

import openprogram
from openprogram.errors import ClockExhaustedError
from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.seeded_session import START_MS, ZONES, local_zone, run_session


def record(path: Path, zone: str, **sources: object) -> tuple[str, str]:
    """The session recorded into ``path`` in time zone ``zone``: what it said, and the
    recording's transcript hash."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with local_zone(zone), openprogram.record_replay(path, **sources):
        said = run_session()
    return said, transcript_hash(read_recording(path))


def test_the_same_seed_and_clock_hash_alike_in_other_folders_and_zones(tmp_path: Path) -> None:
    clock = openprogram.stepping_clock(START_MS, 1000)
    said, digest = record(tmp_path / "a" / "run.jsonl", ZONES[0], seed=99, clock=clock)
    again, other = record(tmp_path / "b" / "c" / "run.jsonl", ZONES[1], seed=99, clock=clock)
    assert said == again
    assert said.startswith("echo:at 2025-07-03 00:00:00 drew ")  # UTC, in both zones
    assert digest == other


def test_another_seed_hashes_otherwise(tmp_path: Path) -> None:
    clock = openprogram.stepping_clock(START_MS)
    said, digest = record(tmp_path / "a.jsonl", ZONES[0], seed=1, clock=clock)
    again, other = record(tmp_path / "b.jsonl", ZONES[0], seed=2, clock=clock)
    assert said != again
    assert digest != other


def test_another_clock_hashes_otherwise(tmp_path: Path) -> None:
    later = openprogram.stepping_clock(START_MS + 60_000)
    said, digest = record(
        tmp_path / "a.jsonl", ZONES[0], seed=1, clock=openprogram.stepping_clock(START_MS)
    )
    again, other = record(tmp_path / "b.jsonl", ZONES[0], seed=1, clock=later)
    assert (said[:27], again[:27]) == ("echo:at 2025-07-03 00:00:00", "echo:at 2025-07-03 00:01:00")
    assert digest != other


def test_without_sources_two_recordings_differ(tmp_path: Path) -> None:
    _, digest = record(tmp_path / "a.jsonl", ZONES[0])
    _, other = record(tmp_path / "b.jsonl", ZONES[0])
    assert digest != other  # the draws differ (and the times may)


def test_a_recording_reads_its_clock_from_the_start(tmp_path: Path) -> None:
    """A clock is a description: two recordings given the same one both read it from its
    start, so they hash alike (a running counter would go on where the first stopped)."""
    clock = openprogram.stepping_clock(START_MS, 60_000)
    times = []
    for name in ("a", "b"):
        with openprogram.record_replay(tmp_path / f"{name}.jsonl", clock=clock):
            times.append([openprogram.now(), openprogram.now()])
    assert times == [[START_MS / 1000, START_MS / 1000 + 60]] * 2


def test_replay_serves_the_recorded_values_whatever_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    said, _ = record(path, ZONES[0], seed=5, clock=openprogram.stepping_clock(START_MS))
    for sources in ({}, {"seed": 6, "clock": openprogram.stepping_clock(0, 0)}):
        with (
            local_zone("UTC"),
            openprogram.record_replay(path, mode="replay", **sources) as active,
        ):
            assert run_session() == said
        assert active.session is not None
        assert active.session.calls_consumed == 1


def test_a_clock_runs_the_block_in_utc_at_record_and_replay(tmp_path: Path) -> None:
    """A time shown in the local zone replays where the clock is given again, in any zone;
    outside the block the process keeps its own zone."""
    path = tmp_path / "run.jsonl"
    clock = openprogram.stepping_clock(START_MS)
    said, _ = record(path, ZONES[0], clock=clock)
    with local_zone(ZONES[1]):
        with openprogram.record_replay(path, mode="replay", clock=clock):
            assert os.environ["TZ"] == "UTC"
            assert run_session() == said
        assert os.environ["TZ"] == ZONES[1]
        assert time.localtime(0).tm_hour == 19  # EST+5: 1969-12-31 19:00


def test_a_sequence_clock_reads_its_times_then_refuses(tmp_path: Path) -> None:
    times = [START_MS, START_MS + 1500]
    with (
        pytest.raises(ClockExhaustedError, match="read 2 times and has no time left"),
        openprogram.record_replay(tmp_path / "run.jsonl", clock=openprogram.sequence_clock(times)),
    ):
        assert [openprogram.now(), openprogram.now()] == [START_MS / 1000, START_MS / 1000 + 1.5]
        openprogram.now()


def test_the_seed_drives_random_and_the_seeds_of_seeded_random(tmp_path: Path) -> None:
    def draws(name: str, seed: int) -> list[float]:
        with openprogram.record_replay(tmp_path / f"{name}.jsonl", seed=seed):
            return [openprogram.random(), openprogram.seeded_random().random()]

    assert draws("a", 7) == draws("b", 7)
    assert draws("c", 7) != draws("d", 8)
    assert openprogram.seeded_random(7).random() == openprogram.seeded_random(7).random()
    assert openprogram.seeded_random(7).random() != openprogram.seeded_random(8).random()


@pytest.mark.parametrize(
    ("sources", "message"),
    [
        ({"seed": -1}, "a seed is a whole number from 0 to"),
        ({"seed": True}, "a seed is a whole number"),
        ({"seed": 2**63}, "a seed is a whole number"),
        ({"clock": 1_751_500_800_000}, "a clock is stepping_clock"),
    ],
)
def test_bad_sources_are_refused_before_anything_is_written(
    tmp_path: Path, sources: dict[str, object], message: str
) -> None:
    path = tmp_path / "run.jsonl"
    with pytest.raises(ValueError, match=message), openprogram.record_replay(path, **sources):
        pass
    assert not path.exists()


def test_outside_record_the_helpers_are_the_real_clock_and_randomness() -> None:
    before = time.time()
    assert before <= openprogram.now() <= time.time()
    assert datetime.fromtimestamp(openprogram.now()).year >= 2025
    assert openprogram.random() != openprogram.random()
