"""A small agent program on the official SDKs, as a file a test runs in a new process (under
``openprogram exec``): it asks the loopback server at ``SDK_SERVER_URL`` the question given
as its argument through ``openai.OpenAI`` (a streamed tool call, then the answer to the
tool's result) and ``anthropic.AsyncAnthropic`` (the stream helper), builds both clients
from the key variables, and prints everything it got back as JSON after ``PROBE``. With
``REFUSE_SOCKETS=1`` every connection it tries fails first.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.offline import SOCKETS_REFUSED

__all__ = ["AGENT_SOURCE", "write_agent"]

AGENT_SOURCE = """\
import asyncio
import json
import os
import sys

if os.environ.get("REFUSE_SOCKETS") == "1":
{refusal}
import anthropic
import openai

URL = os.environ["SDK_SERVER_URL"]
QUESTION = [{{"role": "user", "content": sys.argv[1]}}]
TOOL = {{
    "type": "function",
    "function": {{
        "name": "get_weather",
        "parameters": {{"type": "object", "properties": {{"city": {{"type": "string"}}}}}},
    }},
}}


def with_openai():
    client = openai.OpenAI(base_url=URL + "/v1")
    chunks = list(
        client.chat.completions.create(
            model="gpt-4o-mini", messages=QUESTION, tools=[TOOL], stream=True
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    calls = [delta.tool_calls[0] for delta in deltas if delta.tool_calls]
    arguments = "".join(call.function.arguments or "" for call in calls)
    call = {{"id": calls[0].id, "type": "function",
             "function": {{"name": calls[0].function.name, "arguments": arguments}}}}
    answer = client.chat.completions.create(
        model="gpt-4o-mini",
        messages=[
            *QUESTION,
            {{"role": "assistant", "content": None, "tool_calls": [call]}},
            {{"role": "tool", "tool_call_id": calls[0].id, "content": "18 degrees"}},
        ],
        tools=[TOOL],
    )
    return [c.model_dump() for c in chunks] + [answer.model_dump()]


async def with_anthropic():
    client = anthropic.AsyncAnthropic(base_url=URL)
    async with client.messages.stream(
        model="claude-loopback-1", max_tokens=256, messages=QUESTION
    ) as stream:
        events = [event.model_dump() async for event in stream]
        final = await stream.get_final_message()
    return events + [final.model_dump()]


seen = with_openai() + asyncio.run(with_anthropic())
print("PROBE " + json.dumps(seen))
"""


def write_agent(folder: Path) -> Path:
    """The agent program as ``folder/agent.py``."""
    refusal = "".join(f"    {line}\n" for line in SOCKETS_REFUSED.splitlines())
    path = folder / "agent.py"
    path.write_text(AGENT_SOURCE.format(refusal=refusal))
    return path
