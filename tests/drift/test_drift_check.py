"""``openprogram recordings drift`` against a provider that changed: one session recorded
with the real ``openai``, ``anthropic``, ``google-genai`` and ``boto3`` clients against the
loopback vendor servers, then re-sent to a :class:`DriftServer` answering as recorded, or
drifted, and each drift class asserted exactly."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import openprogram
from openprogram.errors import RecordingFileError
from openprogram.recording import read_recording
from tests.support.bedrock_server import MODEL_ID, WEATHER_TOOL, BedrockServer, bedrock_client
from tests.support.cli_runner import error_line, run
from tests.support.cli_runner import openprogram as openprogram_command
from tests.support.drift_server import (
    Add,
    Change,
    DriftServer,
    ErrorBody,
    NewEvent,
    Rechunk,
    Rename,
    Replace,
    VaryContent,
)
from tests.support.gemini_server import GeminiServer
from tests.support.sdk_server import ErrorReply, SdkServer

pytestmark = pytest.mark.filterwarnings(
    # google-genai's async client subclasses aiohttp's ClientSession, which aiohttp discourages
    "ignore:Inheritance class AiohttpClientSession:DeprecationWarning"
)

KEYS = {
    "OPENAI_API_KEY": "sk-live-openai-0123456789abcdefghij",
    "ANTHROPIC_API_KEY": "sk-ant-live-0123456789abcdefghij",
    "GOOGLE_API_KEY": "google-live-key-0123456789abcdef",
    "AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "AWS_REGION": "us-east-1",
}
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# the calls of the session, by index
CHAT, CHAT_STREAM, CHAT_ERROR, MESSAGES_STREAM, GEMINI, CONVERSE_TOOL = range(6)
"""The Chat Completions 400 is answered once (the SDK does not retry a 400)."""


def record_session(path: Path) -> None:
    import anthropic
    import openai
    from google import genai
    from google.genai import types

    with SdkServer() as sdk, GeminiServer() as gemini, BedrockServer() as bedrock:
        chat = openai.OpenAI(api_key="sk-test", base_url=sdk.openai_url, max_retries=0)
        claude = anthropic.Anthropic(api_key="sk-ant-test", base_url=sdk.base_url)
        google = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=gemini.base_url))
        aws = bedrock_client(bedrock.base_url)
        ask = [{"role": "user", "content": "weather in Paris?"}]
        with openprogram.record_replay(path, mode="record"):
            chat.chat.completions.create(model="gpt-4o-mini", messages=ask)
            stream = chat.chat.completions.create(
                model="gpt-4o-mini", messages=ask, tools=[WEATHER], stream=True
            )
            for _ in stream:
                pass
            sdk.queue(ErrorReply(400))
            with pytest.raises(openai.BadRequestError):
                chat.chat.completions.create(model="gpt-4o-mini", messages=ask, temperature=3)
            with claude.messages.stream(model="claude-x", max_tokens=64, messages=ask) as reply:
                reply.until_done()
            google.models.generate_content(model="gemini-2.5-flash", contents="hello")
            aws.converse(
                modelId=MODEL_ID,
                messages=[{"role": "user", "content": [{"text": "weather?"}]}],
                toolConfig=WEATHER_TOOL,
            )


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("drift") / "session.jsonl"
    record_session(path)
    calls = read_recording(path).calls
    assert [call.boundary for call in calls] == ["http"] * 6
    return path


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)


@pytest.fixture
def recording(session: Path, tmp_path: Path) -> Path:
    """A copy of the session: each test may check that drift left it unchanged."""
    copy = tmp_path / "session.jsonl"
    copy.write_bytes(session.read_bytes())
    return copy


def drift(
    recording: Path, changes: Sequence[Change] = (), *options: str
) -> tuple[int, dict[str, Any], DriftServer]:
    """Run ``recordings drift --json`` against a drift server; its exit code, report and the
    server (stopped)."""
    before = recording.read_bytes()
    with DriftServer(recording, changes) as server:
        rehosted = f"127.0.0.1={server.base_url}"
        result = run("drift", str(recording), "--base-url", rehosted, "--json", *options)
    assert recording.read_bytes() == before, "drift never changes the recording"
    assert result.exit_code in (0, 1), (result.output, result.exception)
    report = json.loads(result.stdout)
    return result.exit_code, report, server


def drifts(report: dict[str, Any], call: int) -> list[tuple[str, str, str]]:
    (checked,) = report["recordings"]
    entry = checked["calls"][call]
    return [(drift["class"], drift["path"], drift["what"]) for drift in entry["drift"]]


def results(report: dict[str, Any]) -> list[str]:
    return [call["result"] for call in report["recordings"][0]["calls"]]


@pytest.mark.usefixtures("keys")
def test_the_provider_answering_as_recorded_has_not_drifted(recording: Path) -> None:
    code, report, server = drift(recording)
    assert code == 0
    assert results(report) == ["unchanged"] * 6
    assert report["failed"] is False
    assert report["accepting"] is None
    assert sorted(server.served) == list(range(6)), "every call re-sent once"


@pytest.mark.usefixtures("keys")
def test_other_text_ids_timestamps_and_chunking_are_no_breaking_or_additive_drift(
    recording: Path,
) -> None:
    code, report, _ = drift(recording, [VaryContent(), Rechunk()])
    assert code == 0
    for call in range(6):
        kinds = {kind for kind, _, _ in drifts(report, call)}
        assert kinds <= {"content"}, drifts(report, call)
    paths = {path for call in range(6) for _, path, _ in drifts(report, call)}
    assert "choices[*].message.content" in paths, "another text is content drift"
    assert not {path for path in paths if path.endswith((".id", "created", "responseId"))}


@pytest.mark.usefixtures("keys")
def test_a_renamed_field_is_breaking_where_it_went_and_additive_where_it_came(
    recording: Path,
) -> None:
    renamed = Rename("choices[*].finish_reason", "stop_cause", call=CHAT)
    code, report, _ = drift(recording, [renamed])
    assert code == 1
    assert drifts(report, CHAT) == [
        ("breaking", "choices[*].finish_reason", "missing"),
        ("additive", "choices[*].stop_cause", "new field"),
    ]
    assert results(report) == ["drifted"] + ["unchanged"] * 5
    assert "re-record" in report["accepting"]


@pytest.mark.usefixtures("keys")
def test_a_changed_type_and_a_kind_never_recorded_are_breaking(recording: Path) -> None:
    changes = [
        Replace("created", "yesterday", call=CHAT),
        Replace("choices[*].finish_reason", "function_call", call=CHAT_STREAM),
        Replace("candidates[*].finishReason", "BLOCKLIST", call=GEMINI),
    ]
    code, report, _ = drift(recording, changes)
    assert code == 1
    assert drifts(report, CHAT) == [("breaking", "created", "type changed")]
    (entry,) = report["recordings"][0]["calls"][CHAT]["drift"]
    assert (entry["recorded"], entry["live"]) == ("number", "string")
    stream = report["recordings"][0]["calls"][CHAT_STREAM]["drift"]
    assert [(d["class"], d["path"], d["recorded"], d["live"]) for d in stream] == [
        (
            "breaking",
            "chat.completion.chunk: choices[*].finish_reason",
            "'tool_calls'",
            "'function_call'",
        )
    ]
    assert drifts(report, GEMINI) == [
        ("breaking", "candidates[*].finishReason", "value outside the recorded set")
    ]


@pytest.mark.usefixtures("keys")
def test_a_new_field_is_additive_and_fails_only_under_fail_on_additive(recording: Path) -> None:
    changes = [Add("$", "provider_notice", "beta", call=CHAT)]
    code, report, _ = drift(recording, changes)
    assert code == 0
    assert drifts(report, CHAT) == [("additive", "provider_notice", "new field")]
    code, report, _ = drift(recording, changes, "--fail-on", "additive")
    assert code == 1
    assert report["recordings"][0]["fail_on"] == "additive"


@pytest.mark.usefixtures("keys")
def test_an_error_for_an_answer_and_an_error_body_of_another_shape_are_breaking(
    recording: Path,
) -> None:
    changes = [
        ErrorBody(500, {"error": {"message": "overloaded"}}, call=CHAT),
        ErrorBody(400, {"detail": "bad request"}, call=CHAT_ERROR),
    ]
    code, report, _ = drift(recording, changes)
    assert code == 1
    assert drifts(report, CHAT) == [("breaking", "status", "changed")]
    error = drifts(report, CHAT_ERROR)
    assert ("breaking", "error", "missing") in error
    assert ("breaking", "detail", "new field in the error body") in error
    assert {kind for kind, _, _ in error} == {"breaking"}


@pytest.mark.usefixtures("keys")
def test_a_new_stream_event_type_is_additive(recording: Path) -> None:
    event = {"type": "content_block_citation", "index": 0, "citation": {"url": "x"}}
    changes = [NewEvent("content_block_citation", event, call=MESSAGES_STREAM)]
    code, report, _ = drift(recording, changes)
    assert code == 0
    assert drifts(report, MESSAGES_STREAM) == [
        ("additive", "content_block_citation", "new event type")
    ]


@pytest.mark.usefixtures("keys")
def test_tool_arguments_outside_the_tools_schema_are_breaking(recording: Path) -> None:
    changes = [Replace("output.message.content[*].toolUse.input", {"town": "Paris"})]
    code, report, _ = drift(recording, changes)
    assert code == 1
    assert drifts(report, CONVERSE_TOOL) == [
        ("breaking", "tool call get_weather", "argument keys outside the tool's schema"),
        ("content", "output.message.content[*].toolUse.input", "other values"),
    ]


@pytest.mark.usefixtures("keys")
def test_each_vendor_gets_its_own_credential_and_the_report_holds_none(recording: Path) -> None:
    code, report, server = drift(recording)
    assert code == 0
    by_path = {received.path.partition("?")[0]: received for received in server.received}
    chat = by_path["/v1/chat/completions"].headers
    assert chat["authorization"] == f"Bearer {KEYS['OPENAI_API_KEY']}"
    assert by_path["/v1/messages"].headers["x-api-key"] == KEYS["ANTHROPIC_API_KEY"]
    gemini = next(path for path in by_path if "generateContent" in path)
    assert by_path[gemini].headers["x-goog-api-key"] == KEYS["GOOGLE_API_KEY"]
    bedrock = next(path for path in by_path if path.startswith("/model/"))
    signature = by_path[bedrock].headers["authorization"]
    assert signature.startswith(f"AWS4-HMAC-SHA256 Credential={KEYS['AWS_ACCESS_KEY_ID']}/")
    assert "/us-east-1/bedrock/aws4_request" in signature
    assert "x-amz-date" in by_path[bedrock].headers
    text = json.dumps(report)
    assert not [name for name, value in KEYS.items() if len(value) > 12 and value in text]


def test_a_call_without_a_key_is_skipped_never_sent_unauthenticated(
    recording: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEYS["ANTHROPIC_API_KEY"])
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # botocore would ask 169.254.169.254
    code, report, server = drift(recording)
    assert code == 0
    calls = report["recordings"][0]["calls"]
    assert [call["result"] for call in calls] == [
        "skipped", "skipped", "skipped", "unchanged", "skipped", "skipped"
    ]  # fmt: skip
    assert calls[CHAT]["reason"] == "no openai key: set OPENAI_API_KEY (or pass --header)"
    assert calls[GEMINI]["reason"] == (
        "no google key: set GOOGLE_API_KEY or GEMINI_API_KEY (or pass --header)"
    )
    assert calls[CONVERSE_TOOL]["reason"].startswith("no AWS credentials")
    assert [received.path for received in server.received] == ["/v1/messages"]
    assert report["recordings"][0]["counts"]["skipped"] == 5


@pytest.mark.usefixtures("keys")
def test_the_text_report_names_call_path_class_and_both_sides(recording: Path) -> None:
    change = Replace("choices[*].finish_reason", "function_call", call=CHAT_STREAM)
    with DriftServer(recording, [change]) as server:
        result = run("drift", str(recording), "--base-url", f"127.0.0.1={server.base_url}")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    port = read_recording(recording).calls[CHAT_STREAM].request["url"].split("/")[2]
    assert (
        f"call 1 POST {port}/v1/chat/completions: breaking: chat.completion.chunk: "
        "choices[*].finish_reason "
        "value outside the recorded set: 'tool_calls' → 'function_call'"
    ) in lines
    assert lines[-2] == f"✘ {recording}: 1 call drifted (1 breaking); 5 unchanged"
    assert lines[-1].startswith("note: the recording is unchanged; to accept the provider's")


@pytest.mark.usefixtures("keys")
def test_a_saved_snapshot_is_shown_and_diffed_and_replay_refuses_it(
    recording: Path, tmp_path: Path
) -> None:
    snapshot = tmp_path / "live.jsonl"
    code, _, _ = drift(recording, [VaryContent(call=CHAT)], "--save", str(snapshot))
    assert code == 0
    assert stat.S_IMODE(snapshot.stat().st_mode) == 0o600
    assert not [value for value in KEYS.values() if value in snapshot.read_text()]
    header = json.loads(snapshot.read_text().splitlines()[0])
    assert header["drift_snapshot"]["recording"] == str(recording)
    assert header["drift_snapshot"]["live_calls"] == list(range(6))
    shown = run("show", str(snapshot))
    assert shown.exit_code == 0, shown.output
    compared = run("diff", str(recording), str(snapshot))
    assert compared.exit_code == 1, "the live text differs from the recorded one"
    with (
        pytest.raises(RecordingFileError, match="is a drift snapshot"),
        openprogram.record_replay(snapshot, mode="replay"),
    ):
        pass


def marked_as_a_snapshot(recording: Path, snapshot: Path) -> Path:
    lines = recording.read_text().splitlines()
    header = json.loads(lines[0])
    header["features"].append("drift_snapshot")
    header["drift_snapshot"] = {"recording": "x.jsonl", "taken_at": "2026-12-04T00:00:00Z"}
    snapshot.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    return snapshot


@pytest.mark.parametrize(
    "command",
    [
        ["recordings", "replay", "{path}"],
        ["recordings", "verify", "{path}", "--", sys.executable, "-c", "open('ran', 'w')"],
        ["exec", "--replay", "{path}", "--", sys.executable, "-c", "open('ran', 'w')"],
        ["recordings", "drift", "{path}"],
    ],
    ids=["replay", "verify -- COMMAND", "exec --replay", "drift"],
)
def test_every_way_into_replay_refuses_a_snapshot_before_anything_runs(
    recording: Path, tmp_path: Path, command: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    snapshot = marked_as_a_snapshot(recording, tmp_path / "snap.jsonl")
    result = openprogram_command(*(part.format(path=snapshot) for part in command))
    assert result.exit_code == 2
    assert error_line(result) == (
        f"error: {snapshot}: it is a drift snapshot (the live answers of x.jsonl, taken "
        "2026-12-04T00:00:00Z), which replay refuses: replay the recording itself, or "
        "re-record it to accept the new answers"
    )
    assert not (tmp_path / "ran").exists()


def test_bad_options_exit_2_and_never_echo_a_header(recording: Path) -> None:
    result = run("drift", str(recording), "--fail-on", "everything")
    assert result.exit_code == 2
    assert "--fail-on takes breaking, additive or content" in error_line(result)
    result = run("drift", str(recording), "--base-url", "openai=http://127.0.0.1:9/v1")
    assert result.exit_code == 2
    assert "takes an origin" in error_line(result)
    result = run("drift", str(recording), "--header", "Authorization Bearer sk-abcdefghijklmnop")
    assert result.exit_code == 2
    assert "sk-abcdefghijklmnop" not in result.output
