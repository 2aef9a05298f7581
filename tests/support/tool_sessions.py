"""The two-call tool session the record/replay tests share, on the echo model.

The user asks for ``/tool lookup {"q": "x"}``; the model calls ``lookup``; the tool answers
``result-x``; the model replies ``echo:result-x``. :data:`LOOKUP_TOOLS` is that tool for the
agent loop and for ``recordings verify --tools tests.support.tool_sessions:LOOKUP_TOOLS``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from openprogram.agent.loop import AgentRun, run_agent
from openprogram.agent.tools import AgentTool, tool
from openprogram.providers import (
    ECHO_MODEL,
    ApiProvider,
    AssistantMessage,
    Context,
    EchoProvider,
    Model,
    RecordingProvider,
    SimpleStreamOptions,
    ToolResultMessage,
    UserMessage,
    complete_simple,
    provider_scope,
    register_api_provider,
)
from openprogram.recording.writer import close_recording_writers
from tests.support.cli_runner import next_start, run
from tests.support.recording_rows import stored

SYSTEM_PROMPT = "You are a test agent."
PROMPT = '/tool lookup {"q": "x"}'


@tool
def lookup(q: str) -> str:
    """Look a word up."""
    return f"result-{q}"


LOOKUP_TOOLS = [lookup]
LOOKUP_TOOL = lookup.definition
"""The tool's definition, as a request carries it."""


async def tool_session(
    tool_result: str = "result-x",
    *,
    model: Model = ECHO_MODEL,
    options: SimpleStreamOptions | None = None,
) -> tuple[Context, list[AssistantMessage]]:
    """The session through whatever provider serves ``model``: the whole conversation, and
    the model's two replies. The tool's answer is ``tool_result``."""
    context = Context(
        system_prompt=SYSTEM_PROMPT, messages=[UserMessage(content=PROMPT)], tools=[LOOKUP_TOOL]
    )
    first = await complete_simple(model, context, options)
    context.messages.append(first)
    call = first.tool_calls[0]
    context.messages.append(
        ToolResultMessage(tool_call_id=call.id, tool_name=call.name, content=tool_result)
    )
    second = await complete_simple(model, context, options)
    context.messages.append(second)
    return context, [first, second]


@contextmanager
def recording_into(
    path: Path, api: str = "echo", provider: ApiProvider | None = None
) -> Iterator[RecordingProvider]:
    """Inside the block, calls to ``api`` go to ``provider`` (the echo model's unless given)
    and are recorded into ``path``."""
    recorder = RecordingProvider(provider or EchoProvider(), path)
    with provider_scope():
        register_api_provider(api, recorder)
        yield recorder


async def record_tool_session(path: Path, model: Model = ECHO_MODEL) -> list[AssistantMessage]:
    """The session recorded into ``path``; the model's two replies."""
    with recording_into(path, model.api):
        _, replies = await tool_session(model=model)
    close_recording_writers()
    return replies


def record_agent_session(
    path: Path,
    prompt: str,
    *,
    tools: Sequence[AgentTool] = (),
    system_prompt: str | None = None,
    model: Model = ECHO_MODEL,
) -> AgentRun:
    """``run_agent`` on ``prompt`` with ``tools``, recorded into ``path``; the run."""

    async def session() -> AgentRun:
        with recording_into(path, model.api):
            return await run_agent(model, prompt, system_prompt=system_prompt, tools=tools)

    try:
        return asyncio.run(session())
    finally:
        close_recording_writers()


def record_tool_session_as_configured(name: str) -> Path:
    """The way a user records: ``openprogram recordings record NAME``, then a new process
    whose provider runtime reads the configuration and records the session."""
    result = run("record", name)
    assert result.exit_code == 0, result.stderr
    next_start()
    try:
        asyncio.run(tool_session())
    finally:
        next_start()
    return stored(name)
