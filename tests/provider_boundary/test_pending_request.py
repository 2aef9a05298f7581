"""Replay reads a provider request's conversation as the state of its models, and dumps only
what a served request does not repeat: the state text is the dump's text for openprogram's
models, any value without one takes the whole dump, and a message changed in place after it
was sent is a drift reported exactly as a whole comparison reports it."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from openprogram.errors import ReplayMismatch
from openprogram.provider_boundary.codec import dump_request, read_recording
from openprogram.provider_boundary.recorder import RecordingProvider
from openprogram.provider_boundary.replay import (
    STATE_TYPES,
    PendingProviderRequest,
    ReplayProvider,
    state_text,
)
from openprogram.providers import (
    AssistantMessage,
    Context,
    ImageContent,
    SimpleStreamOptions,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    complete_simple,
    provider_scope,
    register_api_provider,
)
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.writer import close_recording_writers
from tests.support.scripted_provider import FAKE_MODEL, ScriptedProvider, call

TURNS = 4


def every_kind_of_message() -> list[Any]:
    return [
        UserMessage(content="hello", timestamp=1),
        UserMessage(
            content=[TextContent(text="see"), ImageContent(data="aGk=", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hmm", signature="s"),
                TextContent(text="ok"),
                ToolCall(id="t1", name="lookup", arguments={"q": "x", "n": [1, 2.5, True, None]}),
            ],
            api="a",
            provider="p",
            model="m",
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="t1", tool_name="lookup", content="result é ✓"),
    ]


def test_the_state_text_is_the_text_of_the_dump() -> None:
    context = Context(
        system_prompt="s",
        messages=every_kind_of_message(),
        tools=[Tool(name="lookup", description="d", parameters={"type": "object"})],
    )
    dump = context.model_dump(mode="json")
    assert state_text(context.messages) == orjson.dumps(dump["messages"])
    assert state_text(context.tools or []) == orjson.dumps(dump["tools"])


def test_the_state_models_dump_their_fields_and_no_two_share_field_names() -> None:
    names = set()
    for model in STATE_TYPES:
        decorators = model.__pydantic_decorators__
        assert not decorators.field_serializers, model
        assert not decorators.model_serializers, model
        assert not model.model_computed_fields, model
        for name, field in model.model_fields.items():
            assert field.alias is None, (model, name)
            assert field.serialization_alias is None, (model, name)
            assert not field.exclude, (model, name)
        names.add(frozenset(model.model_fields))
    assert len(names) == len(STATE_TYPES)


class Note(UserMessage):
    pass


@pytest.mark.parametrize(
    "odd",
    [
        UserMessage.model_construct(content=datetime.datetime(2024, 1, 1)),
        Note(content="a subclass"),
        AssistantMessage(
            content=[ToolCall(id="t", name="n", arguments={"big": 2**70})],
            api="a",
            provider="p",
            model="m",
        ),
    ],
    ids=["datetime", "subclass", "big-int"],
)
def test_a_value_without_a_state_text_has_the_request_dumped_whole(odd: Any) -> None:
    context = Context(messages=[UserMessage(content="q"), odd])
    assert state_text(context.messages) is None
    request = PendingProviderRequest(FAKE_MODEL, context, SimpleStreamOptions())
    assert request.list_texts() is None


def test_without_first_is_the_dump_with_those_items_left_out() -> None:
    tools = [Tool(name="a", description="d"), Tool(name="b", description="e")]
    context = Context(system_prompt="s", messages=every_kind_of_message(), tools=tools)
    options = SimpleStreamOptions(temperature=0.5)
    request = PendingProviderRequest(FAKE_MODEL, context, options)
    whole = dump_request(FAKE_MODEL, context, options)
    assert request.whole() == whole
    part = request.without_first({"messages": 3, "tools": 1})
    messages, listed = whole["context"]["messages"], whole["context"]["tools"]
    assert part == {
        **whole,
        "context": {**whole["context"], "messages": messages[3:], "tools": listed[1:]},
    }
    assert request.list_texts() == {
        "messages": (orjson.dumps(messages), 4),
        "tools": (orjson.dumps(listed), 2),
    }


async def conversation(change: Callable[[Context], None] | None = None) -> None:
    """``TURNS`` calls, each adding the reply and a user message; ``change`` is applied to
    the context before the last call."""
    context = Context(messages=[UserMessage(content="q0", timestamp=1)])
    for turn in range(TURNS):
        if turn == TURNS - 1 and change is not None:
            change(context)
        reply = await complete_simple(FAKE_MODEL, context)
        context.messages.append(reply)
        context.messages.append(UserMessage(content=f"q{turn + 1}", timestamp=1))


def recorded(path: Path) -> Path:
    replies: list[Any] = [[call(f"t{n}", "lookup", q=str(n))] for n in range(TURNS)]
    with provider_scope():
        register_api_provider("fake", RecordingProvider(ScriptedProvider(*replies), path))
        asyncio.run(conversation())
    close_recording_writers()
    return path


def replayed(provider: ReplayProvider, change: Callable[[Context], None] | None = None) -> None:
    with provider_scope():
        register_api_provider("fake", provider)
        asyncio.run(conversation(change))


def test_a_conversation_is_dumped_whole_only_for_its_first_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = recorded(tmp_path / "s.jsonl")
    dumped: list[str] = []
    whole, without_first = PendingProviderRequest.whole, PendingProviderRequest.without_first

    def counted_whole(self: PendingProviderRequest) -> dict[str, Any]:
        dumped.append("whole")
        return whole(self)

    def counted_part(self: PendingProviderRequest, counts: dict[str, int]) -> dict[str, Any]:
        dumped.append(f"without {counts['messages']}")
        return without_first(self, counts)

    monkeypatch.setattr(PendingProviderRequest, "whole", counted_whole)
    monkeypatch.setattr(PendingProviderRequest, "without_first", counted_part)
    provider = ReplayProvider(path)
    replayed(provider)
    provider.assert_consumed()
    assert dumped == ["whole", "without 1", "without 3", "without 5"]


def _edit_first_question(context: Context) -> None:
    first = context.messages[0]
    assert isinstance(first, UserMessage)
    first.content = "q0, edited"


def _edit_tool_arguments(context: Context) -> None:
    reply = context.messages[1]
    assert isinstance(reply, AssistantMessage)
    reply.tool_calls[0].arguments["q"] = "other"


def _add_a_block(context: Context) -> None:
    reply = context.messages[3]
    assert isinstance(reply, AssistantMessage)
    reply.content.append(TextContent(text="appended"))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (_edit_first_question, "context.messages[0].content"),
        (_edit_tool_arguments, "context.messages[1].content[0].arguments.q"),
        (_add_a_block, "context.messages[3].content[1]"),
    ],
    ids=["attribute", "nested-dict", "list-append"],
)
def test_a_message_changed_in_place_after_it_was_sent_is_a_drift(
    tmp_path: Path, change: Callable[[Context], None], field: str
) -> None:
    path = recorded(tmp_path / "s.jsonl")
    provider = ReplayProvider(path)
    with pytest.raises(ReplayMismatch) as info:
        replayed(provider, change)
    assert info.value.call_index == TURNS - 1
    assert info.value.field_path == field

    # The same report as the dumped request compared whole.
    session = ReplaySession(read_recording(path))
    redactor = SecretRedactor([])
    calls = session.recording.calls
    for recorded_call in calls[:-1]:
        session.take("provider", recorded_call.request, redactor=redactor.redact_request)
    context = Context.model_validate(calls[-1].request["context"])
    change(context)
    request = dump_request(FAKE_MODEL, context, SimpleStreamOptions())
    with pytest.raises(ReplayMismatch) as whole:
        session.take("provider", request, redactor=redactor.redact_request)
    assert str(info.value) == str(whole.value)
