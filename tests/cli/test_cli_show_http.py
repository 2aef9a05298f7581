"""``openprogram recordings show`` on HTTP calls: the exchange line, the conversation of the
model APIs it knows, the same fields in ``--json``, control characters escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import run
from tests.support.http_call_rows import write_calls
from tests.support.recording_rows import Row
from tests.support.vendor_http_rows import (
    CHAT_URL,
    QUESTION,
    RATE_LIMIT_MESSAGE,
    chat_stream_call,
    mixed_session,
    odd_calls,
)

REFUSED = "httpx2.ConnectError: [Errno 111] Connection refused"


@pytest.fixture
def session() -> Path:
    """A recording of both boundaries: a provider call, then SDK traffic and its failures."""
    return write_calls(recordings_dir() / "session.jsonl", *mixed_session())


def calls_of(stdout: str) -> dict[int, list[str]]:
    """Each call's lines, by call index."""
    calls: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        if line.startswith("call "):
            current = calls.setdefault(int(line.split()[1]), [])
        if calls:
            current.append(line)
    return calls


def test_each_http_call_shows_its_exchange_and_its_conversation(session: Path) -> None:
    result = run("show", "session")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{session}: 9 calls"
    calls = calls_of(result.stdout)
    assert calls[0] == ["call 0  echo:echo  outcome: complete", "  > user: hi", "  < echo:hi"]
    assert calls[1][0] == (
        "call 1  api.openai.com:gpt-4o-mini  stop reason: tool_calls · tokens: 82 in, 27 out"
    )
    assert calls[1][1].startswith(f"  POST {CHAT_URL} → 200, 10 SSE events (")
    assert calls[1][2:] == [
        f"  > user: {QUESTION}",
        "  < Let me check the weather.",
        '  < tool call get_weather {"city": "Paris"}',
    ]
    assert calls[2][0].endswith("stop reason: completed · tokens: 62 in, 23 out")
    assert "/v1/responses → 200, 15 SSE events" in calls[2][1]
    assert calls[2][3:] == ["  < I'll look that up.", '  < tool call get_weather {"city": "Paris"}']
    assert calls[3][0].startswith(
        "call 3  api.anthropic.com:claude-sonnet-4-5  stop reason: tool_use"
    )
    assert calls[3][3:] == [
        "  … thinking: The user wants the weather in Paris; I should call get_weather.",
        "  < I'll check the current weather in Paris.",
        '  < tool call get_weather {"city": "Paris"}',
    ]


def test_failed_http_calls_say_how_they_failed(session: Path) -> None:
    calls = calls_of(run("show", "session").stdout)

    assert calls[4][1].startswith(f"  POST {CHAT_URL} → 429, JSON body (")
    assert calls[4][3] == f"  ! HTTP 429: rate_limit_exceeded: {RATE_LIMIT_MESSAGE}"
    assert calls[5] == [
        "call 5  api.openai.com:gpt-4o-mini  outcome: error",
        f"  POST {CHAT_URL} → connection error: {REFUSED}",
        f"  > user: {QUESTION}",
    ]
    assert calls[6][1].endswith(
        "→ 200, 2 SSE events (632 B), then httpx.RemoteProtocolError: peer closed connection"
    )
    assert calls[6][2:] == [f"  > user: {QUESTION}", "  < Let me check"]
    assert calls[8][0].endswith("TRUNCATED after 10 events")


def test_an_api_it_does_not_know_shows_method_url_status_and_size(session: Path) -> None:
    calls = calls_of(run("show", "session").stdout)

    assert calls[7] == [
        "call 7  GET api.example.com/v1/models  outcome: complete",
        "  GET https://api.example.com/v1/models → 200, JSON body (64 B)",
    ]


def test_json_carries_the_same_fields(session: Path) -> None:
    result = run("show", "session", "--json")

    assert result.exit_code == 0, result.stderr
    calls = json.loads(result.stdout)["calls"]
    assert (calls[0]["boundary"], calls[0]["http"]) == ("provider", None)
    chat = calls[1]
    assert chat["boundary"] == "http"
    assert chat["http"] == {
        "method": "POST",
        "url": CHAT_URL,
        "status": 200,
        "api": "openai-completions",
        "body": "sse",
        "sse_events": 10,
        "body_size": chat["http"]["body_size"],
        "transport_error": None,
    }
    assert chat["http"]["body_size"] > 2000  # the data of ten chunks
    assert (chat["input_role"], chat["input_text"]) == ("user", QUESTION)
    assert chat["reply_text"] == "Let me check the weather."
    assert chat["tool_calls"] == [{"name": "get_weather", "arguments": {"city": "Paris"}}]
    assert (chat["stop_reason"], chat["usage"]["prompt_tokens"]) == ("tool_calls", 82)
    refused = calls[5]
    assert refused["http"]["status"] is None
    assert refused["http"]["transport_error"] == refused["error"]
    assert refused["error"] == REFUSED
    assert calls[3]["thinking_text"].startswith("The user wants the weather")


def test_one_http_call(session: Path) -> None:
    result = run("show", "session", "--call", "7")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[0] == f"{session}: call 7 of 9"
    assert result.stdout.splitlines()[2:] == [
        "call 7  GET api.example.com/v1/models  outcome: complete",
        "  GET https://api.example.com/v1/models → 200, JSON body (64 B)",
    ]


def escaped(rows: list[Row]) -> list[Row]:
    """A Chat Completions stream whose URL, input, reply and tool call hold control characters."""
    rows[0]["url"] = CHAT_URL + "?q=\x1b]0;owned\x07"
    rows[0]["body"]["messages"][-1]["content"] = "a\x1b[2Jb\u202ec"
    rows[3]["event"]["data"]["choices"][0]["delta"]["content"] = (
        "\x1b[31mred\tnext"  # 'Let me check'
    )
    rows[5]["event"]["data"]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] = "x\x9b"
    return rows


def test_control_characters_are_escaped_in_human_output_only() -> None:
    write_calls(recordings_dir() / "escaped.jsonl", escaped(chat_stream_call(0)))

    result = run("show", "escaped")

    assert result.exit_code == 0, result.stderr
    for raw in ("\x1b", "\x07", "\u202e", "\x9b", "\t"):
        assert raw not in result.stdout
    assert "?q=\\x1b]0;owned\\x07 → 200" in result.stdout
    assert "  > user: a\\x1b[2Jb\\u202ec" in result.stdout
    assert "  < \\x1b[31mred\\tnext the weather." in result.stdout
    assert "  < tool call x\\x9b {" in result.stdout
    shown = json.loads(run("show", "escaped", "--json").stdout)["calls"][0]
    assert shown["input_text"] == "a\x1b[2Jb\u202ec"
    assert shown["http"]["url"] == CHAT_URL + "?q=\x1b]0;owned\x07"


@pytest.mark.parametrize("what", list(odd_calls()))
def test_odd_shapes_are_shown_without_an_error(what: str) -> None:
    write_calls(recordings_dir() / "odd.jsonl", odd_calls()[what])

    for arguments in (("show", "odd"), ("show", "odd", "--json")):
        result = run(*arguments)
        assert result.exit_code == 0, result.stderr
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stderr.count("\n") == 1  # the privacy warning, nothing else
    assert "Traceback" not in result.output
