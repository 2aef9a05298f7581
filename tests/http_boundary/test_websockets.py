"""WebSocket connections (OpenAI Realtime) cannot be recorded: opened through the
``websockets`` package they are refused under replay and when blocked, before any socket is
opened, and opened uncaptured (with a warning) when recording."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram.errors import RecordReplayBlockedError, ReplayMismatch
from openprogram.recording.mismatch import RecordReplayEscape
from tests.http_boundary.boundaries import blocked, recording_into, replaying
from tests.support.offline import offline
from tests.support.recording_rows import header, write_rows

websockets_sync = pytest.importorskip("websockets.sync.client")
websockets_async = pytest.importorskip("websockets.asyncio.client")
websockets_server = pytest.importorskip("websockets.sync.server")

URL = "ws://127.0.0.1:9/v1/realtime?model=gpt-realtime"


@pytest.fixture
def empty_recording(tmp_path: Path) -> Path:
    path = tmp_path / "empty.jsonl"
    write_rows(path, [header()])
    return path


@pytest.fixture
def echo_server() -> Iterator[str]:
    def echo(connection: Any) -> None:
        for message in connection:
            connection.send(message)

    with websockets_server.serve(echo, "127.0.0.1", 0) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"ws://127.0.0.1:{server.socket.getsockname()[1]}/"
        server.shutdown()
        thread.join(timeout=5)


async def connect_async(url: str) -> None:
    async with websockets_async.connect(url, open_timeout=1):
        pass


def test_a_websocket_is_refused_under_replay_before_any_socket(empty_recording: Path) -> None:
    with offline(), replaying(empty_recording) as session:
        with pytest.raises(RecordReplayEscape) as sync_refusal:
            websockets_sync.connect(URL, open_timeout=1)
        with pytest.raises(RecordReplayEscape) as async_refusal:
            asyncio.run(connect_async(URL))

    for refusal in (sync_refusal.value, async_refusal.value):
        assert isinstance(refusal.error, ReplayMismatch)
        assert refusal.error.field_path == "boundary"
        assert str(refusal) == (
            "replay mismatch at call 0, field boundary:\n"
            f"incoming a WebSocket connection ({URL}): WebSocket APIs such as OpenAI Realtime "
            "are not recorded, so replay cannot serve them"
        )
    assert session.mismatches == [sync_refusal.value.error, async_refusal.value.error]


def test_the_openai_realtime_connection_is_refused_under_replay(empty_recording: Path) -> None:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(api_key="sk-test-0123456789abcdefghij", base_url="http://127.0.0.1:9/v1")
    with (
        offline(),
        replaying(empty_recording),
        pytest.raises(RecordReplayEscape) as caught,
        client.realtime.connect(model="gpt-realtime"),
    ):
        pass
    assert "WebSocket APIs such as OpenAI Realtime are not recorded" in str(caught.value)


def test_a_websocket_is_refused_by_a_blocked_boundary() -> None:
    with offline(), blocked(), pytest.raises(RecordReplayEscape) as caught:
        asyncio.run(connect_async(URL))
    assert isinstance(caught.value.error, RecordReplayBlockedError)


def test_a_websocket_opens_uncaptured_when_recording(
    echo_server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "r.jsonl"
    with (
        recording_into(path),
        caplog.at_level(logging.WARNING, logger="openprogram"),
        websockets_sync.connect(echo_server, open_timeout=5) as connection,
    ):
        connection.send("ping")
        assert connection.recv(timeout=5) == "ping"

    assert f"the WebSocket connection to {echo_server} is not recorded" in caplog.text
    assert not path.exists()
