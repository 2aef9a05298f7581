"""Commands given a recording that holds HTTP calls answer on one line, without a traceback:
``verify`` cannot rebuild a session that starts with an HTTP call (exit 2), ``show`` lists
the call by its host and model."""

from __future__ import annotations

from pathlib import Path

import orjson
from typer.testing import CliRunner

from openprogram.cli.app import app
from openprogram.recording.format import new_header

runner = CliRunner()

HTTP_CALL = [
    {
        "type": "request",
        "call_index": 0,
        "boundary": "http",
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "headers": {"content-type": "application/json"},
        "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]},
    },
    {
        "type": "event",
        "call_index": 0,
        "event_index": 0,
        "event": {"type": "http_response", "status": 200, "headers": {}},
    },
    {
        "type": "event",
        "call_index": 0,
        "event_index": 1,
        "event": {"type": "http_body", "body": {"choices": []}},
    },
    {"type": "call_end", "call_index": 0, "event_count": 2, "outcome": "complete"},
]


def http_recording(tmp_path: Path) -> Path:
    path = tmp_path / "sdk.jsonl"
    rows = [new_header("sdk"), *HTTP_CALL]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def test_verify_refuses_a_session_that_starts_with_an_http_call(tmp_path: Path) -> None:
    result = runner.invoke(app, ["recordings", "verify", str(http_recording(tmp_path))])
    assert result.exit_code == 2
    assert "call 0 is an HTTP call, so verify cannot rebuild the session" in result.stderr
    assert "Traceback" not in result.output
    assert result.stderr.count("\n") <= 2  # the error line, and the personal-data warning


def test_show_lists_an_http_call_by_its_host_and_model(tmp_path: Path) -> None:
    result = runner.invoke(app, ["recordings", "show", str(http_recording(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "call 0  api.openai.com:gpt-4o-mini  outcome: complete" in result.stdout
