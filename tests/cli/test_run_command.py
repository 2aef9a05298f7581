"""``openprogram run``: output, options and exit codes, in this process (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_lines, next_start, openprogram
from tests.support.config_files import write_config
from tests.support.scripted_provider import RaisingProvider, ScriptedProvider, call, serving, text


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "x.txt").write_text("contents of x\nsecond line\n")
    monkeypatch.chdir(folder)
    return folder


READ_X = '/tool read_file {"path": "x.txt"}'


def test_with_no_config_the_echo_model_answers() -> None:
    result = openprogram("run", "hello")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo:hello\n"
    assert result.stderr == ""


def test_a_tool_call_reads_the_file_and_the_reply_streams_to_stdout() -> None:
    result = openprogram("run", READ_X)

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "echo:contents of x\nsecond line\n"
    assert result.stderr.splitlines() == [
        '→ read_file {"path": "x.txt"}',
        "← 26 chars: contents of x",
    ]


def test_a_failed_tool_is_shown_as_an_error_and_the_session_goes_on() -> None:
    result = openprogram("run", '/tool read_file {"path": "../x.txt"}')

    assert result.exit_code == 0, result.stderr
    message = "ToolInputError: path '../x.txt' is outside the working directory"
    assert result.stdout == f"echo:{message}\n"
    assert result.stderr.splitlines()[1] == f"← error: {message}"


def test_json_prints_the_transcript_without_timestamps() -> None:
    result = openprogram("run", READ_X, "--json", "--system", "be brief")

    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    transcript = json.loads(result.stdout)
    assert transcript["model"]["api"] == "echo"
    assert transcript["system_prompt"] == "be brief"
    assert transcript["tools"] == ["list_directory", "read_file"]
    assert transcript["calls"] == 2
    assert transcript["stopped_because"] == "stop"
    messages = transcript["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert messages[0] == {"role": "user", "content": READ_X}
    assert messages[2]["content"] == [{"type": "text", "text": "contents of x\nsecond line\n"}]
    assert messages[3]["content"][0]["text"] == "echo:contents of x\nsecond line\n"
    assert "timestamp" not in result.stdout


def test_the_request_holds_the_sorted_built_in_tools_and_the_system_prompt() -> None:
    with serving(ScriptedProvider([text("hi")])) as provider:
        result = openprogram("run", "go", "--model", "fake:m1", "--system", "You are terse.")

    assert result.exit_code == 0, result.stderr
    [(model, context)] = provider.requests
    assert (model.api, model.id, model.provider) == ("fake", "m1", "fake")
    assert context.system_prompt == "You are terse."
    assert [t.name for t in context.tools or []] == ["list_directory", "read_file"]


def test_no_tools_offers_none() -> None:
    with serving(ScriptedProvider([text("hi")])) as provider:
        result = openprogram("run", "go", "--model", "fake:m1", "--no-tools")

    assert result.exit_code == 0, result.stderr
    assert provider.requests[0][1].tools is None
    assert provider.requests[0][1].system_prompt is None

    result = openprogram("run", READ_X, "--no-tools")
    assert result.stdout == "echo:unknown tool 'read_file'; the known tools are: none\n"


def test_default_model_and_base_url_come_from_the_config() -> None:
    write_config(
        'default_model = "fake:llama3:8b"\n\n'
        '[providers.fake]\nbase_url = "http://localhost:11434/v1"\n'
    )
    with serving(ScriptedProvider([text("hi")])) as provider:
        result = openprogram("run", "go")

    assert result.exit_code == 0, result.stderr
    model = provider.requests[0][0]
    assert (model.api, model.id, model.base_url) == (
        "fake",
        "llama3:8b",
        "http://localhost:11434/v1",
    )
    assert openprogram("run", "go", "--model", "echo:echo").stdout == "echo:go\n"


def test_each_reply_s_text_is_on_lines_of_its_own_and_whole_texts_are_shown() -> None:
    script = ScriptedProvider(
        [text("looking"), call("c1", "list_directory")],
        [text("found x.txt")],
        deltas=False,
    )
    with serving(script):
        result = openprogram("run", "go", "--model", "fake:m1")

    assert result.exit_code == 0, result.stderr
    assert result.stdout == "looking\nfound x.txt\n"
    assert result.stderr.splitlines() == ["→ list_directory {}", "← 5 chars: x.txt"]


@pytest.mark.parametrize("reference", ["gpt-4o", "openai-completions:", ":m"])
def test_a_bad_model_exits_2(reference: str) -> None:
    result = openprogram("run", "hi", "--model", reference)

    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = error_lines(result)
    assert "is not api:model-id" in line


def test_an_error_reply_exits_1_and_json_still_prints_the_transcript() -> None:
    result = openprogram("run", "/tool read_file {not json")

    assert result.exit_code == 1
    assert result.stdout == ""
    [line] = error_lines(result)
    assert line.startswith("error: the model replied with an error: echo: /tool arguments")

    result = openprogram("run", "/tool read_file {not json", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["stopped_because"] == "error"


def test_the_iteration_limit_exits_1() -> None:
    with serving(ScriptedProvider([call("c", "list_directory")])) as provider:
        result = openprogram("run", "go", "--model", "fake:m1")

    assert result.exit_code == 1
    assert len(provider.requests) == 10
    [line] = error_lines(result)
    assert "stopped after 10 model calls with tool calls still pending" in line


def test_a_provider_exception_exits_1_with_one_line() -> None:
    with serving(RaisingProvider([text("hi")])):
        result = openprogram("run", "hi", "--model", "fake:m1")

    assert result.exit_code == 1
    assert error_lines(result) == ["error: RuntimeError: the connection dropped"]
    assert "Traceback" not in result.stderr


def test_blocked_record_replay_exits_1_with_the_diagnostic() -> None:
    write_config('[record_replay]\nmode = "replay"\nfile = "missing"\n')

    result = openprogram("run", "hi")

    assert result.exit_code == 1
    [line] = error_lines(result)
    assert "record/replay is blocked" in line
    assert "openprogram recordings off" in line


def test_a_recorded_run_replays_with_the_same_stdout_and_drift_exits_1() -> None:
    assert openprogram("recordings", "record", "s1").exit_code == 0
    next_start()
    live = openprogram("run", READ_X)
    assert live.exit_code == 0, live.stderr

    next_start()
    assert openprogram("recordings", "replay", "s1").exit_code == 0
    next_start()
    replayed = openprogram("run", READ_X)
    assert replayed.exit_code == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    assert replayed.stderr == live.stderr

    next_start()
    drifted = openprogram("run", '/tool read_file {"path": "y.txt"}')
    assert drifted.exit_code == 1
    assert drifted.stderr.splitlines() == [
        "error: replay mismatch at call 0, field context.messages[0].content:",
        'recorded \'/tool read_file {"path": "x.txt"}\', '
        'incoming \'/tool read_file {"path": "y.txt"}\'',
    ]


def test_recorded_calls_left_unconsumed_exit_1_naming_them() -> None:
    assert openprogram("recordings", "record", "s2").exit_code == 0
    next_start()
    assert openprogram("run", READ_X).exit_code == 0  # calls 0 and 1
    assert openprogram("run", "and more").exit_code == 0  # call 2, same process
    next_start()
    assert openprogram("recordings", "replay", "s2").exit_code == 0
    next_start()

    result = openprogram("run", READ_X)

    assert result.exit_code == 1
    assert result.stdout == "echo:contents of x\nsecond line\n"
    [line] = error_lines(result)
    path = recordings_dir() / "s2.jsonl"
    assert line == (
        f"error: replay incomplete: 1 of 3 recorded calls never requested (call 2) from {path}; "
        "the run stopped before the recorded session did"
    )
