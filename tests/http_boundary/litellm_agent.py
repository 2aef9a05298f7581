"""A small program on litellm, as the litellm tests run it: in-process, as a script under
``openprogram exec``, and from an inner test suite (each a copy of this file).

:func:`ask` puts one question to the OpenAI-compatible server at ``url`` through
``litellm.acompletion`` on litellm's default async transport (httpx over aiohttp), whole or
streamed (``stream=True``), and returns what the program got back; the key is litellm's own
reading of ``OPENAI_API_KEY``. Run as a script, it asks both ways the server at
``SDK_SERVER_URL`` and prints what it got as JSON after ``PROBE``.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

MODEL = "openai/gpt-4o-mini"
QUESTION = "What is the capital of France?"
ANSWER = f"You said: {QUESTION}"
"""What the loopback server answers to :data:`QUESTION`."""


async def ask(url: str, *, stream: bool) -> dict[str, Any]:
    """The answer to :data:`QUESTION` from the server at ``url``, streamed or whole, as the
    program reads it: the completion's id, its text, its finish reason."""
    import litellm

    messages = [{"role": "user", "content": QUESTION}]
    base = f"{url}/v1"
    if not stream:
        response = await litellm.acompletion(model=MODEL, messages=messages, api_base=base)
        choice = response.choices[0]
        return {
            "id": response.id,
            "text": choice.message.content,
            "finish_reason": choice.finish_reason,
        }
    chunks = await litellm.acompletion(model=MODEL, messages=messages, api_base=base, stream=True)
    read = [chunk async for chunk in chunks]
    choices = [chunk.choices[0] for chunk in read if chunk.choices]
    return {
        "id": read[0].id,
        "text": "".join(choice.delta.content or "" for choice in choices),
        "finish_reason": next(c.finish_reason for c in reversed(choices) if c.finish_reason),
    }


async def main() -> None:
    url = os.environ["SDK_SERVER_URL"]
    answers = [await ask(url, stream=False), await ask(url, stream=True)]
    print("PROBE " + json.dumps(answers), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
