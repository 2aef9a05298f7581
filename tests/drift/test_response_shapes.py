"""The typed shape of a provider's answers, and how a live answer drifted from a recorded one."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.drift.response_shapes import (
    ENUM_FIELDS,
    PathDrift,
    ShapeSummary,
    shape_drift,
    stream_summary,
)


def summary(*values: Any) -> ShapeSummary:
    shapes = ShapeSummary()
    for value in values:
        shapes.add(value)
    return shapes


def completion(text: str = "It is sunny.", *, finish: str = "stop", **message: Any) -> Any:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": text, **message},
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 4},
    }


def chunks(pieces: list[str], *, run: str = "1") -> list[tuple[str | None, Any]]:
    """An OpenAI stream: a role chunk, a chunk per piece, a finish chunk with the usage."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> Any:
        return {
            "id": f"chatcmpl-{run}",
            "object": "chat.completion.chunk",
            "created": 1767225600 + int(run),
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **more,
        }

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in pieces]
    events.append(chunk({}, "stop", usage={"prompt_tokens": 3, "completion_tokens": len(pieces)}))
    return [(None, event) for event in events]


def kinds(drifts: list[PathDrift]) -> list[tuple[str, str, str]]:
    return [(drift.kind, drift.path, drift.what) for drift in drifts]


def test_other_words_ids_times_and_counts_are_content_not_breaking() -> None:
    recorded = summary(completion())
    live = summary({**completion("Rain later."), "id": "chatcmpl-9", "created": 1767229999})

    drifts = shape_drift(recorded, live)

    assert kinds(drifts) == [("content", "choices[*].message.content", "other values")]
    assert drifts[0].line() == (
        "content: choices[*].message.content other values: 'It is sunny.' → 'Rain later.'"
    )


def test_a_stream_chunked_otherwise_has_the_same_shape() -> None:
    recorded = stream_summary(chunks(["It ", "is ", "sunny."]))
    live = stream_summary(chunks(["It is", " sunny."], run="2"))

    assert [drift for drift in shape_drift(recorded, live) if drift.kind != "content"] == []


def test_a_renamed_field_is_missing_and_new() -> None:
    recorded = summary(completion())
    renamed = completion()
    renamed["choices"][0]["stop"] = renamed["choices"][0].pop("finish_reason")

    assert kinds(shape_drift(recorded, summary(renamed))) == [
        ("breaking", "choices[*].finish_reason", "missing"),
        ("additive", "choices[*].stop", "new field"),
    ]


def test_a_changed_type_is_breaking_and_names_both_types() -> None:
    live = completion()
    live["usage"]["prompt_tokens"] = "12"

    (drift,) = shape_drift(summary(completion()), summary(live))

    assert drift == PathDrift("breaking", "usage.prompt_tokens", "type changed", "number", "string")


def test_a_new_field_is_additive_and_its_keys_are_not_listed_again() -> None:
    live = {**completion(), "service_tier": {"name": "default", "level": 1}}

    assert kinds(shape_drift(summary(completion()), summary(live))) == [
        ("additive", "service_tier", "new field")
    ]


def test_a_kind_outside_the_recorded_set_is_breaking() -> None:
    recorded = summary(completion(), completion(finish="tool_calls"))

    (drift,) = shape_drift(recorded, summary(completion(finish="function_call")))

    assert drift.line() == (
        "breaking: choices[*].finish_reason value outside the recorded set: "
        "'stop', 'tool_calls' → 'function_call'"
    )
    assert shape_drift(recorded, summary(completion(finish="tool_calls"))) == []


def test_null_is_optional_not_a_type() -> None:
    recorded = summary(completion())

    drifts = shape_drift(recorded, summary(completion(None)))  # type: ignore[arg-type]

    assert [drift.kind for drift in drifts] == ["content"]


def test_a_field_that_came_only_sometimes_may_stay_away() -> None:
    recorded = stream_summary(chunks(["a", "b"]))
    live_events = chunks(["a", "b"])
    del live_events[-1][1]["usage"]  # the usage came only with the last chunk

    assert [
        d for d in shape_drift(recorded, stream_summary(live_events)) if d.kind != "content"
    ] == []


def test_a_field_every_event_had_missing_from_some_is_breaking() -> None:
    recorded = stream_summary(chunks(["a", "b"]))
    live_events = chunks(["a", "b"])
    del live_events[1][1]["created"]

    breaking = [
        d for d in shape_drift(recorded, stream_summary(live_events)) if d.kind == "breaking"
    ]

    assert kinds(breaking) == [("breaking", "chat.completion.chunk: created", "sometimes missing")]


def test_an_error_body_of_another_shape_is_breaking() -> None:
    recorded = summary({"error": {"type": "rate_limit_error", "message": "slow down"}})
    live = summary({"error": "slow down", "code": 429})

    assert kinds(shape_drift(recorded, live)) == [
        ("breaking", "error", "type changed"),  # its keys are not listed as missing too
        ("additive", "code", "new field"),
    ]


def test_event_types_gone_and_new() -> None:
    recorded = stream_summary(
        [
            ("message_start", {"type": "message_start"}),
            ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "hi"}}),
            ("ping", {"type": "ping"}),
        ]
    )
    live = stream_summary(
        [
            ("message_start", {"type": "message_start"}),
            ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "yo"}}),
            ("content_block_delta", {"type": "content_block_delta", "delta": {"text": "!"}}),
            ("signature_delta", {"type": "signature_delta"}),
        ]
    )

    assert kinds(shape_drift(recorded, live)) == [
        ("breaking", "ping", "event type no longer sent"),
        ("additive", "signature_delta", "new event type"),
        ("content", "content_block_delta: delta.text", "other values"),
    ]


def test_events_without_a_name_are_grouped_by_their_type_or_object() -> None:
    grouped = stream_summary([(None, {"type": "a"}), (None, {"object": "b"}), (None, [1])])

    assert sorted(grouped) == ["-", "a", "b"]


# --- the property: the same shape with other values is never breaking ---------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "type", "id", "text"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def other_values(value: Any, key: str = "") -> Any:
    """``value`` with every scalar changed, its type kept (the kind of a kind field too)."""
    if isinstance(value, dict):
        return {name: other_values(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [other_values(item, key) for item in value]
    if key in ENUM_FIELDS or value is None:
        return value
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value}~"


@settings(max_examples=150, deadline=None)
@given(st.lists(json_values, min_size=1, max_size=3))
def test_the_same_shape_with_other_values_is_never_breaking_or_additive(
    values: list[Any],
) -> None:
    recorded = summary(*values)
    live = summary(*(other_values(copy.deepcopy(value)) for value in values))

    assert [d for d in shape_drift(recorded, live) if d.kind != "content"] == []
    assert shape_drift(recorded, summary(*values)) == []
