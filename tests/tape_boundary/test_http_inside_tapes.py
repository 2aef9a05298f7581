"""HTTP requests a taped function sends while it runs are covered by its tape: not recorded
at the HTTP boundary, and never sent again under replay."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from openprogram import record_replay, taped
from openprogram.recording.reader import read_recording
from tests.support.sse_server import Script, ScriptedServer


def json_script(body: object) -> Script:
    return Script([json.dumps(body).encode()], headers={"Content-Type": "application/json"})


def test_a_taped_functions_request_is_covered_by_its_tape_and_others_are_recorded(
    tmp_path: Path,
) -> None:
    path = tmp_path / "weather.jsonl"
    with ScriptedServer() as server:

        @taped(name="fetch_weather")
        def fetch_weather(city: str) -> object:
            return httpx.get(f"{server.base_url}/weather", params={"city": city}).json()

        server.serve(json_script({"temp": 21}), json_script({"status": "up"}))
        with record_replay(path, mode="record"):
            assert fetch_weather("Paris") == {"temp": 21}
            assert httpx.get(f"{server.base_url}/status").json() == {"status": "up"}
        assert [request.path for request in server.received] == ["/weather?city=Paris", "/status"]
    recording = read_recording(path)
    assert [call.request["url"] for call in recording.calls] == [f"{server.base_url}/status"]
    assert [(entry.label, entry.result) for entry in recording.tapes] == [
        ("fetch_weather[0]", {"temp": 21})
    ]

    # The server is gone: the taped call replays from its tape, the other from its call.
    with record_replay(path, mode="replay"):
        assert fetch_weather("Paris") == {"temp": 21}
        assert httpx.get(f"{server.base_url}/status").json() == {"status": "up"}
