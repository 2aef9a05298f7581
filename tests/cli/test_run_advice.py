"""What ``openprogram run`` tells a user who got something wrong: a mistyped api, a missing
key, a provider failing with a credential in its words; and its counts, in the singular too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from openprogram.agent.loop import AgentRun
from openprogram.cli.run import stop_message
from openprogram.config.paths import config_location
from openprogram.errors import MissingApiKeyError
from openprogram.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    ErrorEvent,
    Model,
    StartEvent,
    UserMessage,
)
from tests.support.cli_runner import error_lines, openprogram
from tests.support.config_files import write_config
from tests.support.scripted_provider import KeyedProvider, ScriptedProvider, serving, text

KNOWN = "anthropic-messages, echo, openai-completions"


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


# -- a mistyped api ----------------------------------------------------------------------------


def test_a_mistyped_api_in_model_exits_2_with_a_suggestion() -> None:
    result = openprogram("run", "hi", "--model", "opnai-completions:gpt-4o")

    assert result.exit_code == 2
    assert result.stdout == ""
    assert error_lines(result) == [
        f"error: unknown api 'opnai-completions' in --model (known: {KNOWN}; "
        "did you mean openai-completions?)"
    ]


def test_an_api_like_none_of_the_known_ones_gets_no_suggestion() -> None:
    result = openprogram("run", "hi", "--model", "nosuch:m")

    assert result.exit_code == 2
    assert error_lines(result) == [f"error: unknown api 'nosuch' in --model (known: {KNOWN})"]


def test_a_mistyped_api_in_the_configured_default_model_exits_1_naming_the_file() -> None:
    path = write_config('default_model = "antropic-messages:claude"\n')

    result = openprogram("run", "hi")

    assert result.exit_code == 1
    assert error_lines(result) == [
        f"error: unknown api 'antropic-messages' in default_model of {path} (known: {KNOWN}; "
        "did you mean anthropic-messages?)"
    ]


# -- a missing key ----------------------------------------------------------------------------


def test_a_missing_key_names_the_variable_and_where_to_name_another() -> None:
    with serving(KeyedProvider([text("hi")])):
        result = openprogram("run", "hi", "--model", "fake:m1")

    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line == (
        "error: no API key for api 'fake': set FAKE_API_KEY, or name the variable that holds "
        f"the key with api_key_env in [providers.fake] of {config_location().path}"
    )
    assert "options" not in line


def test_a_missing_vendor_key_names_the_vendor_variable() -> None:
    result = openprogram("run", "hi", "--model", "openai-completions:gpt-4o")

    assert result.exit_code == 1
    [line] = error_lines(result)
    assert line.startswith("error: no API key for api 'openai-completions': set OPENAI_API_KEY,")
    assert "api_key_env in [providers.openai-completions]" in line
    assert "options" not in line


def test_library_callers_still_get_the_options_hint() -> None:
    assert "pass options.api_key" in str(MissingApiKeyError("fake", "FAKE_API_KEY"))


# -- credentials in what a provider says ------------------------------------------------------

LEAKY = "https://bob:hunter2-secret@gpu.example.test/v1?api_key=query-key-12345"


class LeakyRaisingProvider(ScriptedProvider):
    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        raise ConnectionError(f"cannot reach {LEAKY}")


class LeakyErrorReplyProvider(ScriptedProvider):
    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        message = AssistantMessage(
            api=model.api,
            provider=model.provider,
            model=model.id,
            stop_reason="error",
            error_message=f"upstream {LEAKY} refused",
        )
        yield ErrorEvent(reason="error", error=message)


@pytest.mark.parametrize(
    "provider", [LeakyRaisingProvider(), LeakyErrorReplyProvider()], ids=["raises", "error-reply"]
)
def test_a_provider_failure_is_shown_without_credentials(provider: ScriptedProvider) -> None:
    with serving(provider):
        result = openprogram("run", "hi", "--model", "fake:m1")

    assert result.exit_code == 1
    [line] = error_lines(result)
    assert "https://[secret removed]@gpu.example.test/v1?api_key=[secret removed]" in line
    assert "hunter2-secret" not in result.stderr
    assert "query-key-12345" not in result.stderr


def test_a_usage_error_quoting_a_value_is_shown_without_credentials() -> None:
    # An unquoted prompt: its second word is an extra argument, quoted by the error.
    result = openprogram("run", "fetch", "https://bob:hunter2-secret@h.test")

    assert result.exit_code == 2
    [line] = error_lines(result)
    assert "https://[secret removed]@h.test" in line
    assert "hunter2-secret" not in result.stderr


# -- counts -----------------------------------------------------------------------------------


def test_a_one_character_tool_result_is_one_char(workdir: Path) -> None:
    (workdir / "one.txt").write_text("x")

    result = openprogram("run", '/tool read_file {"path": "one.txt"}')

    assert result.exit_code == 0, result.stderr
    assert "← 1 char: x" in result.stderr.splitlines()


def test_the_iteration_limit_after_one_call_is_one_model_call() -> None:
    reply = AssistantMessage(api="fake", provider="fake", model="m", stop_reason="toolUse")
    session = AgentRun([UserMessage(content="go"), reply], reply, 1, "max_iterations")

    assert stop_message(session) == (
        "the session stopped after 1 model call with tool calls still pending (the iteration limit)"
    )
