"""The deterministic sources' values: seeds and times checked by one rule, the command line's
times (milliseconds, or ISO 8601 with a zone), the clocks as descriptions read from their
start, their JSON form (what exec hands its processes), and the draws of one recording."""

from __future__ import annotations

import random
import threading

import pytest

from openprogram.deterministic_sources import (
    MAX_SEED,
    MAX_TIME_MS,
    RecordingSources,
    SequenceClock,
    SteppingClock,
    format_time_ms,
    parse_time_ms,
    sequence_clock,
    sources_of_options,
    stepping_clock,
)
from openprogram.errors import ClockExhaustedError

START = 1_751_500_800_000  # 2025-07-03T00:00:00Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1751500800000", START),
        ("2025-07-03T00:00:00Z", START),
        ("2025-07-03T09:00:00+09:00", START),
        ("2025-07-03T00:00:00.250Z", START + 250),
        ("0", 0),
        ("9999-12-31T23:59:59.999Z", MAX_TIME_MS),
    ],
)
def test_a_time_is_milliseconds_or_iso_8601_with_its_zone(text: str, expected: int) -> None:
    assert parse_time_ms(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2025-07-03T00:00:00", "has no zone, so it names no one instant"),
        ("yesterday", "is not a time"),
        ("-5", "is not a time"),
        (str(MAX_TIME_MS + 1), "whole milliseconds from 0 to"),
        ("1969-12-31T23:59:59Z", "whole milliseconds from 0 to"),
    ],
)
def test_a_time_that_names_no_instant_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_time_ms(text)


def test_times_are_shown_in_utc() -> None:
    assert format_time_ms(START) == "2025-07-03T00:00:00Z"
    assert format_time_ms(START + 5) == "2025-07-03T00:00:00.005Z"
    assert str(stepping_clock(START)) == "from 2025-07-03T00:00:00Z, 1000 ms a reading"
    assert str(RecordingSources(99, stepping_clock(START, 0))) == (
        "seed 99 and a clock from 2025-07-03T00:00:00Z, 0 ms a reading"
    )


def test_a_clock_is_read_from_its_start_each_time() -> None:
    clock = stepping_clock(START, 500)
    first = clock.readings()
    assert [next(first), next(first)] == [START, START + 500]
    assert next(clock.readings()) == START
    assert list(sequence_clock([3, 1, 2]).readings()) == [3, 1, 2]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: stepping_clock(-1), "a clock's start is whole milliseconds"),
        (lambda: stepping_clock(START, -1000), "a clock's step is whole milliseconds"),
        (lambda: stepping_clock(1.5), "not 1.5"),
        (lambda: sequence_clock([START, "soon"]), "a clock's time is whole .* not 'soon'"),
        (lambda: sequence_clock(START), "takes a list of times"),
        (lambda: RecordingSources(seed=MAX_SEED + 1), "a seed is a whole number"),
        (lambda: RecordingSources(clock=lambda: START), "an object with a readings"),
    ],
)
def test_a_value_no_clock_or_seed_can_hold_is_refused(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_the_json_form_round_trips_and_refuses_what_it_cannot_carry() -> None:
    for sources in (
        RecordingSources(seed=MAX_SEED),
        RecordingSources(clock=SteppingClock(START, 0)),
        RecordingSources(7, SequenceClock((START, START + 1))),
    ):
        assert RecordingSources.from_json(sources.to_json()) == sources

    class Custom:
        def readings(self):
            return iter([START])

    with pytest.raises(ValueError, match="only a stepping or a sequence clock"):
        RecordingSources(clock=Custom()).to_json()
    for bad in ({"seed": -1}, {"clock": {"start_ms": START}}, {"clock": 5}, [1]):
        with pytest.raises(ValueError, match=r"seed|step|clock object"):
            RecordingSources.from_json(bad)


def test_the_draws_are_the_seeded_generators_and_the_clocks() -> None:
    draws = RecordingSources(3, sequence_clock([START, START + 1])).draws()
    expected = random.Random(3)
    assert draws.random() == expected.random()
    assert draws.seed_bits() == expected.getrandbits(63)
    assert [draws.seconds(), draws.seconds()] == [START / 1000, (START + 1) / 1000]
    with pytest.raises(ClockExhaustedError) as raised:
        draws.seconds()
    assert raised.value.read == 2
    none = RecordingSources(seed=1).draws()
    assert none.seconds() is None
    assert RecordingSources(clock=stepping_clock(0)).draws().random() is None


def test_threads_share_one_recordings_readings() -> None:
    draws = RecordingSources(clock=stepping_clock(0, 1)).draws()
    read: list[float | None] = []

    def reader() -> None:
        read.extend(draws.seconds() for _ in range(200))

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(read) == [n / 1000 for n in range(800)]  # each reading once


def test_the_options_name_themselves_in_what_they_refuse() -> None:
    assert sources_of_options(None, None, None) is None
    assert sources_of_options(5, "0", None) == RecordingSources(5, SteppingClock(0, 1000))
    with pytest.raises(ValueError, match=r"^--openprogram-clock-step needs --openprogram-"):
        sources_of_options(None, None, 5, option_prefix="--openprogram-")
    with pytest.raises(ValueError, match=r"^--seed: a seed is"):
        sources_of_options(-1, None, None)
    with pytest.raises(ValueError, match=r"^--clock-start: 'noon' is not a time"):
        sources_of_options(None, "noon", None)
    with pytest.raises(ValueError, match=r"^--clock-step: a step is whole milliseconds"):
        sources_of_options(None, "0", -1)
