"""``openprogram exec --record NAME --seed N --clock-start MS --clock-step MS``: a program whose
output carries the time (shown in the local zone) and random draws, recorded in two stores
and two time zones, hashes alike; another seed hashes otherwise; the recording replays in a
third zone given the clock again; bad values are one line and exit 2, before anything runs."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openprogram.provider_boundary.codec import read_recording
from openprogram.store.hashing import transcript_hash
from tests.support.child_processes import openprogram_process, user_environment
from tests.support.seeded_session import PROGRAM, START_MS, ZONES

ROOT = Path(__file__).resolve().parents[2]


def environment(home: Path, zone: str) -> dict[str, str]:
    env = user_environment(home)
    env["PYTHONPATH"] = str(ROOT)  # the program imports tests.support.seeded_session
    env["TZ"] = zone
    return env


def exec_seeded(home: Path, zone: str, *options: str) -> tuple[str, str]:
    """``exec`` the session with ``options`` in a store of its own: what it printed, and the
    transcript hash of the recording ``seeded`` (for a recording one)."""
    home.parent.mkdir(parents=True, exist_ok=True)
    program = home.parent / "program.py"
    program.write_text(PROGRAM)
    result = openprogram_process(
        "exec", *options, "--", sys.executable, str(program), env=environment(home, zone)
    )
    assert result.returncode == 0, result.stderr
    recording = home / "recordings" / "seeded.jsonl"
    return result.stdout, transcript_hash(read_recording(recording))


CLOCK = ("--clock-start", "2025-07-03T00:00:00Z", "--clock-step", "1000")


def test_two_seeded_recordings_in_other_stores_and_zones_hash_alike(tmp_path: Path) -> None:
    said, digest = exec_seeded(
        tmp_path / "a" / "home", ZONES[0], "--record", "seeded", "--seed", "99", *CLOCK
    )
    again, other = exec_seeded(
        tmp_path / "b" / "home",
        ZONES[1],
        "--record",
        "seeded",
        "--seed",
        "99",
        "--clock-start",
        str(START_MS),  # the same instant, in milliseconds; the step by default
    )
    assert said == again
    assert said.startswith("echo:at 2025-07-03 00:00:00 drew ")  # UTC, in both zones
    assert digest == other

    changed, third = exec_seeded(
        tmp_path / "c" / "home", ZONES[0], "--record", "seeded", "--seed", "100", *CLOCK
    )
    assert changed != said
    assert third != digest

    # Replayed in a third zone, the clock given again: the recorded time, shown in UTC.
    replayed, _ = exec_seeded(tmp_path / "a" / "home", "UTC+3", "--replay", "seeded", *CLOCK)
    assert replayed == said


def test_a_replay_without_the_clock_shows_the_time_in_its_own_zone(tmp_path: Path) -> None:
    """The clock's zone is given at replay as at record: without it, a time shown in the
    local zone is shown in the replaying machine's, and the replay names the difference."""
    home = tmp_path / "home"
    exec_seeded(home, ZONES[0], "--record", "seeded", "--seed", "1", *CLOCK)
    result = openprogram_process(
        "exec",
        "--replay",
        "seeded",
        "--",
        sys.executable,
        str(tmp_path / "program.py"),
        env=environment(home, ZONES[1]),
    )
    assert result.returncode == 1
    assert "field context.messages[0].content:" in result.stderr
    assert "incoming 'at 2025-07-02 19:00:00 drew" in result.stderr


@pytest.mark.parametrize(
    ("options", "error"),
    [
        (
            ("--seed", "-1"),
            "error: --seed: a seed is a whole number from 0 to 9223372036854775807, not -1",
        ),
        (
            ("--clock-start", "2025-07-03T00:00:00"),
            "error: --clock-start: '2025-07-03T00:00:00' has no zone, so it names no one "
            "instant: write milliseconds since 1970-01-01T00:00:00Z (1751500800000) or a time "
            "with its zone (2025-07-03T00:00:00Z)",
        ),
        (
            ("--clock-step", "5"),
            "error: --clock-step needs --clock-start: the time the clock reads first",
        ),
        (
            ("--clock-start", "0", "--clock-step", "-5"),
            "error: --clock-step: a step is whole milliseconds from 0 to 253402300799999 "
            "(9999-12-31T23:59:59.999Z), not -5",
        ),
    ],
)
def test_a_bad_value_is_one_line_and_nothing_runs(
    tmp_path: Path, options: tuple[str, ...], error: str
) -> None:
    marker = tmp_path / "ran"
    result = openprogram_process(
        "exec",
        "--record",
        "seeded",
        *options,
        "--",
        sys.executable,
        "-c",
        f"open({str(marker)!r}, 'w')",
        env=environment(tmp_path / "home", "UTC"),
    )
    assert (result.returncode, result.stderr) == (2, error + "\n")
    assert not marker.exists()
    assert not (tmp_path / "home" / "recordings").exists()


def test_the_sources_go_with_a_recording(tmp_path: Path) -> None:
    result = openprogram_process(
        "exec",
        "--seed",
        "3",
        "--",
        sys.executable,
        "-c",
        "pass",
        env=environment(tmp_path / "home", "UTC"),
    )
    assert result.returncode == 2
    assert result.stderr == (
        "error: --seed, --clock-start and --clock-step go with --record NAME (or --replay "
        "NAME): they drive the clock and randomness of the recording the command makes\n"
    )
