"""``run_agent``: the loop over the echo model and over scripted fake providers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram.agent import (
    AgentEvent,
    AgentTool,
    ToolCallFinished,
    ToolCallStarted,
    run_agent,
    tool,
)
from openprogram.errors import ToolDefinitionError
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessage,
    SimpleStreamOptions,
    ToolResultMessage,
    UserMessage,
)
from tests.support.scripted_provider import (
    FAKE_MODEL,
    RaisingProvider,
    ScriptedProvider,
    UnterminatedProvider,
    call,
    serving,
    text,
)


@tool
def lookup(q: str) -> str:
    """Look a word up."""
    return f"meaning of {q}"


@tool
def fail(reason: str = "boom") -> str:
    """Always fails."""
    raise ValueError(reason)


@tool
async def slow_upper(word: str) -> str:
    """Upper-case a word, asynchronously."""
    await asyncio.sleep(0)
    return word.upper()


@tool
def stats(word: str) -> dict[str, Any]:
    """Facts about a word."""
    return {"word": word, "length": len(word), "letters": sorted(set(word))}


def roles(messages: list[Any]) -> list[str]:
    return [message.role for message in messages]


async def test_a_prompt_without_tool_calls_is_one_model_call() -> None:
    run = await run_agent(ECHO_MODEL, "hello")

    assert run.final.text == "echo:hello"
    assert run.calls == 1
    assert run.stopped_because == "stop"
    assert run.ok
    assert roles(run.messages) == ["user", "assistant"]
    assert run.messages[0] == UserMessage(content="hello", timestamp=run.messages[0].timestamp)
    assert run.messages[-1] is run.final


async def test_echo_tool_session_runs_the_tool_and_answers_with_its_result() -> None:
    run = await run_agent(ECHO_MODEL, '/tool lookup {"q": "x"}', tools=[lookup])

    assert roles(run.messages) == ["user", "assistant", "toolResult", "assistant"]
    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.tool_name == "lookup"
    assert result.tool_call_id == run.messages[1].tool_calls[0].id  # type: ignore[union-attr]
    assert result.text == "meaning of x"
    assert not result.is_error
    assert run.final.text == "echo:meaning of x"
    assert run.calls == 2
    assert run.stopped_because == "stop"


async def test_two_tool_calls_in_one_reply_run_in_order() -> None:
    provider = ScriptedProvider(
        [text("checking"), call("c1", "lookup", q="a"), call("c2", "slow_upper", word="b")],
        [text("done")],
    )
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[lookup, slow_upper])

    assert roles(run.messages) == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    results = [m for m in run.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.tool_name, r.text) for r in results] == [
        ("c1", "lookup", "meaning of a"),
        ("c2", "slow_upper", "B"),
    ]
    # The second request carries the whole transcript so far, both results included.
    assert roles(provider.contexts[1].messages) == ["user", "assistant", "toolResult", "toolResult"]
    assert run.final.text == "done"
    assert run.calls == 2


async def test_an_unknown_tool_is_an_error_result_naming_the_known_tools() -> None:
    provider = ScriptedProvider([call("c1", "nosuch", a=1)], [text("sorry")])
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[stats, lookup])

    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error
    assert result.text == "unknown tool 'nosuch'; the known tools are: lookup, stats"
    assert run.final.text == "sorry"
    assert run.stopped_because == "stop"


async def test_a_raising_tool_is_an_error_result_and_the_session_goes_on() -> None:
    provider = ScriptedProvider([call("c1", "fail", reason="disk full")], [text("noted")])
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[fail])

    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error
    assert result.text == "ValueError: disk full"
    assert run.final.text == "noted"
    assert run.ok


async def test_a_raising_tool_s_message_reaches_the_model_without_credentials(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WAREHOUSE_TOKEN", "warehouse-token-value-77")
    reason = "GET https://bob:hunter2-secret@db.example.test/?token=abc failed: "
    reason += "warehouse-token-value-77"
    provider = ScriptedProvider([call("c1", "fail", reason=reason)], [text("noted")])
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[fail])

    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error
    assert result.text == (
        "ValueError: GET https://[secret removed]@db.example.test/?token=[secret removed] "
        "failed: [secret removed]"
    )
    sent = provider.contexts[1].messages[2]
    assert isinstance(sent, ToolResultMessage)
    assert sent.text == result.text


async def test_a_tool_called_with_wrong_arguments_is_an_error_result() -> None:
    run = await run_agent(ECHO_MODEL, '/tool lookup {"word": "x"}', tools=[lookup])

    result = run.messages[2]
    assert isinstance(result, ToolResultMessage)
    assert result.is_error
    assert result.text.startswith("TypeError: ")
    assert "word" in result.text


async def test_async_tools_are_awaited_and_json_results_are_sorted_compact_text() -> None:
    run = await run_agent(ECHO_MODEL, '/tool slow_upper {"word": "abc"}', tools=[slow_upper])
    assert run.final.text == "echo:ABC"

    run = await run_agent(ECHO_MODEL, '/tool stats {"word": "aba"}', tools=[stats])
    assert run.final.text == 'echo:{"length":3,"letters":["a","b"],"word":"aba"}'


async def test_the_iteration_bound_stops_the_session_without_running_the_last_calls() -> None:
    ran: list[str] = []

    @tool
    def again(n: int) -> str:
        """Record a call."""
        ran.append(f"again {n}")
        return "ok"

    provider = ScriptedProvider([call("c", "again", n=1)])  # asks for a tool forever
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "loop", tools=[again], max_iterations=3)

    assert run.calls == 3
    assert len(provider.contexts) == 3
    assert run.stopped_because == "max_iterations"
    assert not run.ok
    assert ran == ["again 1", "again 1"]  # the third reply's call was not run
    assert roles(run.messages)[-1] == "assistant"
    assert run.final.tool_calls


async def test_max_iterations_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_iterations"):
        await run_agent(ECHO_MODEL, "hi", max_iterations=0)


async def test_an_error_reply_ends_the_session_and_is_reported_in_the_result() -> None:
    provider = ScriptedProvider([call("c1", "lookup", q="a")], "rate limited (429)")
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[lookup])

    assert run.stopped_because == "error"
    assert not run.ok
    assert run.calls == 2
    assert run.final.stop_reason == "error"
    assert run.final.error_message == "rate limited (429)"
    assert roles(run.messages) == ["user", "assistant", "toolResult", "assistant"]


async def test_an_aborted_reply_ends_the_session() -> None:
    signal = asyncio.Event()
    signal.set()
    run = await run_agent(ECHO_MODEL, "hi", options=SimpleStreamOptions(signal=signal))

    assert run.stopped_because == "aborted"
    assert run.final.error_message == "request aborted by signal"


async def test_a_stream_without_a_terminal_event_is_an_error_reply() -> None:
    with serving(UnterminatedProvider()):
        run = await run_agent(FAKE_MODEL, "go")

    assert run.stopped_because == "error"
    assert run.final.text == "half a reply"
    assert "without a done or error event" in (run.final.error_message or "")


async def test_what_the_provider_raises_propagates() -> None:
    with serving(RaisingProvider()), pytest.raises(RuntimeError, match="connection dropped"):
        await run_agent(FAKE_MODEL, "go")


async def test_on_event_sees_every_stream_event_and_each_tool_call_in_order() -> None:
    seen: list[AgentEvent] = []
    run = await run_agent(
        ECHO_MODEL, '/tool lookup {"q": "x"}', tools=[lookup], on_event=seen.append
    )

    kinds = [event.type if hasattr(event, "type") else type(event).__name__ for event in seen]
    assert kinds == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
        "ToolCallStarted",
        "ToolCallFinished",
        "start",
        "text_start",
        "text_delta",
        "text_end",
        "done",
    ]
    started, finished = seen[5], seen[6]
    assert isinstance(started, ToolCallStarted)
    assert isinstance(finished, ToolCallFinished)
    assert started.call == finished.call
    assert started.call.name == "lookup"
    assert started.call.arguments == {"q": "x"}
    assert finished.result is run.messages[2]


async def test_tool_definitions_are_sorted_by_name_in_every_request() -> None:
    provider = ScriptedProvider([call("c1", "lookup", q="a")], [text("done")])
    with serving(provider):
        await run_agent(
            FAKE_MODEL, "go", system_prompt="be brief", tools=[stats, slow_upper, lookup, fail]
        )

    for context in provider.contexts:
        assert [t.name for t in context.tools or []] == ["fail", "lookup", "slow_upper", "stats"]
        assert context.system_prompt == "be brief"
    assert provider.contexts[0].tools is not None
    assert provider.contexts[0].tools[1] == lookup.definition


async def test_no_tools_sends_no_tool_list() -> None:
    provider = ScriptedProvider([text("hi")])
    with serving(provider):
        await run_agent(FAKE_MODEL, "go")

    assert provider.contexts[0].tools is None
    assert provider.contexts[0].system_prompt is None


async def test_two_tools_with_one_name_are_refused() -> None:
    twin = AgentTool(
        name="lookup", description="Another.", parameters={"type": "object"}, function=str
    )
    with pytest.raises(ToolDefinitionError, match="two tools have this name"):
        await run_agent(ECHO_MODEL, "hi", tools=[lookup, twin])


async def test_the_transcript_is_the_messages_the_last_request_held_plus_the_reply() -> None:
    provider = ScriptedProvider([call("c1", "lookup", q="a")], [text("done")])
    with serving(provider):
        run = await run_agent(FAKE_MODEL, "go", tools=[lookup])

    assert [*provider.contexts[-1].messages, run.final] == run.messages
    assert isinstance(run.final, AssistantMessage)
