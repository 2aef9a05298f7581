"""The server-sent event parser follows the SSE dispatch rules, whatever pieces the stream
arrives in, and the encoder writes events that parse back to themselves."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.http_boundary.sse import SseParser, encode_sse_event, is_terminal_event


def parse(*pieces: str) -> list[dict[str, Any]]:
    parser = SseParser()
    events: list[dict[str, Any]] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.finish())
    return events


def encode(event: dict[str, Any]) -> str:
    return encode_sse_event(
        event.get("event"), event["data"], event.get("id"), event.get("retry")
    ).decode()


def test_a_blank_line_dispatches_the_data_lines_joined_with_newlines() -> None:
    assert parse("data: first\ndata: second\n\ndata:third\n\n") == [
        {"data": "first\nsecond"},
        {"data": "third"},
    ]


def test_comment_only_blocks_and_blocks_without_data_dispatch_nothing() -> None:
    stream = ": ping\n\nevent: lonely\nid: 7\n\nevent: message_start\ndata: {}\n\n"
    # The block without data forgets its event type; its id is the stream's last event id,
    # carried by the next event dispatched.
    assert parse(stream) == [{"event": "message_start", "data": "{}", "id": "7"}]


def test_crlf_cr_and_lf_line_ends_are_all_line_ends_even_split_across_pieces() -> None:
    assert parse("data: a\r\ndata: b\r", "\n\r\n", "data: c\r\r", "data: d\n\n") == [
        {"data": "a\nb"},
        {"data": "c"},
        {"data": "d"},
    ]


def test_an_event_is_dispatched_by_the_piece_holding_its_blank_line() -> None:
    parser = SseParser()
    assert parser.feed("data: a\r") == []
    assert parser.feed("\r") == []  # "\r" may still be the first half of "\r\n"
    assert parser.feed("d") == [{"data": "a"}]  # it was not


def test_a_final_block_without_its_blank_line_is_not_dispatched() -> None:
    assert parse("data: a\n\ndata: cut") == [{"data": "a"}]
    assert parse("data: a\n\ndata: b\n") == [{"data": "a"}]
    assert parse("data: a\r\r") == [{"data": "a"}]  # a lone \r at the end ends its line


def test_fields_follow_the_rules_one_space_dropped_unknown_and_invalid_ignored() -> None:
    stream = (
        "\ufeffdata:  two spaces\nfoo: bar\nretry: 12x\nid: a\0b\ndata\n\n"
        "retry: 3000\nid: 9\nevent: e\ndata: x\n\n"
    )
    assert parse(stream) == [
        {"data": " two spaces\n"},
        {"event": "e", "data": "x", "id": "9", "retry": 3000},
    ]


def test_the_parser_is_between_events_only_when_nothing_of_a_next_one_has_come() -> None:
    parser = SseParser()
    assert parser.between_events
    for piece, between in [
        ("data: 1", False),
        ("\n", False),
        ("\n", True),
        (": ping\n\n", True),
        ("event: x\n\n", True),  # a block without data forgets its type
        ("id: 7\n", False),
        ("data: 2\n\n", True),
        ("retry: 5\n", False),
        ("data: 3\n\r", False),
        ("\n", True),
    ]:
        parser.feed(piece)
        assert parser.between_events is between, piece


def test_terminal_events_are_the_vendors_last_ones() -> None:
    assert is_terminal_event({"data": "[DONE]"})
    for kind in ("message_stop", "response.completed", "response.incomplete", "response.failed"):
        assert is_terminal_event({"event": kind, "data": "{}"})
    assert not is_terminal_event({"data": "[DONE] later"})
    assert not is_terminal_event({"event": "message_delta", "data": "[DONE]!"})
    assert not is_terminal_event({"data": '{"type": "message_stop"}'})


def test_a_long_line_in_many_pieces_is_one_line() -> None:
    pieces = ["data: ", *("x" * 10 for _ in range(500)), "\n", "\n"]
    assert parse(*pieces) == [{"data": "x" * 5000}]


line_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"),
    max_size=12,
)
events = st.lists(
    st.fixed_dictionaries(
        {"data": st.lists(line_text, min_size=1, max_size=3).map("\n".join)},
        optional={
            "event": line_text.filter(bool),
            "id": line_text.filter(lambda text: "\0" not in text),
            "retry": st.integers(min_value=0, max_value=10**6),
        },
    ),
    max_size=6,
)


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted({cut % (len(text) + 1) for cut in cuts}), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=150, deadline=None)
@given(events, st.lists(st.integers(min_value=0), max_size=8))
def test_encoded_events_parse_back_to_themselves_in_any_pieces(
    recorded: list[dict[str, Any]], cuts: list[int]
) -> None:
    stream = "".join(encode(event) for event in recorded)
    assert parse(*_pieces(stream, cuts)) == recorded


line = st.one_of(
    st.builds(lambda v: f"data:{v}", line_text),
    st.builds(lambda v: f"data: {v}", line_text),
    st.builds(lambda v: f"event: {v}", line_text),
    st.builds(lambda v: f"id: {v}", line_text),
    st.builds(lambda v: f"retry: {v}", st.integers(min_value=0, max_value=99)),
    st.builds(lambda v: f": {v}", line_text),
    st.just(""),
    st.just("data"),
    line_text,
)
line_end = st.sampled_from(["\n", "\r\n", "\r"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(line, line_end), max_size=25), st.lists(st.integers(0), max_size=6))
def test_any_stream_parses_to_the_events_its_re_serialization_parses_to(
    lines: list[tuple[str, str]], cuts: list[int]
) -> None:
    stream = "".join(text + end for text, end in lines)
    recorded = parse(*_pieces(stream, cuts))
    replayed = parse("".join(encode(event) for event in recorded))
    assert replayed == recorded
    assert all(event["data"] is not None for event in recorded)
