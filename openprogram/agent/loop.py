"""``run_agent``: one session — call the model, run the tools it asks for, repeat.

Each iteration streams one reply with ``stream_simple``, appends it to the transcript, then
runs the reply's tool calls in order and appends one ``ToolResultMessage`` each. The session
ends when a reply asks for no tool, when a reply is an error (``stop_reason`` ``error`` or
``aborted``), or after ``max_iterations`` model calls; :attr:`AgentRun.stopped_because` says
which. None of these raise: the transcript is the result either way. What does raise is
what the provider layer raises — a replay mismatch, record/replay blocked, a missing key.

A tool never ends the session: an unknown tool name, or a tool that raises, becomes an error
result (``is_error=True``) the model reads on its next call. The exception's message is
redacted first (a URL's password, a known key), since it is sent to the model.

Under record every tool result is taped (``tool:<name>``); under replay each tool is run
live (the default), served from its tape, or run and checked against it, by its policy
(``record_replay.tools``; see :mod:`openprogram.tape_boundary.tools`).

Requests are deterministic: the tool definitions are sorted by name, and nothing here adds
an id or a clock value outside the messages' ``timestamp`` fields (which replay ignores), so
a session replays with no mismatch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from openprogram.agent.tools import AgentTool
from openprogram.errors import ToolDefinitionError
from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    MessageAccumulator,
)
from openprogram.providers.streaming import stream_simple
from openprogram.providers.types import (
    AssistantMessage,
    Context,
    Message,
    Model,
    SimpleStreamOptions,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram.recording.redaction import SecretRedactor
from openprogram.tape_boundary.tools import run_taped_tool

StopCause = Literal["stop", "length", "error", "aborted", "max_iterations"]
"""Why a session ended: the last reply's stop reason, or the iteration bound."""

DEFAULT_MAX_ITERATIONS = 10


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The loop is about to run ``call``."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """``call`` ran; ``result`` is what the model will read (``is_error`` if it failed)."""

    call: ToolCall
    result: ToolResultMessage


AgentEvent = AssistantMessageEvent | ToolCallStarted | ToolCallFinished
"""What ``on_event`` receives: every provider event, and a notice around each tool call."""


@dataclass(frozen=True, slots=True)
class AgentRun:
    """The result of one session."""

    messages: list[Message]
    """The whole transcript: the user's prompt, then every reply and tool result in order."""
    final: AssistantMessage
    """The last reply."""
    calls: int
    """How many model calls the session made."""
    stopped_because: StopCause
    """``stop`` or ``length``: the model answered. ``error`` / ``aborted``: the last reply is
    an error (``final.error_message`` says why). ``max_iterations``: the bound was reached
    and the last reply's tool calls were not run."""

    @property
    def ok(self) -> bool:
        """True when the model answered: neither an error reply nor the iteration bound."""
        return self.stopped_because in ("stop", "length")


async def run_agent(
    model: Model,
    prompt: str | UserMessage,
    *,
    system_prompt: str | None = None,
    tools: Sequence[AgentTool] = (),
    options: SimpleStreamOptions | None = None,
    max_iterations: int = DEFAULT_MAX_ITERATIONS,
    on_event: Callable[[AgentEvent], None] | None = None,
) -> AgentRun:
    """Run one session from ``prompt`` until the model answers without calling a tool.

    ``max_iterations`` bounds the number of model calls. ``on_event`` sees every stream
    event as it arrives (for live display) and a :class:`ToolCallStarted` /
    :class:`ToolCallFinished` pair around each tool call."""
    if max_iterations < 1:
        raise ValueError(f"max_iterations must be at least 1, got {max_iterations}")
    by_name = _tools_by_name(tools)
    definitions = [by_name[name].definition for name in sorted(by_name)] or None
    emit = on_event or _ignore
    first = prompt if isinstance(prompt, UserMessage) else UserMessage(content=prompt)
    messages: list[Message] = [first]
    calls = 0
    while True:
        context = Context(system_prompt=system_prompt, messages=list(messages), tools=definitions)
        reply = await _stream_reply(model, context, options, emit)
        calls += 1
        messages.append(reply)
        if reply.stop_reason in ("error", "aborted"):
            return AgentRun(messages, reply, calls, reply.stop_reason)
        tool_calls = reply.tool_calls
        if not tool_calls:
            return AgentRun(
                messages, reply, calls, "length" if reply.stop_reason == "length" else "stop"
            )
        if calls >= max_iterations:
            return AgentRun(messages, reply, calls, "max_iterations")
        for call in tool_calls:
            emit(ToolCallStarted(call))
            result = await run_tool_call(by_name, call)
            messages.append(result)
            emit(ToolCallFinished(call, result))


def _ignore(event: AgentEvent) -> None:
    pass


def _tools_by_name(tools: Sequence[AgentTool]) -> dict[str, AgentTool]:
    by_name: dict[str, AgentTool] = {}
    for agent_tool in tools:
        if agent_tool.name in by_name:
            raise ToolDefinitionError(agent_tool.name, "two tools have this name")
        by_name[agent_tool.name] = agent_tool
    return by_name


async def _stream_reply(
    model: Model,
    context: Context,
    options: SimpleStreamOptions | None,
    emit: Callable[[AgentEvent], None],
) -> AssistantMessage:
    accumulator = MessageAccumulator(api=model.api, provider=model.provider, model=model.id)
    ended = False
    async for event in stream_simple(model, context, options):
        accumulator.add(event)
        emit(event)
        ended = ended or isinstance(event, DoneEvent | ErrorEvent)
    reply = accumulator.message
    if not ended:
        return reply.model_copy(
            update={
                "stop_reason": "error",
                "error_message": "the provider's stream ended without a done or error event",
            }
        )
    return reply


async def run_tool_call(tools: dict[str, AgentTool], call: ToolCall) -> ToolResultMessage:
    """Run one tool call; an unknown tool or a raised exception becomes an error result.

    Under record the result is taped; under replay the tool's policy says whether it runs
    or its taped result is served (:mod:`openprogram.tape_boundary.tools`)."""

    async def run() -> tuple[str, bool]:
        return await _tool_result(tools, call)

    text, is_error = await run_taped_tool(call.name, call.arguments, run)
    return ToolResultMessage(
        tool_call_id=call.id, tool_name=call.name, content=text, is_error=is_error
    )


async def _tool_result(tools: dict[str, AgentTool], call: ToolCall) -> tuple[str, bool]:
    agent_tool = tools.get(call.name)
    if agent_tool is None:
        known = ", ".join(sorted(tools)) or "none"
        return f"unknown tool {call.name!r}; the known tools are: {known}", True
    try:
        return await agent_tool.invoke(call.arguments), False
    except Exception as exc:
        # The model (a remote server) reads this: no credential the exception quotes.
        return SecretRedactor().redact_text(f"{type(exc).__name__}: {exc}"), True
