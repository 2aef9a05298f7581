"""A request that drifted from the recording — its prompt, a tool's schema, the model, the
temperature — stops an official SDK's call with the two-line report and a path into the
JSON body: at once (no SDK retry), not as the SDK's "Connection error.", also when the
program catches every exception; and the key the client was made with is in neither the
recording nor the report."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import ReplayMismatch
from tests.support.sdk_capture import recording, replaying, sockets_watched
from tests.support.sdk_clients import API_KEYS, CLIENT_KINDS, ClientKind, Scenario, observe, settle
from tests.support.sdk_scenarios import WEATHER_TOOL, chat_tool, messages_tool
from tests.support.sdk_server import SdkServer

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]

RECORDED = {
    "prompt": "What is the weather in Paris?",
    "model": {"openai": "gpt-4o-mini", "anthropic": "claude-loopback-1"},
    "temperature": 0.2,
    "city_type": "string",
}

DRIFTS = {
    # kind of drift: (the changed argument, its value, the path into the body per vendor,
    # how the report shows the recorded and the incoming value)
    "prompt": (
        {"prompt": "What is the weather in Rome?"},
        {"openai": "body.messages[0].content", "anthropic": "body.messages[0].content"},
        "'What is the weather in Paris?'",
        "'What is the weather in Rome?'",
    ),
    "tool schema": (
        {"city_type": "integer"},
        {
            "openai": "body.tools[0].function.parameters.properties.city.type",
            "anthropic": "body.tools[0].input_schema.properties.city.type",
        },
        "'string'",
        "'integer'",
    ),
    "model": (
        {"model": {"openai": "gpt-4o", "anthropic": "claude-loopback-2"}},
        {"openai": "body.model", "anthropic": "body.model"},
        None,
        None,
    ),
    "temperature": (
        {"temperature": 0.7},
        {"openai": "body.temperature", "anthropic": "body.temperature"},
        "0.2",
        "0.7",
    ),
}


def weather_call(kind: ClientKind, *, swallow: bool = False, **changes: Any) -> Scenario:
    """One call offering the weather tool, with the recorded arguments but ``changes``;
    ``swallow``: the program catches whatever the call raises, BaseException included."""
    arguments = {**RECORDED, **changes}
    model = arguments["model"][kind.vendor]
    messages = [{"role": "user", "content": arguments["prompt"]}]
    parameters = WEATHER_TOOL["parameters"]
    city = {**parameters["properties"]["city"], "type": arguments["city_type"]}
    tool = {**WEATHER_TOOL, "parameters": {**parameters, "properties": {"city": city}}}

    async def send(client: Any) -> Any:
        if kind.vendor == "openai":
            return await settle(
                client.chat.completions.create(
                    model=model,
                    messages=messages,
                    tools=[chat_tool(tool)],
                    temperature=arguments["temperature"],
                )
            )
        # The current Anthropic SDKs take no ``temperature`` argument: it goes in the body.
        temperature = {"temperature": arguments["temperature"]}
        create = client.messages.create
        takes_it = "temperature" in inspect.signature(create).parameters
        return await settle(
            create(
                model=model,
                max_tokens=256,
                messages=messages,
                tools=[messages_tool(tool)],
                **(temperature if takes_it else {"extra_body": temperature}),
            )
        )

    async def call(client: Any, seen: list[Any]) -> None:
        try:
            seen.append((await send(client)).model_dump())
        except BaseException:
            if not swallow:
                raise

    return call


async def record(kind: ClientKind, path: Path, scenario: Scenario) -> str:
    """Record ``scenario`` into ``path``; the server's URL (it has stopped since)."""
    with SdkServer() as server, recording(path):
        live = await observe(kind, server.base_url, scenario)
    assert live.raised is None
    assert API_KEYS[kind.vendor] not in path.read_text()
    return server.base_url


@pytest.mark.parametrize("drift", list(DRIFTS))
@pytest.mark.parametrize("kind", KINDS)
async def test_a_drifted_request_gives_the_report_with_a_body_path(
    kind: ClientKind, drift: str, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    url = await record(kind, path, weather_call(kind))
    changes, paths, recorded, incoming = DRIFTS[drift]
    if drift == "model":
        recorded = repr(RECORDED["model"][kind.vendor])
        incoming = repr(changes["model"][kind.vendor])

    with (
        pytest.raises(ReplayMismatch) as caught,
        sockets_watched() as attempts,
        replaying(path) as session,
    ):
        await observe(kind, url, weather_call(kind, **changes))

    assert str(caught.value) == (
        f"replay mismatch at call 0, field {paths[kind.vendor]}:\n"
        f"recorded {recorded}, incoming {incoming}"
    )
    assert len(session.mismatches) == 1  # the SDK did not retry the request
    assert attempts == []


@pytest.mark.parametrize("kind", KINDS)
async def test_the_report_reaches_the_user_when_the_program_catches_everything(
    kind: ClientKind, tmp_path: Path
) -> None:
    path = tmp_path / "session.jsonl"
    url = await record(kind, path, weather_call(kind))
    quiet = None

    with pytest.raises(ReplayMismatch) as caught, replaying(path) as session:
        quiet = await observe(kind, url, weather_call(kind, swallow=True, temperature=0.7))

    assert quiet is not None
    assert quiet.raised is None  # the program saw nothing go wrong

    assert str(caught.value).startswith("replay mismatch at call 0, field body.temperature:\n")
    assert len(session.mismatches) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_the_key_appears_in_no_report(kind: ClientKind, tmp_path: Path) -> None:
    key = API_KEYS[kind.vendor]
    path = tmp_path / "session.jsonl"
    url = await record(kind, path, weather_call(kind, prompt=f"my key is {key}, Paris"))

    with pytest.raises(ReplayMismatch) as caught, replaying(path):
        await observe(kind, url, weather_call(kind, prompt=f"my key is {key}, Rome"))

    report = str(caught.value)
    assert report.startswith("replay mismatch at call 0, field body.messages[0].content:\n")
    assert "Rome" in report
    assert key not in report
