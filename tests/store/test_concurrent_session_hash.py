"""Two sub-agents run with ``asyncio.gather``, each making three model calls; one is slower
than the other, and which one changes from run to run. The two recordings hold the calls in
different orders, yet they hash alike and ``diff`` finds them the same."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    ECHO_MODEL,
    AssistantMessageEvent,
    Context,
    EchoProvider,
    Model,
    SimpleStreamOptions,
    StreamOptions,
    UserMessage,
    complete_simple,
)
from openprogram.recording.writer import close_recording_writers
from openprogram.store.hashing import transcript_hash
from tests.support.cli_runner import run
from tests.support.tool_sessions import recording_into


class SlowAgentEcho(EchoProvider):
    """The echo model, answering the agent named ``slow`` after a pause."""

    def __init__(self, slow: str) -> None:
        self.slow = slow

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._paused(context, super().stream(model, context, options))

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._paused(context, super().stream_simple(model, context, options))

    async def _paused(
        self, context: Context, events: AsyncIterator[AssistantMessageEvent]
    ) -> AsyncIterator[AssistantMessageEvent]:
        first = context.messages[0]
        agent = first.content.split()[0] if isinstance(first, UserMessage) else ""
        await asyncio.sleep(0.02 if agent == self.slow else 0.0)
        async for event in events:
            yield event


async def sub_agent(name: str) -> None:
    for turn in range(3):
        prompt = f"{name} {'start' if turn == 0 else f'turn {turn}'}"
        await complete_simple(ECHO_MODEL, Context(messages=[UserMessage(content=prompt)]))


async def gathered() -> None:
    await asyncio.gather(sub_agent("A"), sub_agent("B"))


def record(path: Path, slow: str) -> Path:
    with recording_into(path, provider=SlowAgentEcho(slow)):
        asyncio.run(gathered())
    close_recording_writers()
    return path


def test_two_interleavings_of_one_session_hash_alike_and_diff_finds_nothing(
    tmp_path: Path,
) -> None:
    a = read_recording(record(tmp_path / "a.jsonl", slow="A"))
    b = read_recording(record(tmp_path / "b.jsonl", slow="B"))

    prompts_a = [call.request["context"]["messages"][0]["content"] for call in a.calls]
    prompts_b = [call.request["context"]["messages"][0]["content"] for call in b.calls]
    assert prompts_a != prompts_b  # the calls were recorded in other orders
    assert sorted(prompts_a) == sorted(prompts_b)

    assert transcript_hash(a) == transcript_hash(b)
    result = run("diff", str(a.path), str(b.path))
    assert result.exit_code == 0, result.stdout
    assert result.stdout.startswith("✔ the recordings are the same")
