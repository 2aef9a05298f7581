"""openprogram's own provider calls are re-sent through their provider, rebuilt from the
recorded request, and compared on the event rows as a stream is."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openprogram.providers import SimpleStreamOptions, complete_simple
from openprogram.recording.writer import close_recording_writers
from tests.support.cli_runner import run
from tests.support.sse_server import Script, ScriptedServer
from tests.support.tool_sessions import record_tool_session, recording_into
from tests.support.vendor_wire import Text
from tests.support.vendors import HELLO, OPENAI

KEY = "sk-live-provider-0123456789abcdef"


def test_an_echo_session_is_re_sent_offline_and_has_not_drifted(tmp_path: Path) -> None:
    path = tmp_path / "echo.jsonl"
    asyncio.run(record_tool_session(path))
    result = run("drift", str(path))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "call 0 echo echo: no drift",
        "call 1 echo echo: no drift",
    ]
    assert f"✔ {path}: 2 unchanged" in result.stdout


def record_openai_call(path: Path, server: ScriptedServer) -> None:
    server.serve(Script([OPENAI.wire.reply(Text("Hel", "lo"))]))

    async def call() -> None:
        with recording_into(path, OPENAI.api, OPENAI.provider(server.base_url)):
            options = SimpleStreamOptions(api_key="sk-test")
            await complete_simple(OPENAI.model_at(server.base_url), HELLO, options)

    asyncio.run(call())
    close_recording_writers()


@pytest.fixture
def server() -> ScriptedServer:
    with ScriptedServer() as running:
        yield running


def test_a_vendor_providers_call_is_re_sent_with_the_key_and_its_events_compared(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "openai.jsonl"
    record_openai_call(path, server)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.serve(Script([OPENAI.wire.reply(Text("Bon", "jour", " à vous"))]))
    trusted = f"openai={server.base_url}"  # a loopback server is no vendor's API by default
    result = run("drift", str(path), "--json", "--base-url", trusted)
    assert result.exit_code == 0, result.output
    (call,) = json.loads(result.stdout)["recordings"][0]["calls"]
    assert call["boundary"] == "provider"
    assert {drift["class"] for drift in call["drift"]} == {"content"}
    assert server.received[-1].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in result.stdout

    server.serve(Script([OPENAI.wire.reply(Text("Hi"), finish="length")]))
    result = run("drift", str(path), "--json", "--base-url", trusted)
    assert result.exit_code == 1
    (call,) = json.loads(result.stdout)["recordings"][0]["calls"]
    breaking = [
        (d["path"], d["recorded"], d["live"]) for d in call["drift"] if d["class"] == "breaking"
    ]
    assert ("done: reason", "'stop'", "'length'") in breaking


def test_a_vendor_providers_call_without_its_key_is_skipped(
    tmp_path: Path, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "openai.jsonl"
    record_openai_call(path, server)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    sent = len(server.received)
    result = run("drift", str(path), "--base-url", f"openai={server.base_url}")
    assert result.exit_code == 0
    assert "skipped: no openai key: set OPENAI_API_KEY (or pass --header)" in result.stdout
    assert len(server.received) == sent
    assert result.stdout.splitlines()[-1] == f"- {path}: 1 skipped: nothing was sent"
