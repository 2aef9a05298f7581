"""The secrets rule: model-produced content and the conversation are redacted only by known
key values and key shapes, identically in every row; field-name rules apply to what the
caller sends as configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.errors import ReplayMismatch
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    RecordingProvider,
    ReplayProvider,
    SimpleStreamOptions,
    Tool,
    ToolResultMessage,
    UserMessage,
    complete_simple,
    provider_scope,
    register_api_provider,
)
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.token_shapes import PLACEHOLDER
from tests.support import secret_samples
from tests.support.recording_rows import read_rows
from tests.support.tool_sessions import recording_into

KNOWN = "opk-known-key-0123456789"
SHAPED = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123"
BEARER = "Bearer abcdefghijklmnopqrstuvwxyz"

READ_FILE = Tool(
    name="read_file",
    description="Read a file.",
    parameters={
        "type": "object",
        "properties": {"path": {"type": "string"}, "token": {"type": "string"}},
    },
)


def redactor() -> SecretRedactor:
    return SecretRedactor([KNOWN])


# --- the rule, on values ---------------------------------------------------------------------


def test_model_output_keeps_secret_named_fields_but_loses_shapes_and_known_values() -> None:
    arguments = {"password": "hunter2hunter2", "token": 12345, "auth": BEARER, "k": KNOWN}
    assert redactor().redact_model_output({"arguments": arguments}) == {
        "arguments": {
            "password": "hunter2hunter2",
            "token": 12345,
            "auth": f"Bearer {PLACEHOLDER}",
            "k": PLACEHOLDER,
        }
    }


def test_a_request_redacts_configuration_by_name_and_the_conversation_by_value_only() -> None:
    request = {
        "model": {"id": "m", "headers": {"Authorization": "opaque-value", "X-Trace": "keep"}},
        "context": {
            "system_prompt": f"key {SHAPED}",
            "messages": [
                {
                    "role": "user",
                    "content": f'/tool read_file {{"password": "pw-12345678", "k": "{KNOWN}"}}',
                },
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "toolCall",
                            "id": "t1",
                            "name": "read_file",
                            "arguments": {"password": "pw-12345678", "key": SHAPED},
                        }
                    ],
                },
                {"role": "toolResult", "content": [{"type": "text", "text": "token: abc"}]},
            ],
            "tools": [{"name": "t", "parameters": {"token": "default-value", "x": {"secret": 1}}}],
        },
        "options": {"metadata": {"session_key": "s-1"}, "headers": {"Cookie": "c=1"}},
    }
    redacted = redactor().redact_request(request)
    assert redacted["model"]["headers"] == {"Authorization": PLACEHOLDER, "X-Trace": "keep"}
    assert redacted["options"] == {
        "metadata": {"session_key": PLACEHOLDER},
        "headers": {"Cookie": PLACEHOLDER},
    }
    assert redacted["context"]["tools"][0]["parameters"] == {
        "token": PLACEHOLDER,
        "x": {"secret": PLACEHOLDER},
    }
    assert redacted["context"]["system_prompt"] == f"key {PLACEHOLDER}"
    user, assistant, tool_result = redacted["context"]["messages"]
    assert user["content"] == f'/tool read_file {{"password": "pw-12345678", "k": "{PLACEHOLDER}"}}'
    assert assistant["content"][0]["arguments"] == {"password": "pw-12345678", "key": PLACEHOLDER}
    assert tool_result["content"][0]["text"] == "token: abc"
    assert request["context"]["messages"][1]["content"][0]["arguments"]["key"] == SHAPED


def test_redacting_a_request_twice_changes_nothing() -> None:
    request = {
        "model": {"headers": {"api-key": KNOWN}},
        "context": {"messages": [{"role": "user", "content": f"{BEARER} {KNOWN} {SHAPED}"}]},
        "options": {},
    }
    once = redactor().redact_request(request)
    assert redactor().redact_request(once) == once


# --- the rule, in a recording ----------------------------------------------------------------


async def record_tool_call(path: Path, arguments: dict[str, Any]) -> Context:
    context = Context(
        messages=[UserMessage(content=f"/tool read_file {orjson.dumps(arguments).decode()}")],
        tools=[READ_FILE],
    )
    recorder = RecordingProvider(EchoProvider(), path)
    _ = [event async for event in recorder.stream_simple(ECHO_MODEL, context)]
    return context


async def test_delta_end_and_done_rows_carry_identical_redacted_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("READ_FILE_API_KEY", KNOWN)
    path = tmp_path / "r.jsonl"
    arguments = {"password": "hunter2hunter2", "path": "/etc/x", "auth": BEARER, "k": KNOWN}
    await record_tool_call(path, arguments)
    events = [row["event"] for row in read_rows(path) if row["type"] == "event"]
    delta = orjson.loads("".join(e["delta"] for e in events if e["type"] == "toolcall_delta"))
    (end,) = [e["tool_call"]["arguments"] for e in events if e["type"] == "toolcall_end"]
    (done,) = [e["message"]["content"][0]["arguments"] for e in events if e["type"] == "done"]
    expected = {
        "password": "hunter2hunter2",
        "path": "/etc/x",
        "auth": f"Bearer {PLACEHOLDER}",
        "k": PLACEHOLDER,
    }
    assert delta == end == done == expected
    assert KNOWN not in path.read_text()


async def test_replay_hands_the_tool_the_arguments_the_model_produced(tmp_path: Path) -> None:
    """A secret-named argument is not a secret the recording removes: the tool replays
    with the value the model gave, and the session matches to the end."""
    path = tmp_path / "r.jsonl"
    with recording_into(path):
        recorded = await run_tool_session({"password": "hunter2hunter2"})
    replay = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", replay)
        replayed = await run_tool_session({"password": "hunter2hunter2"})
    replay.assert_consumed()
    assert replayed == recorded == "echo:got hunter2hunter2"


async def run_tool_session(arguments: dict[str, Any], *, suffix: str = "") -> str:
    """Ask for read_file, run it (it echoes its password argument, then ``suffix``), return
    the reply."""
    context = Context(
        messages=[UserMessage(content=f"/tool read_file {orjson.dumps(arguments).decode()}")],
        tools=[READ_FILE],
    )
    first = await complete_simple(ECHO_MODEL, context, SimpleStreamOptions())
    context.messages.append(first)
    call = first.tool_calls[0]
    given = str(call.arguments.get("password") or call.arguments.get("key"))
    result = f"got {given}" if PLACEHOLDER not in given else f"refused {len(given)} chars"
    result += suffix
    context.messages.append(
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=result)
    )
    second = await complete_simple(ECHO_MODEL, context, SimpleStreamOptions())
    return second.text


async def test_a_mismatch_after_a_removed_secret_says_so_on_a_third_line(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with recording_into(path):
        await run_tool_session({"key": SHAPED})
    replay = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", replay)
        with pytest.raises(ReplayMismatch) as info:
            await run_tool_session({"key": SHAPED})
    lines = str(info.value).split("\n")
    assert lines[0] == "replay mismatch at call 1, field context.messages[2].content[0].text:"
    assert lines[1] == "recorded 'got [secret removed]', incoming 'refused 16 chars'"
    assert lines[2] == (
        "note: tool call read_file (id echo_call_1, call 0) received '[secret removed]' in "
        "its arguments: the recording removed a secret-shaped value the model produced"
    )
    assert len(lines) == 3
    assert info.value.note == lines[2].removeprefix("note: ")


async def test_an_ordinary_mismatch_has_no_note(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with recording_into(path):
        await run_tool_session({"password": "one-password"})
    replay = ReplayProvider(path)
    with provider_scope():
        register_api_provider("echo", replay)
        with pytest.raises(ReplayMismatch) as info:
            await run_tool_session({"password": "one-password"}, suffix="!")
    assert (info.value.call_index, info.value.note) == (1, None)
    assert len(str(info.value).split("\n")) == 2


SECRET_TEXTS = st.sampled_from(
    [
        secret_samples.GITHUB_TOKEN,
        secret_samples.AWS_ACCESS_KEY_ID,
        secret_samples.SLACK_TOKEN,
        secret_samples.GOOGLE_API_KEY,
        secret_samples.JWT,
        secret_samples.PEM,
        secret_samples.OPENAI_KEY,
        f"password={secret_samples.PASSWORD}",
        f"Bearer {secret_samples.OPENAI_KEY}",
        "https://user:pa55word@example.test/x",
        "the known value 0123456789abcdef",
        "fox ",
        "",
    ]
)
TEXTS = SECRET_TEXTS | st.text(max_size=6) | st.builds("{} {}".format, SECRET_TEXTS, SECRET_TEXTS)
OUTPUTS = st.recursive(
    st.none() | st.integers() | st.booleans() | TEXTS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXTS, children, max_size=3),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(OUTPUTS, st.booleans())
def test_redacting_parsed_output_by_its_text_is_redacting_it_value_by_value(
    value: Any, ascii_only: bool
) -> None:
    redactor = SecretRedactor(["0123456789abcdef"])
    text = json.dumps(value, ensure_ascii=ascii_only, separators=(",", ":"))
    assert redactor.redact_parsed_output(value, text) == redactor.redact_model_output(value)
    assert redactor.redact_parsed_output(value, text.encode()) == redactor.redact_model_output(
        value
    )
