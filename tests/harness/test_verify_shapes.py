"""``recordings verify`` on a recording whose call 0 has an unexpected shape: one line naming
the file, the call and the field, exit 2, never a traceback."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import Result

from openprogram.agent.file_tools import builtin_tools
from openprogram.errors import VerifySetupError
from openprogram.recording.reader import read_recording
from openprogram.recording.rewriting import call_rows_of
from tests.support.cli_runner import run
from tests.support.tool_sessions import record_agent_session

Row = dict[str, Any]


@pytest.fixture
def recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real one-tool session (read_file, then the reply): two calls."""
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "README.md").write_text("hello\n")
    monkeypatch.chdir(folder)
    path = folder / "session.jsonl"
    record_agent_session(
        path,
        '/tool read_file {"path": "README.md"}',
        system_prompt="You read files.",
        tools=builtin_tools(folder),
    )
    return path


def with_call_0(path: Path, change: Callable[[Row], None], *, raw: bytes | None = None) -> Path:
    """A copy of the recording with call 0's request row changed (every request stored
    whole, so that call 1 does not depend on call 0's)."""
    recording = read_recording(path)
    rows = [recording.header]
    for call in recording.calls:
        rows.extend(call_rows_of(call, call.call_index))
    lines = [orjson.dumps(row) for row in rows]
    for number, row in enumerate(rows):
        if row["type"] == "request" and row["call_index"] == 0:
            change(row)
            lines[number] = orjson.dumps(row)
    changed = path.with_name("changed.jsonl")
    data = b"\n".join(lines) + b"\n"
    changed.write_bytes(data if raw is None else data.replace(b'"max_tokens":4096', raw))
    return changed


def verify(*args: str) -> Result:
    return run("verify", *args)


def rename_model_id(row: Row) -> None:
    row["model"]["ident"] = row["model"].pop("id")


def metadata_list(row: Row) -> None:
    row["options"]["metadata"] = []


def tool_without_name(row: Row) -> None:
    del row["context"]["tools"][0]["name"]


def tool_not_an_object(row: Row) -> None:
    row["context"]["tools"][1] = "read_file"


def messages_not_a_list(row: Row) -> None:
    row["context"]["messages"] = "hi"


def message_not_an_object(row: Row) -> None:
    row["context"]["messages"][0] = 7


def content_a_number(row: Row) -> None:
    row["context"]["messages"][0]["content"] = 5


def system_prompt_a_list(row: Row) -> None:
    row["context"]["system_prompt"] = ["a"]


def nothing(row: Row) -> None:
    pass


CASES = [
    (rename_model_id, None, "model.id"),
    (metadata_list, None, "options.metadata"),
    (tool_without_name, None, "context.tools[0].name"),
    (tool_not_an_object, None, "context.tools[1]"),
    (messages_not_a_list, None, "context.messages"),
    (message_not_an_object, None, "context.messages[0]"),
    (content_a_number, None, "context.messages[0].content"),
    (system_prompt_a_list, None, "context.system_prompt"),
    (nothing, b'"max_tokens":' + b"9" * 200, "model.max_tokens"),  # a 200-digit integer
]


@pytest.mark.parametrize(
    ("change", "raw", "field"),
    CASES,
    ids=[change.__name__ if raw is None else "a_200_digit_integer" for change, raw, _ in CASES],
)
def test_an_odd_shape_in_call_0_is_one_line_naming_file_call_and_field(
    recorded: Path, change: Callable[[Row], None], raw: bytes | None, field: str
) -> None:
    path = with_call_0(recorded, change, raw=raw)

    result = verify(str(path))

    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {path}: call 0, field {field}: ")
    assert result.stdout == ""


def test_the_error_carries_the_facts(recorded: Path) -> None:
    from openprogram.harness.verification import verify_recording

    path = with_call_0(recorded, metadata_list)

    with pytest.raises(VerifySetupError) as info:
        verify_recording(path)

    assert (info.value.path, info.value.call_index, info.value.field) == (
        path,
        0,
        "options.metadata",
    )


def test_one_call_is_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "one.jsonl"
    record_agent_session(path, "hi")

    result = verify(str(path))

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == f"✔ {path}: 1 call replayed and matched"


@pytest.mark.parametrize(
    ("tools", "said"),
    [
        (["shout"], "offers tool shout that is neither built in nor given"),
        (["shout", "whisper"], "offers tools shout, whisper that are neither built in nor given"),
    ],
)
def test_missing_tools_are_counted_in_words(recorded: Path, tools: list[str], said: str) -> None:
    def offer(row: Row) -> None:
        row["context"]["tools"] = [
            {"name": name, "description": "x", "parameters": {"type": "object"}} for name in tools
        ]

    result = verify(str(with_call_0(recorded, offer)))

    assert result.exit_code == 2
    assert said in result.stderr
