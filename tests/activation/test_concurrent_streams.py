"""Many calls streaming into one recording at once — 50 asyncio tasks at the provider
registry, 8 threads at HTTP — give one valid recording, every call's rows complete and its
own, and the same program replays from it (its calls arriving in another order)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path

import orjson

import openprogram
from openprogram.provider_boundary.codec import read_recording
from openprogram.providers import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    DoneEvent,
    Model,
    SimpleStreamOptions,
    StartEvent,
    StreamOptions,
    TextContent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    UserMessage,
    complete_simple,
)
from tests.support.offline import offline
from tests.support.scripted_provider import serving
from tests.support.sdk_server import SdkServer

STUTTER = Model(id="stutter-1", api="stutter", provider="stutter")


class StutteringModel:
    """Answers ``said: <prompt>`` a word per event, letting other tasks run between events."""

    requires_credentials = False
    api_key_env: str | None = None

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._reply(model, context)

    async def _reply(self, model: Model, context: Context) -> AsyncIterator[AssistantMessageEvent]:
        prompt = context.messages[-1]
        assert isinstance(prompt, UserMessage)
        assert isinstance(prompt.content, str)
        words = f"said: {prompt.content}".split(" ")
        yield StartEvent(api=model.api, provider=model.provider, model=model.id)
        yield TextStartEvent(content_index=0)
        for position, word in enumerate(words):
            await asyncio.sleep(0)  # another task's stream goes on here
            yield TextDeltaEvent(content_index=0, delta=word if position == 0 else f" {word}")
        text = " ".join(words)
        yield TextEndEvent(content_index=0, content=text)
        message = AssistantMessage(
            content=[TextContent(text=text)], api=model.api, provider=model.provider, model=model.id
        )
        yield DoneEvent(reason="stop", message=message)


async def fifty_tasks(order: range) -> dict[int, str]:
    async def ask(task: int) -> tuple[int, str]:
        prompt = f"task {task} asks about item number {task * 7}"
        reply = await complete_simple(STUTTER, Context(messages=[UserMessage(content=prompt)]))
        return task, reply.text

    return dict(await asyncio.gather(*(ask(task) for task in order)))


def interleaved(path: Path) -> bool:
    """Whether some call's rows are interrupted by another call's in the file."""
    open_calls: set[int] = set()
    for line in path.read_bytes().splitlines()[1:]:
        row = orjson.loads(line)
        if row["type"] == "request":
            open_calls.add(row["call_index"])
        elif row["type"] == "call_end":
            open_calls.discard(row["call_index"])
        if len(open_calls) > 1:
            return True
    return False


def test_fifty_tasks_streaming_at_once_record_one_valid_recording_that_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tasks.jsonl"
    with serving(StutteringModel(), "stutter"):  # type: ignore[arg-type]
        with openprogram.record_replay(path, mode="record"):
            recorded = asyncio.run(fifty_tasks(range(50)))

        recording = read_recording(path)  # strict: every row checked
        assert interleaved(path)
        assert [call.call_index for call in recording.calls] == list(range(50))
        for call in recording.calls:
            assert call.outcome == "complete"
            prompt = call.request["context"]["messages"][0]["content"]
            assert [event.type for event in call.events][-2:] == ["text_end", "done"]
            assert call.events[-1].message.text == f"said: {prompt}"  # type: ignore[union-attr]

        with offline(), openprogram.record_replay(path, mode="replay") as active:
            replayed = asyncio.run(fifty_tasks(range(49, -1, -1)))

    assert replayed == recorded
    assert recorded[7] == "said: task 7 asks about item number 49"
    assert active.session is not None
    assert active.session.calls_consumed == 50


def eight_threads(url: str, order: list[int]) -> dict[int, str]:
    import httpx2

    answers: dict[int, str] = {}
    start = threading.Barrier(len(order))
    all_streaming = threading.Barrier(len(order))  # every call open before any ends

    def stream(thread: int) -> None:
        body = {
            "model": "gpt-4o-mini",
            "stream": True,
            "messages": [{"role": "user", "content": f"thread {thread} wants a longer answer"}],
        }
        text = ""
        start.wait()
        with (
            httpx2.Client() as client,
            client.stream("POST", f"{url}/chat/completions", json=body, timeout=10) as response,
        ):
            for position, line in enumerate(response.iter_lines()):
                if position == 0:
                    all_streaming.wait(timeout=10)
                data = line.removeprefix("data: ")
                if line.startswith("data: ") and data != "[DONE]":
                    for choice in orjson.loads(data)["choices"]:
                        text += choice["delta"].get("content") or ""
        answers[thread] = text

    threads = [threading.Thread(target=stream, args=(thread,)) for thread in order]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def test_eight_threads_streaming_at_once_record_one_valid_recording_that_replays(
    tmp_path: Path,
) -> None:
    path = tmp_path / "threads.jsonl"
    with SdkServer() as server, openprogram.record_replay(path, mode="record"):
        url = server.openai_url
        recorded = eight_threads(url, list(range(8)))

    recording = read_recording(path)
    assert interleaved(path)
    assert len(recording.calls) == 8
    for call in recording.calls:
        assert call.outcome == "complete"
        kinds = [row["type"] for row in call.event_rows]
        assert kinds[0] == "http_response"
        assert set(kinds[1:]) == {"sse"}
        assert call.event_rows[-1]["data"] == "[DONE]"
    assert recorded[3] == "You said: thread 3 wants a longer answer"

    with offline(), openprogram.record_replay(path, mode="replay") as active:
        replayed = eight_threads(url, list(reversed(range(8))))

    assert replayed == recorded
    assert active.session is not None
    assert active.session.calls_consumed == 8
