"""A two-call tool session on the echo model, shared by the record/replay tests."""

from __future__ import annotations

from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessage,
    Context,
    Model,
    SimpleStreamOptions,
    Tool,
    ToolResultMessage,
    UserMessage,
    complete_simple,
)

LOOKUP_TOOL = Tool(
    name="lookup",
    description="Look a word up.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)


async def tool_session(
    tool_result: str = "result-x",
    *,
    model: Model = ECHO_MODEL,
    options: SimpleStreamOptions | None = None,
) -> tuple[Context, list[AssistantMessage]]:
    """User asks for ``/tool lookup {"q": "x"}``, the tool answers, echo replies."""
    context = Context(
        system_prompt="You are a test agent.",
        messages=[UserMessage(content='/tool lookup {"q": "x"}')],
        tools=[LOOKUP_TOOL],
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
