"""The real ``google-genai`` SDK against a loopback stand-in of Gemini's API: its async
client (which sends through aiohttp) and its sync client (httpx2, or httpx) recorded, then
replayed with the server stopped and no socket allowed, and ``recordings show`` putting the
replies back together; an error response replays as the same SDK error; the key it sends
never on disk, nor one sent as the ``key=`` query parameter; a prompt that drifted is the
two-line mismatch report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types

import openprogram
from openprogram.errors import ReplayMismatch
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.token_shapes import PLACEHOLDER
from tests.http_boundary.boundaries import events, rows
from tests.support.cli_runner import run
from tests.support.gemini_server import ARGUMENTS, MISSING_MODEL, MODEL, GeminiServer, reply_pieces
from tests.support.offline import offline

pytestmark = pytest.mark.filterwarnings(
    # google-genai's async client subclasses aiohttp's ClientSession, which aiohttp discourages
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)

KEY = "gemini-test-key-0123456789"
"""Not shaped like a Google key (``AIza…``): only the rules for where it is sent remove it."""


@pytest.fixture
def gemini() -> Iterator[GeminiServer]:
    with GeminiServer() as running:
        yield running


def client(server: GeminiServer) -> genai.Client:
    return genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=server.base_url))


def shown(response: types.GenerateContentResponse) -> dict[str, Any]:
    """What a program reads of a reply (the SDK's own copy of the HTTP headers aside)."""
    return response.model_dump(mode="json", exclude={"sdk_http_response"})


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"14 °C and overcast in {city}"


async def test_the_async_client_is_recorded_and_replayed_offline(
    gemini: GeminiServer, tmp_path: Path
) -> None:
    path = tmp_path / "gemini.jsonl"

    async def ask() -> types.GenerateContentResponse:
        return await client(gemini).aio.models.generate_content(model=MODEL, contents="hello")

    with openprogram.record_replay(path, mode="record"):
        live = await ask()
    assert live.text == "echo: hello"
    assert gemini.received[0].headers["x-goog-api-key"] == KEY
    request, *_ = rows(path)
    assert request["url"] == f"{gemini.base_url}/v1/models/{MODEL}:generateContent"
    assert request["body"]["contents"] == [{"parts": [{"text": "hello"}], "role": "user"}]
    assert KEY not in path.read_text()
    gemini.stop()

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await ask()
    assert shown(replayed) == shown(live)


async def test_an_async_stream_replays_chunk_for_chunk(
    gemini: GeminiServer, tmp_path: Path
) -> None:
    path = tmp_path / "gemini.jsonl"

    async def chunks() -> list[types.GenerateContentResponse]:
        stream = await client(gemini).aio.models.generate_content_stream(
            model=MODEL, contents="hello there"
        )
        return [chunk async for chunk in stream]

    with openprogram.record_replay(path, mode="record"):
        live = await chunks()
    assert [chunk.text for chunk in live] == reply_pieces("echo: hello there")
    assert rows(path)[0]["url"].endswith(f"/models/{MODEL}:streamGenerateContent?alt=sse")
    recorded = events(path)
    assert [event["type"] for event in recorded] == ["http_response"] + ["sse"] * len(live)
    assert recorded[-1]["data"]["usageMetadata"]["totalTokenCount"] == 10
    gemini.stop()

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await chunks()
    assert [shown(chunk) for chunk in replayed] == [shown(chunk) for chunk in live]


async def test_an_error_replays_as_the_same_sdk_error(gemini: GeminiServer, tmp_path: Path) -> None:
    path = tmp_path / "gemini.jsonl"

    async def fail() -> errors.ClientError:
        with pytest.raises(errors.ClientError) as raised:
            await client(gemini).aio.models.generate_content(model=MISSING_MODEL, contents="hi")
        return raised.value

    with openprogram.record_replay(path, mode="record"):
        live = await fail()
    assert (live.code, live.status) == (404, "NOT_FOUND")
    gemini.stop()

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = await fail()
    assert (replayed.code, replayed.status, str(replayed)) == (live.code, live.status, str(live))


def test_the_sync_client_and_its_function_calls_are_recorded_and_replayed(
    gemini: GeminiServer, tmp_path: Path
) -> None:
    path = tmp_path / "gemini.jsonl"

    def ask() -> tuple[types.GenerateContentResponse, types.GenerateContentResponse]:
        sdk = client(gemini)
        declared = types.GenerateContentConfig(
            tools=[get_weather],
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        called = sdk.models.generate_content(model=MODEL, contents="weather?", config=declared)
        answered = sdk.models.generate_content(  # the SDK calls the function and answers
            model=MODEL,
            contents="weather?",
            config=types.GenerateContentConfig(tools=[get_weather]),
        )
        return called, answered

    with openprogram.record_replay(path, mode="record"):
        called, answered = ask()
    assert called.function_calls is not None
    assert [(call.name, call.args) for call in called.function_calls] == [
        ("get_weather", ARGUMENTS)
    ]
    assert answered.text == 'the tool said: {"result": "14 \\u00b0C and overcast in Paris"}'
    assert len([row for row in rows(path) if row["type"] == "request"]) == 3
    shown_calls = run("show", str(path))
    assert shown_calls.exit_code == 0, shown_calls.stderr
    assert '  < tool call get_weather {"city": "Paris"}\n' in shown_calls.stdout
    assert '  > user: get_weather → {"result":"14 °C and overcast in Paris"}\n' in (
        shown_calls.stdout
    )
    assert "stop reason: STOP · tokens: 4 in, 6 out" in shown_calls.stdout
    gemini.stop()

    with offline(), openprogram.record_replay(path, mode="replay"):
        replayed = ask()
    assert [shown(response) for response in replayed] == [shown(called), shown(answered)]


def test_a_key_sent_as_the_key_query_parameter_is_not_recorded(
    gemini: GeminiServer, tmp_path: Path
) -> None:
    """How REST callers other than google-genai send the key (curl, litellm's Gemini route)."""
    path = tmp_path / "gemini.jsonl"
    body = {"contents": [{"parts": [{"text": "hello"}], "role": "user"}]}

    def ask(key: str) -> Any:
        url = f"{gemini.base_url}/v1beta/models/{MODEL}:streamGenerateContent?alt=sse&key={key}"
        with httpx.Client() as http:
            reply = http.post(url, json=body)
        return [json.loads(line[6:]) for line in reply.text.splitlines() if line]

    with openprogram.record_replay(path, mode="record"):
        live = ask(KEY)
    assert gemini.received[0].path.endswith(f"&key={KEY}")
    assert KEY not in path.read_text()
    assert rows(path)[0]["url"].endswith(f"?alt=sse&key={PLACEHOLDER}")
    gemini.stop()

    with offline(), openprogram.record_replay(path, mode="replay"):
        assert ask("another-key-9876543210") == live  # a key is never compared


async def test_a_drifted_prompt_is_the_mismatch_report(
    gemini: GeminiServer, tmp_path: Path
) -> None:
    path = tmp_path / "gemini.jsonl"
    with openprogram.record_replay(path, mode="record"):
        await client(gemini).aio.models.generate_content(model=MODEL, contents="hello")
    gemini.stop()

    with (
        offline(),
        pytest.raises(ReplayMismatch) as caught,
        openprogram.record_replay(path, mode="replay"),
        pytest.raises(RecordReplayEscape),  # past the SDK's own error handling
    ):
        await client(gemini).aio.models.generate_content(model=MODEL, contents="goodbye")
    assert str(caught.value) == (
        "replay mismatch at call 0, field body.contents[0].parts[0].text:\n"
        "recorded 'hello', incoming 'goodbye'"
    )
