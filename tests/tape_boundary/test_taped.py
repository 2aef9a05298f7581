"""``openprogram.taped``: recorded as tape rows, replayed without running the function."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from pydantic import BaseModel

import openprogram
from openprogram import record_replay, taped
from openprogram.errors import (
    RecordedTapeError,
    RecordReplayBlockedError,
    ReplayMismatch,
    TapeValueError,
    UnconsumedCallsError,
)
from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.reader import read_recording
from tests.support.config_files import configure, write_config

CITIES = {"Paris": 21.5, "Lyon": 19.0, "Nice": 24.0}
ran: list[str] = []


@taped
def temperature(city: str, *, units: str = "C") -> float:
    ran.append(city)
    return CITIES[city]


@taped(name="forecast")
async def forecast(city: str) -> dict[str, Any]:
    ran.append(city)
    await asyncio.sleep(0.01 * len(city))  # finish in another order than started
    return {"city": city, "high": CITIES[city]}


class Weather(BaseModel):
    city: str
    high: float


@taped
def weather(city: str) -> Weather:
    ran.append(city)
    return Weather(city=city, high=CITIES[city])


class WeatherUnavailable(Exception):
    pass


@taped
def fragile(city: str) -> float:
    ran.append(city)
    raise WeatherUnavailable(f"no station near {city}")


@pytest.fixture(autouse=True)
def _forget_runs() -> None:
    ran.clear()


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()][1:]


def test_outside_record_and_replay_the_function_just_runs() -> None:
    assert temperature("Paris") == 21.5
    assert ran == ["Paris"]


def test_record_writes_one_row_per_call_and_replay_returns_it_without_running(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        assert temperature("Paris") == 21.5
        assert temperature(city="Lyon", units="F") == 19.0
    assert rows(path) == [
        {"type": "tape", "tape": "temperature", "args": {"city": "Paris"}, "result": 21.5},
        {
            "type": "tape",
            "tape": "temperature",
            "args": {"city": "Lyon", "units": "F"},
            "result": 19.0,
        },
    ]
    assert path.stat().st_mode & 0o777 == 0o600
    ran.clear()
    with record_replay(path, mode="replay"):
        assert temperature("Lyon", units="F") == 19.0  # any order: matched by arguments
        assert temperature("Paris") == 21.5
    assert ran == []


def test_different_arguments_raise_the_two_line_report_naming_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        temperature("Paris")
        temperature("Lyon")
    with pytest.raises(ReplayMismatch) as info, record_replay(path, mode="replay"):
        temperature("Paris")
        temperature("Nice")
    assert str(info.value) == (
        "replay mismatch at tape temperature[1], field args.city:\nrecorded 'Lyon', incoming 'Nice'"
    )
    assert (info.value.tape, info.value.call_index) == ("temperature", 1)
    assert ran == ["Paris", "Lyon"]


def test_a_swallowed_mismatch_still_fails_the_block(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        temperature("Paris")
    with (
        pytest.raises(ReplayMismatch, match=r"tape temperature\[0\], field args.city"),
        record_replay(path, mode="replay"),
    ):
        with contextlib.suppress(ReplayMismatch):  # the code under test swallows it
            temperature("Nice")
        temperature("Paris")


def test_a_call_past_the_tape_says_how_many_entries_it_holds(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        temperature("Paris")
    with pytest.raises(ReplayMismatch) as info, record_replay(path, mode="replay"):
        temperature("Paris")
        temperature("Paris")
    assert str(info.value) == (
        "replay mismatch at tape temperature[1], field tape:\nthe recording holds 1 entry on "
        "tape temperature (temperature[0..0]), all read: the run calls it more often than the "
        "recorded run did"
    )


def test_entries_never_read_fail_like_calls_never_requested(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        temperature("Paris")
        temperature("Lyon")
        temperature("Nice")
    with pytest.raises(UnconsumedCallsError) as info, record_replay(path, mode="replay"):
        temperature("Lyon")
    assert info.value.tapes == {"temperature": ([0, 2], 3)}
    assert str(info.value) == (
        "replay incomplete: tape temperature: 2 of 3 entries never read (entries 0, 2) from "
        f"{path}; the run stopped before the recorded session did"
    )


def test_concurrent_callers_of_one_tape_are_matched_by_arguments(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"

    async def three() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(forecast(city) for city in CITIES)))

    with record_replay(path, mode="record"):
        recorded = asyncio.run(three())
    written = [row["args"]["city"] for row in rows(path)]
    assert sorted(written) == sorted(CITIES)  # in the order the calls returned
    ran.clear()

    async def reversed_three() -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(forecast(city) for city in reversed(CITIES))))

    with record_replay(path, mode="replay"):
        replayed = asyncio.run(reversed_three())
    assert replayed == list(reversed(recorded))
    assert ran == []


def test_identical_calls_replay_in_recorded_order(tmp_path: Path) -> None:
    path = tmp_path / "clock.jsonl"
    clock = taped(time.time, name="clock", nondeterministic=True)
    with record_replay(path, mode="record"):
        stamps = [clock() for _ in range(3)]
    with record_replay(path, mode="replay"):
        assert [clock() for _ in range(3)] == stamps
    assert all(row["nondeterministic"] is True for row in rows(path))


def test_an_exception_is_recorded_and_raised_again_with_its_type(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with pytest.raises(WeatherUnavailable), record_replay(path, mode="record"):
        fragile("Atlantis")
    row = rows(path)[0]
    assert row["error"] == {
        "type": f"{__name__}.WeatherUnavailable",
        "message": "no station near Atlantis",
    }
    assert "result" not in row
    ran.clear()
    with (
        pytest.raises(WeatherUnavailable, match="no station near Atlantis"),
        record_replay(path, mode="replay"),
    ):
        fragile("Atlantis")
    assert ran == []


def test_an_exception_of_a_module_not_imported_is_a_recorded_tape_error(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        pass
    error = {"type": "not_imported_anywhere.Boom", "message": "boom"}
    row = {"type": "tape", "tape": "fragile", "args": {"city": "X"}, "error": error}
    with path.open("ab") as file:
        file.write(orjson.dumps(row) + b"\n")
    with pytest.raises(RecordedTapeError) as info, record_replay(path, mode="replay"):
        fragile("X")
    assert info.value.original_type == "not_imported_anywhere.Boom"
    assert str(info.value) == "not_imported_anywhere.Boom: boom"


def test_a_pydantic_result_is_rebuilt_from_the_return_annotation(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        weather("Nice")
    assert rows(path)[0]["result"] == {"city": "Nice", "high": 24.0}
    assert rows(path)[0]["typed"] is True
    with record_replay(path, mode="replay"):
        assert weather("Nice") == Weather(city="Nice", high=24.0)


def test_a_tuple_result_is_rebuilt_through_its_annotation(tmp_path: Path) -> None:
    @taped(name="span")
    def span() -> tuple[int, int]:
        return (1, 2)

    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        span()
    with record_replay(path, mode="replay"):
        assert span() == (1, 2)


@pytest.mark.parametrize(
    ("result", "field", "problem"),
    [
        ({"a": {1, 2}}, "result.a", "is a set, which is not a JSON value"),
        ([1.0, float("nan")], "result[1]", "is nan, which JSON cannot hold"),
        (2**70, "result", "is the integer 1180591620717411303424, beyond the 64 bits"),
        ((1, 2), "result", "is a tuple, which is not a JSON value"),
        ({1: "one"}, "result", "has the key 1, and JSON keys are strings"),
    ],
)
def test_a_result_that_is_not_json_is_refused_at_record_time(
    tmp_path: Path, result: Any, field: str, problem: str
) -> None:
    @taped(name="odd")
    def odd():  # type: ignore[no-untyped-def]  # no return annotation to rebuild it from
        return result

    path = tmp_path / "tapes.jsonl"
    with pytest.raises(TapeValueError) as info, record_replay(path, mode="record"):
        odd()
    assert str(info.value).startswith(f"tape odd: field {field} {problem}")
    assert "annotate the function's return type" in str(info.value)
    assert rows(path) == []  # nothing written


def test_arguments_tuples_and_models_are_stored_as_json_and_others_refused(
    tmp_path: Path,
) -> None:
    @taped(name="echoing")
    def echoing(value: Any) -> str:
        return "ok"

    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        echoing((1, 2))
        echoing(Weather(city="Paris", high=1.0))
        with pytest.raises(TapeValueError, match=r"^tape echoing: field args.value is a set"):
            echoing({1})
    assert [row["args"] for row in rows(path)] == [
        {"value": [1, 2]},
        {"value": {"city": "Paris", "high": 1.0}},
    ]


def test_a_method_is_taped_without_self(tmp_path: Path) -> None:
    class Station:
        @taped(name="station.read")
        def read(self, sensor: str) -> int:
            return 7

    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        assert Station().read("wind") == 7
    assert rows(path)[0]["args"] == {"sensor": "wind"}


def test_credentials_are_removed_from_arguments_and_results(tmp_path: Path) -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2"

    @taped(name="login")
    def login(user: str, password: str) -> str:
        return f"welcome {user}, your key is {key}"

    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        login("ada", password="hunter2!")
    text = path.read_text()
    assert "hunter2!" not in text
    assert key not in text
    row = rows(path)[0]
    assert row["args"] == {"user": "ada", "password": "[secret removed]"}
    assert row["result"] == "welcome ada, your key is [secret removed]"
    with record_replay(path, mode="replay"):  # the incoming arguments are redacted alike
        assert login("ada", password="hunter2!") == "welcome ada, your key is [secret removed]"


def test_the_configured_mode_applies_from_the_first_taped_call(tmp_path: Path) -> None:
    path = tmp_path / "configured.jsonl"
    configure("record", path)
    assert temperature("Paris") == 21.5  # no model call before it: the runtime starts here
    assert [row["tape"] for row in rows(path)] == ["temperature"]


def test_the_configured_replay_serves_the_tape(tmp_path: Path) -> None:
    path = tmp_path / "configured.jsonl"
    with record_replay(path, mode="record"):
        temperature("Lyon")
    configure("replay", path)
    reset_provider_runtime()  # the next process: it reads the configuration at its start
    ran.clear()
    assert temperature("Lyon") == 19.0
    assert ran == []


def test_a_blocked_configuration_refuses_taped_calls_without_running_them(tmp_path: Path) -> None:
    configure("replay", tmp_path / "missing.jsonl")
    with pytest.raises(RecordReplayBlockedError, match="record/replay is blocked"):
        temperature("Paris")
    assert ran == []


def test_a_broken_configuration_refuses_taped_calls_too() -> None:
    write_config("[record_replay]\nmode = 'sideways'\n")
    with pytest.raises(RecordReplayBlockedError, match="record/replay is blocked"):
        temperature("Paris")
    assert ran == []


def test_async_functions_are_taped_too(tmp_path: Path) -> None:
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        assert asyncio.run(forecast("Paris")) == {"city": "Paris", "high": 21.5}
    ran.clear()
    with record_replay(path, mode="replay"):
        assert asyncio.run(forecast("Paris")) == {"city": "Paris", "high": 21.5}
    assert ran == []
    assert asyncio.iscoroutinefunction(forecast)
    assert forecast.__name__ == "forecast"


def test_the_clock_and_randomness_helpers_replay_what_was_read(tmp_path: Path) -> None:
    path = tmp_path / "world.jsonl"
    with record_replay(path, mode="record"):
        stamp, draw = openprogram.now(), openprogram.random()
        generator = openprogram.seeded_random()
        draws = [generator.random() for _ in range(100)]
    assert [row["tape"] for row in rows(path)] == [
        "openprogram.now",
        "openprogram.random",
        "openprogram.seed",  # one entry for the generator, not one per draw
    ]
    with record_replay(path, mode="replay"):
        assert (openprogram.now(), openprogram.random()) == (stamp, draw)
        replayed = openprogram.seeded_random()
        assert [replayed.random() for _ in range(100)] == draws
    assert time.time() != stamp  # nothing is patched: the real clock still moves


def test_a_tape_name_of_the_tools_is_refused() -> None:
    with pytest.raises(ValueError, match="the agent tools' tapes"):
        taped(time.time, name="tool:clock")


def test_a_generator_is_refused_when_taped() -> None:
    def numbers() -> Any:
        yield 1

    with pytest.raises(TypeError, match="is a generator, whose values come after the call"):
        taped(numbers)


def test_tape_rows_and_calls_coexist_and_read_back(tmp_path: Path) -> None:
    from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple

    path = tmp_path / "both.jsonl"
    with record_replay(path, mode="record"):
        temperature("Paris")
        asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")])))
        temperature("Lyon")
    recording = read_recording(path)
    assert len(recording.calls) == 1
    assert [(e.label, e.line) for e in recording.tapes] == [
        ("temperature[0]", 2),
        ("temperature[1]", 10),
    ]
    with record_replay(path, mode="replay"):
        temperature("Paris")
        asyncio.run(complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content="hi")])))
        temperature("Lyon")


def test_a_key_set_between_two_calls_is_removed_from_the_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    @taped(name="greet")
    def greet(text: str) -> str:
        return text

    key = "k3y-" + "Zq8Wv2Lp9Tx4Rm7Nc"
    path = tmp_path / "tapes.jsonl"
    with record_replay(path, mode="record"):
        greet(f"first {key}")
        monkeypatch.setenv("WEATHER_API_KEY", key)  # known from now on
        greet(f"second {key}")
    assert [row["result"] for row in rows(path)] == [
        f"first {key}",
        "second [secret removed]",
    ]


def test_threads_calling_one_tape_record_whole_rows_and_replay_by_arguments(
    tmp_path: Path,
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    @taped(name="square")
    def square(n: int) -> int:
        time.sleep(0.001)
        return n * n

    path = tmp_path / "threads.jsonl"
    numbers = list(range(200))
    with record_replay(path, mode="record"), ThreadPoolExecutor(8) as pool:
        assert list(pool.map(square, numbers)) == [n * n for n in numbers]
    recording = read_recording(path)
    assert sorted(entry.args["n"] for entry in recording.tapes) == numbers
    assert [entry.index for entry in recording.tapes] == numbers  # indexes follow the file
    with record_replay(path, mode="replay"), ThreadPoolExecutor(8) as pool:
        assert list(pool.map(square, reversed(numbers))) == [n * n for n in reversed(numbers)]
