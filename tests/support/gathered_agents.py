"""Sub-agents run concurrently with ``asyncio.gather``: each makes its own model calls, and
one is slower than another, so their calls interleave differently from run to run.

A sub-agent named ``A`` starts from the user message ``"A start"``; after each reply it does
its own work (a tool, say) for ``delay`` seconds, then asks again with ``"A turn <n>"``. A
slower sub-agent (a positive delay) also starts only once every one without a delay is done,
so the order its calls reach the boundary in is the same however busy the machine is (a
delay alone would race the other's round trips).
:func:`provider_agents` asks through openprogram's provider registry (the echo model);
:func:`http_agents` asks an OpenAI-style Chat Completions server with an ``httpx2``
``AsyncClient`` (the loopback :class:`~tests.support.sdk_server.SdkServer` answers
``You said: <the last user text>``). Both return each sub-agent's last answer, in the order
the names were given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessage,
    Context,
    Message,
    UserMessage,
    complete_simple,
)

TURNS = 3
"""The model calls each sub-agent makes."""


async def _provider_agent(name: str, delay: float, turns: int) -> str:
    messages: list[Message] = [UserMessage(content=f"{name} start")]
    reply: AssistantMessage | None = None
    for turn in range(1, turns + 1):
        await asyncio.sleep(delay)
        reply = await complete_simple(ECHO_MODEL, Context(messages=list(messages)))
        messages += [reply, UserMessage(content=f"{name} turn {turn}")]
    assert reply is not None
    return reply.text


async def _gathered(
    delays: Mapping[str, float], agent: Callable[[str, float], Awaitable[str]]
) -> list[str]:
    """``agent`` run for each of ``delays``' sub-agents at once; the slower ones (a positive
    delay) start once the others are done."""
    faster = [name for name, delay in delays.items() if delay <= 0]
    done = asyncio.Event()
    if not faster:
        done.set()

    async def run(name: str, delay: float) -> str:
        if delay > 0:
            await done.wait()
        try:
            return await agent(name, delay)
        finally:
            if delay <= 0:
                faster.remove(name)
                if not faster:
                    done.set()

    return list(await asyncio.gather(*(run(name, delay) for name, delay in delays.items())))


async def provider_agents(delays: Mapping[str, float], *, turns: int = TURNS) -> list[str]:
    """The sub-agents ``delays`` names, gathered, asking the echo model ``turns`` times."""
    return await _gathered(delays, lambda name, delay: _provider_agent(name, delay, turns))


async def _http_agent(client: Any, url: str, name: str, delay: float, turns: int) -> str:
    messages: list[dict[str, str]] = [{"role": "user", "content": f"{name} start"}]
    answer = ""
    for turn in range(1, turns + 1):
        await asyncio.sleep(delay)
        body = {"model": "gpt-4o-mini", "messages": messages}
        response = await client.post(f"{url}/chat/completions", json=body, timeout=10)
        response.raise_for_status()
        answer = response.json()["choices"][0]["message"]["content"]
        messages = [
            *messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": f"{name} turn {turn}"},
        ]
    return answer


async def http_agents(url: str, delays: Mapping[str, float], *, turns: int = TURNS) -> list[str]:
    """The sub-agents ``delays`` names, gathered, each asking the Chat Completions API at
    ``url`` (``…/v1``) ``turns`` times through one shared ``httpx2.AsyncClient``."""
    import httpx2

    async with httpx2.AsyncClient() as client:
        return await _gathered(
            delays, lambda name, delay: _http_agent(client, url, name, delay, turns)
        )


PROVIDER_AGENTS_SOURCE = """\
import asyncio

from openprogram.providers import ECHO_MODEL, Context, UserMessage, complete_simple


async def sub_agent(name, delay, turns=3):
    messages = [UserMessage(content=f"{name} start")]
    for turn in range(1, turns + 1):
        await asyncio.sleep(delay)
        reply = await complete_simple(ECHO_MODEL, Context(messages=list(messages)))
        messages += [reply, UserMessage(content=f"{name} turn {turn}")]
    return reply.text


async def sub_agents(delays):
    faster = [name for name, delay in delays.items() if delay <= 0]
    done = asyncio.Event()
    if not faster:
        done.set()

    async def run(name, delay):
        if delay > 0:
            await done.wait()
        try:
            return await sub_agent(name, delay)
        finally:
            if delay <= 0:
                faster.remove(name)
                if not faster:
                    done.set()

    return await asyncio.gather(*(run(name, delay) for name, delay in delays.items()))
"""
""":func:`provider_agents` as source, for a program or an inner test module: it defines
``sub_agents(delays)``, which makes the very same requests."""

PROVIDER_AGENTS_PROGRAM = (
    PROVIDER_AGENTS_SOURCE
    + """

import sys

delays = {name: float(delay) for name, delay in (a.split("=") for a in sys.argv[1:])}
print(asyncio.run(sub_agents(delays)))
"""
)
"""A program running the sub-agents its arguments name with their delays: ``A=0.03 B=0``."""
