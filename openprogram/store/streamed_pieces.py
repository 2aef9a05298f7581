"""The pieces of text a model streamed, by content block, where each piece stands in a call.

A model streams a reply in deltas: a credential may be cut across two of them, whole in
neither row but whole in the text they make together. :func:`streamed_blocks` finds, for one
recorded call, every block of streamed text — its pieces in order, each with the event it
stands in and the path to its string inside that event row:

* a provider call: ``text_delta``, ``thinking_delta`` and ``toolcall_delta`` events, by
  ``content_index`` (``delta``);
* an HTTP call to a model API the views know (:func:`~openprogram.store.http_views.
  http_api`), from its ``sse`` events: Chat Completions ``choices[i].delta`` (``content``,
  ``refusal``, ``reasoning_content``, ``reasoning``, and each ``tool_calls`` entry's
  ``function.arguments`` by its ``index``); Responses ``response.*.delta`` events by output
  and content index (text, refusal, reasoning) and ``response.function_call_arguments.delta``
  by output index; Anthropic Messages ``content_block_delta`` by block ``index``
  (``text``, ``thinking``, ``partial_json``).

:func:`respread` puts a block's redacted text back into its pieces: what did not change stays
in the piece it was in, and each changed stretch goes to the piece where it started, so the
pieces still make exactly the redacted text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

from openprogram.store.http_views import http_api

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall

__all__ = ["Piece", "Stretch", "respread", "streamed_blocks"]

PathPart = str | int

_PROVIDER_DELTAS = frozenset({"text_delta", "thinking_delta", "toolcall_delta"})
_CHAT_TEXT_FIELDS = ("content", "refusal", "reasoning_content", "reasoning")
_RESPONSES_DELTAS = {
    "response.output_text.delta": ("text", "content_index"),
    "response.refusal.delta": ("refusal", "content_index"),
    "response.reasoning_summary_text.delta": ("summary", "summary_index"),
    "response.reasoning_text.delta": ("reasoning", "content_index"),
    "response.function_call_arguments.delta": ("arguments", None),
}
_ANTHROPIC_DELTAS = {
    "text_delta": "text",
    "thinking_delta": "thinking",
    "input_json_delta": "partial_json",
}
# A stretch of unchanged text shorter than this between two changed ones joins them: the
# placeholder's letters can line up with single letters of what it replaced.
_JOIN_GAP = 4


@dataclass(frozen=True)
class Piece:
    """One streamed piece: the event (its position in the call's events), the path to the
    string in that event row, and the string."""

    event: int
    path: tuple[PathPart, ...]
    text: str


@dataclass(frozen=True)
class Stretch:
    """A changed stretch of a block's text: the pieces it spans (positions in the block)."""

    first: int
    last: int
    start: int
    """Where it starts in the block's text."""
    end: int


def streamed_blocks(call: RecordedCall) -> list[list[Piece]]:
    """The streamed blocks of ``call`` (see the module's docstring), each its pieces in
    order; blocks of one piece are left out (nothing can be cut across pieces there)."""
    blocks: dict[Any, list[Piece]] = {}
    if call.boundary == "provider":
        pieces: Iterator[tuple[Any, Piece]] = _provider_pieces(call.event_rows)
    else:
        pieces = _http_pieces(call)
    for key, piece in pieces:
        blocks.setdefault(key, []).append(piece)
    return [block for block in blocks.values() if len(block) > 1]


def _provider_pieces(rows: list[dict[str, Any]]) -> Iterator[tuple[Any, Piece]]:
    for position, row in enumerate(rows):
        if row.get("type") in _PROVIDER_DELTAS and isinstance(row.get("delta"), str):
            yield row.get("content_index"), Piece(position, ("delta",), row["delta"])


def _http_pieces(call: RecordedCall) -> Iterator[tuple[Any, Piece]]:
    rows = call.event_rows
    first = next((row.get("data") for row in rows if row.get("type") == "sse"), None)
    api = http_api(call.request, first)
    for position, row in enumerate(rows):
        data = row.get("data")
        if row.get("type") != "sse" or not isinstance(data, dict):
            continue
        if api == "openai-completions":
            yield from _chat_pieces(position, data)
        elif api == "openai-responses":
            yield from _responses_pieces(position, data)
        elif api == "anthropic-messages":
            yield from _anthropic_pieces(position, data)


def _chat_pieces(position: int, data: dict[str, Any]) -> Iterator[tuple[Any, Piece]]:
    choices = data.get("choices")
    if not isinstance(choices, list):
        return
    for number, choice in enumerate(choices):
        if not isinstance(choice, dict) or not isinstance(choice.get("delta"), dict):
            continue
        choice_key = choice.get("index", number)
        delta = choice["delta"]
        base: tuple[PathPart, ...] = ("data", "choices", number, "delta")
        for field in _CHAT_TEXT_FIELDS:
            if isinstance(delta.get(field), str):
                yield (choice_key, field), Piece(position, (*base, field), delta[field])
        calls = delta.get("tool_calls")
        for place, entry in enumerate(calls if isinstance(calls, list) else []):
            function = entry.get("function") if isinstance(entry, dict) else None
            if isinstance(function, dict) and isinstance(function.get("arguments"), str):
                path = (*base, "tool_calls", place, "function", "arguments")
                key = (choice_key, "tool", entry.get("index", place))
                yield key, Piece(position, path, function["arguments"])


def _responses_pieces(position: int, data: dict[str, Any]) -> Iterator[tuple[Any, Piece]]:
    kind = data.get("type")
    if kind not in _RESPONSES_DELTAS or not isinstance(data.get("delta"), str):
        return
    family, part = _RESPONSES_DELTAS[kind]
    key = (family, data.get("output_index"), None if part is None else data.get(part))
    yield key, Piece(position, ("data", "delta"), data["delta"])


def _anthropic_pieces(position: int, data: dict[str, Any]) -> Iterator[tuple[Any, Piece]]:
    delta = data.get("delta")
    if data.get("type") != "content_block_delta" or not isinstance(delta, dict):
        return
    field = _ANTHROPIC_DELTAS.get(str(delta.get("type")))
    if field is not None and isinstance(delta.get(field), str):
        yield data.get("index"), Piece(position, ("data", "delta", field), delta[field])


def respread(texts: list[str], redacted: str) -> tuple[list[str], list[Stretch]]:
    """``texts`` (a block's pieces) made to hold ``redacted`` (the redaction of their
    joined text) instead, and the changed stretches; the new pieces join to ``redacted``."""
    whole = "".join(texts)
    starts: list[int] = []
    offset = 0
    for text in texts:
        starts.append(offset)
        offset += len(text)
    out: list[list[str]] = [[] for _ in texts]
    stretches: list[Stretch] = []
    for tag, i1, i2, j1, j2 in _joined_opcodes(whole, redacted):
        if tag == "equal":
            for index in range(_piece_at(starts, i1), len(texts)):
                start = max(i1, starts[index])
                end = min(i2, starts[index] + len(texts[index]))
                if start >= i2:
                    break
                if end > start:
                    out[index].append(redacted[j1 + start - i1 : j1 + end - i1])
            continue
        first = _piece_at(starts, i1 if i1 < i2 or i1 == 0 else i1 - 1)
        last = _piece_at(starts, max(i1, i2 - 1))
        out[first].append(redacted[j1:j2])
        stretches.append(Stretch(first, last, i1, i2))
    return ["".join(parts) for parts in out], stretches


def _piece_at(starts: list[int], position: int) -> int:
    """The piece holding ``position`` of the joined text (the last piece for its end)."""
    low, high = 0, len(starts) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if starts[middle] <= position:
            low = middle
        else:
            high = middle - 1
    return low


def _joined_opcodes(whole: str, redacted: str) -> list[tuple[str, int, int, int, int]]:
    """The opcodes turning ``whole`` into ``redacted``, changed ones separated by fewer than
    a few unchanged characters joined into one."""
    # Only the middle, between what both share at the start and the end, is compared.
    limit = min(len(whole), len(redacted))
    prefix = 0
    while prefix < limit and whole[prefix] == redacted[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and whole[-1 - suffix] == redacted[-1 - suffix]:
        suffix += 1
    middle = SequenceMatcher(
        None, whole[prefix : len(whole) - suffix], redacted[prefix : len(redacted) - suffix]
    ).get_opcodes()
    opcodes = [("equal", 0, prefix, 0, prefix)] if prefix else []
    opcodes += [
        (t, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix) for t, i1, i2, j1, j2 in middle
    ]
    if suffix:
        end_a, end_b = len(whole), len(redacted)
        opcodes.append(("equal", end_a - suffix, end_a, end_b - suffix, end_b))
    joined: list[tuple[str, int, int, int, int]] = []
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal" and joined and joined[-1][0] != "equal":
            previous = joined.pop()
            joined.append(("replace", previous[1], i2, previous[3], j2))
            continue
        if (
            tag == "equal"
            and i2 - i1 < _JOIN_GAP
            and joined
            and joined[-1][0] != "equal"
            and (i2, j2) != (len(whole), len(redacted))
        ):
            previous = joined.pop()
            joined.append(("replace", previous[1], i2, previous[3], j2))
            continue
        joined.append((tag, i1, i2, j1, j2))
    return joined
