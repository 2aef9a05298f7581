"""The deterministic sources a recording draws the time and random numbers from.

``openprogram.now()`` and ``openprogram.random()`` read the real clock and a fresh random
generator, and tape what they read. Two recordings of one session then differ wherever the
session's output carries the time or a draw. Given sources of its own, a recording reads
those instead, so the same session recorded twice — in another folder, on another machine,
in another time zone, on another day — hashes alike::

    with openprogram.record_replay(
        "run.jsonl", seed=99, clock=openprogram.stepping_clock(1_751_500_800_000, 1000)
    ):
        run_my_agent()

* a **seed** (a whole number from 0 to 2**63 - 1) drives ``random()`` and the seeds
  ``seeded_random()`` draws; ``seeded_random(seed)`` is the generator a seed makes;
* a **clock** drives ``now()``: :func:`stepping_clock` (``start_ms``, then ``step_ms``
  later at each reading) or :func:`sequence_clock` (each of ``times`` in turn; reading past
  the last raises :class:`~openprogram.errors.ClockExhaustedError`, so a session that reads
  the time more often than expected fails loudly). Any object with a ``readings()`` method
  giving whole milliseconds is a clock too.

**Time is milliseconds since the Unix epoch, in UTC** (``1_751_500_800_000`` is
2025-07-03T00:00:00Z): an instant, the same number in every time zone; ``now()`` gives it
in seconds, as ``time.time()`` does. A time shown in the *local* zone
(``datetime.fromtimestamp(t)``, ``time.strftime``) depends on the zone as well as the
instant, so a deterministic clock comes with a zone: wherever openprogram starts the code it
drives — an ``exec`` command, a ``record_replay()`` block, a pytest test — the local zone is
UTC there (``TZ=UTC``, :func:`local_time_in_utc`), at record and at replay alike.

A clock is a description, not a running counter: each recording reads it from its start
(:meth:`RecordingSources.draws`), so the same clock given to two recordings gives both the same
readings. Under replay nothing is drawn: ``now()`` and ``random()`` return what the recording holds.

This module imports nothing of openprogram but its errors: the configuration checks its
values with the same rules (:func:`check_seed`, :func:`check_time_ms`)."""

from __future__ import annotations

import itertools
import os
import random as _random
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol, runtime_checkable

from openprogram.errors import ClockExhaustedError

__all__ = [
    "DEFAULT_STEP_MS",
    "MAX_SEED",
    "MAX_TIME_MS",
    "UTC_ZONE",
    "Clock",
    "RecordingSources",
    "SequenceClock",
    "SourceDraws",
    "SteppingClock",
    "check_seed",
    "check_time_ms",
    "format_time_ms",
    "local_time_in_utc",
    "parse_time_ms",
    "sequence_clock",
    "set_local_time_to_utc",
    "sources_of_options",
    "stepping_clock",
]

MAX_SEED: Final = 2**63 - 1
"""The largest seed: what TOML and JSON readers keep as an integer."""

MAX_TIME_MS: Final = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last instant Python's ``datetime`` can show."""

DEFAULT_STEP_MS: Final = 1000
"""A stepping clock's step when none is given: one second a reading."""

UTC_ZONE: Final = "UTC"
"""The local zone of the code a deterministic clock drives (the ``TZ`` variable's value)."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


def check_seed(value: object) -> int:
    """``value`` if it is a seed (a whole number from 0 to :data:`MAX_SEED`); else
    ``ValueError`` saying what a seed is."""
    if type(value) is not int or not 0 <= value <= MAX_SEED:
        raise ValueError(f"a seed is a whole number from 0 to {MAX_SEED}, not {value!r}")
    return value


def check_time_ms(value: object, what: str = "a time") -> int:
    """``value`` if it is whole milliseconds from 0 to :data:`MAX_TIME_MS` (an instant since
    the Unix epoch, or a step); else ``ValueError`` naming ``what``."""
    if type(value) is not int or not 0 <= value <= MAX_TIME_MS:
        raise ValueError(
            f"{what} is whole milliseconds from 0 to {MAX_TIME_MS} (9999-12-31T23:59:59.999Z), "
            f"not {value!r}"
        )
    return value


def parse_time_ms(text: str) -> int:
    """An instant as the command line gives it: milliseconds since the Unix epoch
    (``1751500800000``), or an ISO 8601 time with its zone (``2025-07-03T00:00:00Z``,
    ``2025-07-03T02:00:00+02:00``). A time without a zone is refused: which instant it
    names would depend on the machine. Raises ``ValueError`` saying what to write."""
    advice = (
        "write milliseconds since 1970-01-01T00:00:00Z (1751500800000) or a time with its "
        "zone (2025-07-03T00:00:00Z)"
    )
    stripped = text.strip()
    if stripped.isdigit():
        try:
            return check_time_ms(int(stripped))
        except ValueError as error:
            raise ValueError(str(error)) from None
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(f"{text!r} is not a time: {advice}") from None
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no zone, so it names no one instant: {advice}")
    return check_time_ms((moment - _EPOCH) // timedelta(milliseconds=1))


def sources_of_options(
    seed: int | None, clock_start: str | None, clock_step: int | None, *, option_prefix: str = "--"
) -> RecordingSources | None:
    """The sources the options ``seed``, ``clock-start`` and ``clock-step`` give on a command line
    (None: none given), a stepping clock for a start. ``ValueError`` naming the option (``--seed:
    …``, the name after ``option_prefix``) for a bad value or a step without a start."""
    if clock_step is not None and clock_start is None:
        raise ValueError(
            f"{option_prefix}clock-step needs {option_prefix}clock-start: the time the clock "
            "reads first"
        )
    checks: list[tuple[str, Any]] = [
        ("seed", lambda: None if seed is None else check_seed(seed)),
        ("clock-start", lambda: None if clock_start is None else parse_time_ms(clock_start)),
        (
            "clock-step",
            lambda: check_time_ms(DEFAULT_STEP_MS if clock_step is None else clock_step, "a step"),
        ),
    ]
    values = []
    for name, check in checks:
        try:
            values.append(check())
        except ValueError as error:
            raise ValueError(f"{option_prefix}{name}: {error}") from None
    checked_seed, start_ms, step_ms = values
    clock = None if start_ms is None else SteppingClock(start_ms, step_ms)
    return RecordingSources.of(checked_seed, clock)


def format_time_ms(value: int) -> str:
    """``value`` (milliseconds since the epoch) as an ISO 8601 time in UTC:
    ``2025-07-03T00:00:00Z``, with milliseconds when it has any."""
    moment = _EPOCH + timedelta(milliseconds=value)
    spec = "milliseconds" if value % 1000 else "seconds"
    return moment.isoformat(timespec=spec).replace("+00:00", "Z")


@runtime_checkable
class Clock(Protocol):
    """A deterministic clock: ``readings()`` gives, from the start each time it is called,
    the times a recording reads, in whole milliseconds since the Unix epoch (UTC)."""

    def readings(self) -> Iterator[int]: ...


@dataclass(frozen=True, slots=True)
class SteppingClock:
    """``start_ms``, then ``step_ms`` later at each reading (0: the time stands still)."""

    start_ms: int
    step_ms: int = DEFAULT_STEP_MS

    def __post_init__(self) -> None:
        check_time_ms(self.start_ms, "a clock's start")
        check_time_ms(self.step_ms, "a clock's step")

    def readings(self) -> Iterator[int]:
        return itertools.count(self.start_ms, self.step_ms)

    def __str__(self) -> str:
        return f"from {format_time_ms(self.start_ms)}, {self.step_ms} ms a reading"


@dataclass(frozen=True, slots=True)
class SequenceClock:
    """Each of ``times`` in turn; a reading past the last raises ``ClockExhaustedError``."""

    times: tuple[int, ...]

    def __post_init__(self) -> None:
        for time_ms in self.times:
            check_time_ms(time_ms, "a clock's time")

    def readings(self) -> Iterator[int]:
        return iter(self.times)

    def __str__(self) -> str:
        if not self.times:
            return "of no time"
        shown = ", ".join(format_time_ms(time_ms) for time_ms in self.times[:3])
        more = ", …" if len(self.times) > 3 else ""
        return f"of {len(self.times)} times: {shown}{more}"


def stepping_clock(start_ms: int, step_ms: int = DEFAULT_STEP_MS) -> SteppingClock:
    """A clock reading ``start_ms`` (milliseconds since the Unix epoch, UTC), then
    ``step_ms`` later at each reading. ``ValueError`` for a value that is not whole
    milliseconds from 0 to :data:`MAX_TIME_MS`."""
    return SteppingClock(start_ms, step_ms)


def sequence_clock(times: Iterable[int]) -> SequenceClock:
    """A clock reading each of ``times`` (milliseconds since the Unix epoch, UTC) in turn;
    one more reading raises :class:`~openprogram.errors.ClockExhaustedError`."""
    if isinstance(times, str | bytes) or not isinstance(times, Iterable):
        raise ValueError(f"a sequence clock takes a list of times, not {times!r}")
    return SequenceClock(tuple(times))


@dataclass(frozen=True, slots=True)
class RecordingSources:
    """What ``now()`` and ``random()`` draw from while recording: a seed, a clock, or both
    (None: the real clock, or a fresh generator)."""

    seed: int | None = None
    clock: Clock | None = None

    def __post_init__(self) -> None:
        if self.seed is not None:
            check_seed(self.seed)
        if self.clock is not None and not isinstance(self.clock, Clock):
            raise ValueError(
                f"a clock is stepping_clock(...), sequence_clock(...) or an object with a "
                f"readings() method, not {self.clock!r}"
            )

    @classmethod
    def of(cls, seed: int | None, clock: Clock | None) -> RecordingSources | None:
        """The sources ``seed`` and ``clock`` give, or None when both are None."""
        return None if seed is None and clock is None else cls(seed, clock)

    def draws(self) -> SourceDraws:
        """The readings and draws of one recording, from the start of the clock and seed."""
        return SourceDraws(self)

    def __str__(self) -> str:
        parts = []
        if self.seed is not None:
            parts.append(f"seed {self.seed}")
        if self.clock is not None:
            parts.append(f"a clock {self.clock}")
        return " and ".join(parts) or "no sources"

    def to_json(self) -> dict[str, Any]:
        """The sources as JSON (how ``exec`` hands them to the command's processes): a
        stepping or a sequence clock only — ``ValueError`` for another clock."""
        data: dict[str, Any] = {"seed": self.seed, "clock": None}
        if isinstance(self.clock, SteppingClock):
            data["clock"] = {"start_ms": self.clock.start_ms, "step_ms": self.clock.step_ms}
        elif isinstance(self.clock, SequenceClock):
            data["clock"] = {"times": list(self.clock.times)}
        elif self.clock is not None:
            raise ValueError(
                f"only a stepping or a sequence clock has a JSON form, not {self.clock!r}"
            )
        return data

    @classmethod
    def from_json(cls, data: object) -> RecordingSources:
        """The sources :meth:`to_json` wrote; ``ValueError`` for anything else."""
        if not isinstance(data, Mapping) or not isinstance(data.get("clock", {}), Mapping | None):
            raise ValueError(f"sources are an object with a clock object, not {data!r}")
        clock = data.get("clock")
        made: Clock | None = None
        if isinstance(clock, Mapping) and "times" in clock:
            made = sequence_clock(clock["times"])
        elif isinstance(clock, Mapping):
            made = SteppingClock(clock.get("start_ms", -1), clock.get("step_ms", -1))
        return cls(data.get("seed"), made)


class SourceDraws:
    """One recording's readings of its sources, safe to share between threads. Each method
    returns None when the sources have no such source (the caller then reads the real one)."""

    __slots__ = ("_clock", "_generator", "_lock", "_read", "_readings")

    def __init__(self, sources: RecordingSources) -> None:
        self._lock = threading.Lock()
        self._generator = None if sources.seed is None else _random.Random(sources.seed)
        self._clock = sources.clock
        self._readings = None if sources.clock is None else iter(sources.clock.readings())
        self._read = 0

    def seconds(self) -> float | None:
        """The clock's next reading, in seconds since the epoch (as ``time.time()``)."""
        if self._readings is None:
            return None
        with self._lock:
            reading = next(self._readings, None)
            if reading is None:
                raise ClockExhaustedError(clock=str(self._clock), read=self._read)
            self._read += 1
        return check_time_ms(reading, f"a reading of the clock {self._clock}") / 1000

    def random(self) -> float | None:
        """The seeded generator's next float in [0, 1)."""
        if self._generator is None:
            return None
        with self._lock:
            return self._generator.random()

    def seed_bits(self) -> int | None:
        """The seeded generator's next 63 bits: the seed of a ``seeded_random()``."""
        if self._generator is None:
            return None
        with self._lock:
            return self._generator.getrandbits(63)


def set_local_time_to_utc() -> Callable[[], None]:
    """Make the process's local zone UTC from now on (``TZ=UTC``, and ``time.tzset()`` where
    the platform has it); returns what puts back the zone it had. What the configured mode
    does, for the life of the process, when its recording has a clock."""
    previous = os.environ.get("TZ")
    os.environ["TZ"] = UTC_ZONE
    _tzset()

    def restore() -> None:
        if previous is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = previous
        _tzset()

    return restore


@contextmanager
def local_time_in_utc() -> Iterator[None]:
    """For the block, the process's local zone is UTC, then the zone it had
    (:func:`set_local_time_to_utc`). What ``record_replay()`` and the pytest fixture do when
    given a clock: a time shown in the local zone then reads the same in every zone, at
    record and at replay."""
    restore = set_local_time_to_utc()
    try:
        yield
    finally:
        restore()


def _tzset() -> None:
    tzset = getattr(time, "tzset", None)  # not on Windows
    if tzset is not None:
        tzset()
