"""What programs do with the official SDKs: one scenario per API and way of calling it, for
either generation and for sync and async clients alike (see :mod:`tests.support.sdk_clients`).

Each scenario appends to ``seen`` everything the program gets back: ``model_dump()`` of each
chunk or event, of each helper event and of the final object, and the request id the SDK
read from the response headers (``_request_id``).
"""

from __future__ import annotations

import json
from typing import Any

from tests.support.sdk_clients import Scenario, each, entered, raw_view, settle

__all__ = ["ANTHROPIC_SCENARIOS", "OPENAI_SCENARIOS", "WEATHER_TOOL"]

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}
"""A tool, in the neutral form :func:`chat_tool`, :func:`responses_tool` and
:func:`messages_tool` put in each API's shape."""


def chat_tool(tool: dict[str, Any] = WEATHER_TOOL, *, strict: bool = False) -> dict[str, Any]:
    """A Chat Completions tool; ``strict`` (closed schema) as the SDK's stream helper of the
    previous generation requires to parse the arguments."""
    if strict:
        parameters = {**tool["parameters"], "additionalProperties": False}
        return {"type": "function", "function": {**tool, "parameters": parameters, "strict": True}}
    return {"type": "function", "function": tool}


def responses_tool(tool: dict[str, Any] = WEATHER_TOOL) -> dict[str, Any]:
    return {"type": "function", **tool}


def messages_tool(tool: dict[str, Any] = WEATHER_TOOL) -> dict[str, Any]:
    return {
        "name": tool["name"],
        "description": tool["description"],
        "input_schema": tool["parameters"],
    }


def _dump(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump()
    request_id = getattr(value, "_request_id", None)
    return {**dumped, "_request_id": request_id} if request_id else dumped


# -- OpenAI ---------------------------------------------------------------------------------


async def chat_create(client: Any, seen: list[Any]) -> None:
    completion = await settle(
        client.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, temperature=0.2)
    )
    seen.append(_dump(completion))


async def chat_stream(client: Any, seen: list[Any]) -> None:
    stream = await settle(
        client.chat.completions.create(
            model="gpt-4o-mini",
            messages=QUESTION,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    async for chunk in each(stream):
        seen.append(chunk.model_dump())


async def chat_tool_turns(client: Any, seen: list[Any]) -> None:
    """A streamed tool call, then the tool's result sent back with the call's id."""
    tools = [chat_tool()]
    stream = await settle(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=QUESTION, tools=tools, stream=True
        )
    )
    chunks = []
    async for chunk in each(stream):
        chunks.append(chunk)
        seen.append(chunk.model_dump())
    call = next(c.choices[0].delta.tool_calls[0] for c in chunks if c.choices[0].delta.tool_calls)
    arguments = "".join(
        (c.choices[0].delta.tool_calls[0].function.arguments or "")
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    )
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.function.name, "arguments": arguments},
            }
        ],
    }
    city = json.loads(arguments)["city"]
    result = {"role": "tool", "tool_call_id": call.id, "content": f"18°C and sunny in {city}"}
    completion = await settle(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=[*QUESTION, assistant, result], tools=tools
        )
    )
    seen.append(_dump(completion))


async def chat_stream_helper(client: Any, seen: list[Any]) -> None:
    manager = client.chat.completions.stream(
        model="gpt-4o-mini", messages=QUESTION, tools=[chat_tool(strict=True)]
    )
    async with entered(manager) as stream:
        async for event in each(stream):
            seen.append(event.model_dump())
        seen.append((await settle(stream.get_final_completion())).model_dump())


async def chat_raw(client: Any, seen: list[Any]) -> None:
    raw = await settle(
        client.chat.completions.with_raw_response.create(model="gpt-4o-mini", messages=QUESTION)
    )
    seen.append(raw_view(raw, await settle(raw.parse())))


async def responses_create(client: Any, seen: list[Any]) -> None:
    response = await settle(client.responses.create(model="gpt-4o", input="Say hello."))
    seen.append(_dump(response))


async def responses_stream(client: Any, seen: list[Any]) -> None:
    stream = await settle(client.responses.create(model="gpt-4o", input="Say hello.", stream=True))
    async for event in each(stream):
        seen.append(event.model_dump())


async def responses_stream_tools(client: Any, seen: list[Any]) -> None:
    stream = await settle(
        client.responses.create(
            model="gpt-4o", input=QUESTION, tools=[responses_tool()], stream=True
        )
    )
    async for event in each(stream):
        seen.append(event.model_dump())


OPENAI_SCENARIOS: dict[str, Scenario] = {
    "chat_create": chat_create,
    "chat_stream": chat_stream,
    "chat_tool_turns": chat_tool_turns,
    "chat_stream_helper": chat_stream_helper,
    "chat_raw": chat_raw,
    "responses_create": responses_create,
    "responses_stream": responses_stream,
    "responses_stream_tools": responses_stream_tools,
}


# -- Anthropic ------------------------------------------------------------------------------

THINKING = {"type": "enabled", "budget_tokens": 1024}
"""Extended thinking as the previous SDK generation knows it (both accept it)."""


async def messages_create(client: Any, seen: list[Any]) -> None:
    message = await settle(
        client.messages.create(model="claude-loopback-1", max_tokens=256, messages=QUESTION)
    )
    seen.append(_dump(message))


async def messages_stream(client: Any, seen: list[Any]) -> None:
    """Raw events: thinking, text and a tool_use fed by input_json_delta."""
    stream = await settle(
        client.messages.create(
            model="claude-loopback-1",
            max_tokens=2048,
            messages=QUESTION,
            tools=[messages_tool()],
            thinking=THINKING,
            stream=True,
        )
    )
    async for event in each(stream):
        seen.append(event.model_dump())


async def messages_stream_text(client: Any, seen: list[Any]) -> None:
    """Raw events of a text-only answer."""
    stream = await settle(
        client.messages.create(
            model="claude-loopback-1", max_tokens=256, messages=QUESTION, stream=True
        )
    )
    async for event in each(stream):
        seen.append(event.model_dump())


async def messages_stream_helper(client: Any, seen: list[Any]) -> None:
    manager = client.messages.stream(
        model="claude-loopback-1",
        max_tokens=2048,
        messages=QUESTION,
        tools=[messages_tool()],
        thinking=THINKING,
    )
    async with entered(manager) as stream:
        async for event in each(stream):
            seen.append(event.model_dump())
        seen.append((await settle(stream.get_final_message())).model_dump())


async def messages_tool_turns(client: Any, seen: list[Any]) -> None:
    """A tool call, then its result sent back with the call's id."""
    tools = [messages_tool()]
    first = await settle(
        client.messages.create(
            model="claude-loopback-1", max_tokens=256, messages=QUESTION, tools=tools
        )
    )
    seen.append(_dump(first))
    call = next(block for block in first.content if block.type == "tool_use")
    answer = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": f"18°C and sunny in {call.input['city']}",
            }
        ],
    }
    content = [block.model_dump(exclude_none=True) for block in first.content]
    assistant = {"role": "assistant", "content": content}
    second = await settle(
        client.messages.create(
            model="claude-loopback-1",
            max_tokens=256,
            messages=[*QUESTION, assistant, answer],
            tools=tools,
        )
    )
    seen.append(_dump(second))


async def messages_raw(client: Any, seen: list[Any]) -> None:
    raw = await settle(
        client.messages.with_raw_response.create(
            model="claude-loopback-1", max_tokens=256, messages=QUESTION
        )
    )
    seen.append(raw_view(raw, await settle(raw.parse())))


ANTHROPIC_SCENARIOS: dict[str, Scenario] = {
    "messages_create": messages_create,
    "messages_stream": messages_stream,
    "messages_stream_text": messages_stream_text,
    "messages_stream_helper": messages_stream_helper,
    "messages_tool_turns": messages_tool_turns,
    "messages_raw": messages_raw,
}
