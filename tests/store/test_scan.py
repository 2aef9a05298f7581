"""``scan_recording``: secrets a recording still holds — cut across deltas, left by older
rules, or the user's own — found where they are, and fixed so the recording replays."""

from __future__ import annotations

import asyncio
from pathlib import Path

import orjson
import pytest

from openprogram.errors import RecordingFileError
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import RecordingProvider, ReplayProvider
from openprogram.recording.redaction import REDACTION_VERSION
from openprogram.recording.token_shapes import PLACEHOLDER
from openprogram.recording.user_redaction import UserRedaction
from openprogram.recording.writer import close_recording_writers
from openprogram.store.scan import Finding, scan_recording, scan_targets
from tests.support.http_exchange_rows import http_call, response, sse
from tests.support.recording_rows import (
    call_rows,
    header,
    read_rows,
    text_events,
    write_rows,
)
from tests.support.secret_samples import AWS_ACCESS_KEY_ID, GITHUB_TOKEN, PASSWORD
from tests.support.split_stream import SplitStreamProvider, run_session

TEXT_PIECES = ["use ", GITHUB_TOKEN[:12], GITHUB_TOKEN[12:] + " now"]
ARGUMENT_PIECES = ['{"cmd": "login --pass', f"word={PASSWORD[:3]}", f'{PASSWORD[3:]} -v"}}']


def record_split(path: Path) -> list[str]:
    provider = RecordingProvider(SplitStreamProvider(TEXT_PIECES, ARGUMENT_PIECES), path)
    seen = asyncio.run(run_session(provider))
    close_recording_writers()
    return seen


def events_of(path: Path, call_index: int) -> list[dict[str, object]]:
    return [
        row["event"]
        for row in read_rows(path)
        if row["type"] == "event" and row["call_index"] == call_index
    ]


def test_a_clean_recording_has_no_findings(tmp_path: Path) -> None:
    path = tmp_path / "clean.jsonl"
    provider = RecordingProvider(SplitStreamProvider(["all ", "clear"], ['{"cmd": "ls"}']), path)
    asyncio.run(run_session(provider))
    close_recording_writers()
    before = path.read_bytes()
    assert scan_recording(path, fix=True).findings == []
    assert path.read_bytes() == before


def test_a_credential_cut_across_deltas_is_found_in_the_joined_text(tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    record_split(path)
    text = path.read_text()
    assert GITHUB_TOKEN not in text  # whole in no row: the recorder could not see it …
    assert GITHUB_TOKEN[:12] in text  # … so its pieces are still in the deltas

    findings = scan_recording(path).findings

    assert [str(finding) for finding in findings] == [
        f"{path}:6: call 0, field event[3..4].delta: github-token",
        f"{path}:11: call 0, field event[8..9].delta: password-assignment",
    ]
    assert findings[0] == Finding(path, 6, 0, "event[3..4].delta", "github-token")


def test_fix_replaces_the_pieces_and_the_recording_replays(tmp_path: Path) -> None:
    path = tmp_path / "split.jsonl"
    recorded = record_split(path)
    mode = path.stat().st_mode

    result = scan_recording(path, fix=True)

    assert result.fixed
    assert len(result.findings) == 2
    assert path.stat().st_mode == mode
    text = path.read_text()
    assert GITHUB_TOKEN[:12] not in text
    assert PASSWORD[:3] + PASSWORD[3:] not in text
    assert f"={PASSWORD[:3]}" not in text
    events = events_of(path, 0)
    deltas = [e["delta"] for e in events if e["type"] == "text_delta"]
    assert deltas == ["use ", PLACEHOLDER, " now"]
    arguments = "".join(str(e["delta"]) for e in events if e["type"] == "toolcall_delta")
    (end,) = [e["tool_call"] for e in events if e["type"] == "toolcall_end"]
    assert (
        orjson.loads(arguments)
        == end["arguments"]
        == {  # type: ignore[index]
            "cmd": f"login --password={PLACEHOLDER} -v"
        }
    )
    assert scan_recording(path).findings == []
    assert read_recording(path).header["redaction_version"] == REDACTION_VERSION

    replay = ReplayProvider(path)
    replayed = asyncio.run(run_session(replay))
    replay.assert_consumed()
    assert replayed[0] == f"use {PLACEHOLDER} now" != recorded[0]


def test_secrets_left_by_older_rules_are_found_and_fixed_and_replay(tmp_path: Path) -> None:
    """A recording made before the rules knew AWS keys: the key is in the request and in the
    reply; after the fix the live request (holding the key) still matches."""
    path = tmp_path / "older.jsonl"
    prompt = f"deploy with {AWS_ACCESS_KEY_ID}"
    provider = RecordingProvider(SplitStreamProvider(["ok"], ['{"cmd": "ls"}']), path)
    asyncio.run(run_session(provider, prompt))
    close_recording_writers()
    rows = read_rows(path)
    rows[0]["redaction_version"] = 2
    for row in rows:  # as version 2 wrote it: the key as it was (call 1 keeps call 0's)
        if row["type"] == "request" and "base" not in row:
            row["context"]["messages"][0]["content"] = prompt
    write_rows(path, rows)

    findings = scan_recording(path, fix=True).findings

    assert [(f.line, f.call_index, f.field, f.kind) for f in findings] == [
        (2, 0, "context.messages[0].content", "aws-access-key-id"),
        (12, 1, "context.messages[0].content", "aws-access-key-id"),
    ]
    assert AWS_ACCESS_KEY_ID not in path.read_text()
    replay = ReplayProvider(path)
    asyncio.run(run_session(replay, prompt))
    replay.assert_consumed()


def test_the_user_redaction_is_found_and_fixed_and_named_in_the_header(tmp_path: Path) -> None:
    path = tmp_path / "user.jsonl"
    provider = RecordingProvider(SplitStreamProvider(["order AC", "ME-123456 ok"], ["{}"]), path)
    asyncio.run(run_session(provider))
    close_recording_writers()
    user = UserRedaction.of(patterns=[r"ACME-\d{6}"])
    assert user is not None

    findings = scan_recording(path, user=user, fix=True).findings

    assert {(f.field, f.kind) for f in findings} == {
        ("event[2..3].delta", "user-pattern"),
        ("event[4].content", "user-pattern"),
        ("event[8].message.content[0].text", "user-pattern"),
        ("context.messages[1].content[0].text", "user-pattern"),
    }
    assert "ACME-123456" not in path.read_text()
    assert read_rows(path)[0]["redaction_fingerprint"] == user.fingerprint
    replay = ReplayProvider(path, redaction=user)
    asyncio.run(run_session(replay))
    replay.assert_consumed()


def test_an_http_stream_is_joined_per_block(tmp_path: Path) -> None:
    """A Chat Completions stream whose content, and a tool call's arguments, carry a token
    cut across chunks; and an Anthropic stream's text."""

    def chunk(delta: dict[str, object]) -> dict[str, object]:
        return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}

    def arguments(text: str) -> dict[str, object]:
        return chunk({"tool_calls": [{"index": 0, "function": {"arguments": text}}]})

    def block_delta(text: str) -> dict[str, object]:
        return {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": text},
        }

    chat = [
        response(),
        sse(chunk({"content": "key " + GITHUB_TOKEN[:10]})),
        sse(chunk({"content": GITHUB_TOKEN[10:]})),
        sse(arguments('{"k": "' + AWS_ACCESS_KEY_ID[:8])),
        sse(arguments(AWS_ACCESS_KEY_ID[8:] + '"}')),
        sse("[DONE]"),
    ]
    anthropic = [
        response(),
        sse(block_delta(GITHUB_TOKEN[:20])),
        sse(block_delta(GITHUB_TOKEN[20:])),
    ]
    path = tmp_path / "http.jsonl"
    write_rows(
        path,
        [
            header("http"),
            *http_call(0, "POST", "https://api.openai.com/v1/chat/completions", {"x": 1}, chat),
            *http_call(1, "POST", "https://api.anthropic.com/v1/messages", {"x": 1}, anthropic),
        ],
    )

    findings = scan_recording(path, fix=True).findings

    assert [(f.call_index, f.field, f.kind) for f in findings] == [
        (0, "event[1..2].data.choices[0].delta.content", "github-token"),
        (
            0,
            "event[3..4].data.choices[0].delta.tool_calls[0].function.arguments",
            "aws-access-key-id",
        ),
        (1, "event[1..2].data.delta.text", "github-token"),
    ]
    text = path.read_text()
    assert GITHUB_TOKEN[:10] not in text
    assert AWS_ACCESS_KEY_ID[:8] not in text
    assert scan_recording(path).findings == []


def test_an_unreadable_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(RecordingFileError) as missing:
        scan_recording(tmp_path / "none.jsonl")
    assert str(tmp_path / "none.jsonl") in str(missing.value)
    broken = tmp_path / "broken.jsonl"
    broken.write_text("{not json\n")
    with pytest.raises(RecordingFileError, match=r"broken\.jsonl, line 1"):
        scan_recording(broken)


def test_the_targets_are_files_folders_names_or_the_default_folder(tmp_path: Path) -> None:
    store = tmp_path / "store"
    folder = tmp_path / "project" / "tests" / "recordings"
    (folder / "mod").mkdir(parents=True)
    (folder / ".hidden").mkdir()
    for path in (folder / "mod" / "a.jsonl", folder / "b.jsonl", folder / ".hidden" / "c.jsonl"):
        path.write_text("")
    project = tmp_path / "project"
    relative = Path("tests", "recordings")
    assert scan_targets([], cwd=project, store=store) == [
        relative / "b.jsonl",
        relative / "mod" / "a.jsonl",
    ]
    assert scan_targets([], cwd=tmp_path, store=store) == []  # no tests/recordings: the store
    assert scan_targets(["demo"], cwd=project, store=store) == [store / "demo.jsonl"]
    assert scan_targets([str(folder / "mod")], cwd=project, store=store) == [
        folder / "mod" / "a.jsonl"
    ]


def test_tape_entries_are_scanned_and_fixed_and_kept(tmp_path: Path) -> None:
    import openprogram

    @openprogram.taped(name="lookup")
    def lookup(user: str) -> dict[str, str]:
        return {"user": user, "note": "plain"}

    path = tmp_path / "tapes.jsonl"
    with openprogram.record_replay(path):
        lookup("ada")
        lookup("bob")
    rows = read_rows(path)
    tape_rows = [row for row in rows if row["type"] == "tape"]
    tape_rows[1]["result"]["note"] = f"token {GITHUB_TOKEN}"  # planted, as older rules left it
    write_rows(path, rows)
    second_line = 1 + next(i for i, row in enumerate(rows) if row is tape_rows[1])

    found = scan_recording(path, fix=True)
    assert [str(finding) for finding in found.findings] == [
        f"{path}:{second_line}: tape lookup[1], field result.note: github-token"
    ]
    assert GITHUB_TOKEN not in path.read_text()
    fixed = read_recording(path)
    assert [entry.label for entry in fixed.tapes] == ["lookup[0]", "lookup[1]"]
    assert fixed.tapes[1].result == {"user": "bob", "note": f"token {PLACEHOLDER}"}
    assert scan_recording(path).findings == []
    with openprogram.record_replay(path, mode="replay"):
        assert lookup("ada") == {"user": "ada", "note": "plain"}
        assert lookup("bob") == {"user": "bob", "note": f"token {PLACEHOLDER}"}


def test_a_stream_index_that_is_no_number_is_joined_by_its_value(tmp_path: Path) -> None:
    """The server's JSON may put an object where a choice's index belongs: the reader, show
    and replay take it, and so does scan (it once failed with a traceback and exit 1, which
    for scan means a secret was found)."""
    odd = {"weird": [1]}

    def chunk(text: str) -> dict[str, object]:
        return {"choices": [{"index": odd, "delta": {"content": text}}]}

    chat = [response(), sse(chunk("key " + GITHUB_TOKEN[:10])), sse(chunk(GITHUB_TOKEN[10:]))]
    path = tmp_path / "odd.jsonl"
    write_rows(
        path,
        [
            header("http"),
            *http_call(0, "POST", "https://api.openai.com/v1/chat/completions", {"x": 1}, chat),
        ],
    )

    findings = scan_recording(path).findings

    assert [(f.call_index, f.kind) for f in findings] == [(0, "github-token")]


@pytest.mark.parametrize("damage", ["message", "content_index"])
def test_a_provider_event_replay_refuses_is_refused_by_scan_too(
    damage: str, tmp_path: Path
) -> None:
    events = text_events("hi", "there")
    if damage == "message":
        events[-1] = {"type": "done", "reason": "stop", "message": 1.5}
    else:
        for row in events[1:5]:
            row["content_index"] = [0]
    path = tmp_path / "bad.jsonl"
    write_rows(path, [header(), *call_rows(0, events)])

    with pytest.raises(RecordingFileError) as refused:
        scan_recording(path)
    with pytest.raises(RecordingFileError) as by_replay:
        read_recording(path)
    assert str(refused.value) == str(by_replay.value)
