"""What each vendor's server sends, as bytes: OpenAI Chat Completions chunks and Anthropic
Messages events, one by one (``oa_*``, ``an_*``), and whole replies built the same way for
either vendor (:class:`OpenAIWire`, :class:`AnthropicWire`) from the blocks a reply holds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from tests.support.sse_server import sse_event


@dataclass(frozen=True)
class Text:
    """A text block, streamed as ``pieces``."""

    pieces: tuple[str, ...]

    def __init__(self, *pieces: str) -> None:
        object.__setattr__(self, "pieces", pieces)


@dataclass(frozen=True)
class Thinking:
    """A thinking block, streamed as ``pieces``; Anthropic signs it with ``signature``."""

    pieces: tuple[str, ...]
    signature: str | None = None


@dataclass(frozen=True)
class ToolUse:
    """A tool call whose JSON arguments arrive as ``pieces`` (none: no arguments at all)."""

    call_id: str
    name: str
    pieces: tuple[str, ...] = ()


Block = Text | Thinking | ToolUse


class Wire(Protocol):
    """One vendor's stream format."""

    def text_reply(self, *texts: str) -> bytes:
        """A whole text reply streamed as ``texts``, as the vendor's servers send one."""
        ...

    def reply(self, *blocks: Block, finish: str | None = None) -> bytes:
        """A whole reply holding ``blocks``, finished with the vendor's own ``finish`` reason
        (by default the one for a reply that does, or does not, call a tool)."""
        ...

    def without_its_end(self, *blocks: Block) -> bytes:
        """A reply whose stream ends cleanly but lacks what finishes the reply."""
        ...

    def text_beginning(self, *texts: str) -> bytes:
        """The start of a text reply, and nothing more."""
        ...

    def error_mid_stream(self, text: str, kind: str, message: str) -> bytes:
        """A text reply interrupted by the server's own error of type ``kind``."""
        ...

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        """The JSON body of an HTTP error answer."""
        ...


# -- OpenAI Chat Completions ----------------------------------------------------------------


def oa_chunk(
    delta: dict[str, Any] | None = None,
    *,
    finish: str | None = None,
    usage: dict[str, Any] | None = None,
    no_choices: bool = False,
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-test",
        "choices": []
        if no_choices
        else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def oa_usage(prompt: int = 12, completion: int = 5, cached: int = 0) -> dict[str, Any]:
    return oa_chunk(
        no_choices=True,
        usage={
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    )


def oa_stream(*chunks: dict[str, Any], done: bool = True) -> bytes:
    body = b"".join(sse_event(chunk) for chunk in chunks)
    return body + (sse_event("[DONE]") if done else b"")


def oa_text_reply(*texts: str, finish: str = "stop") -> bytes:
    return oa_stream(
        oa_chunk({"role": "assistant", "content": ""}),
        *(oa_chunk({"content": text}) for text in texts),
        oa_chunk(finish=finish),
        oa_usage(),
    )


def oa_tool_piece(
    index: int,
    *,
    call_id: str | None = None,
    name: str | None = None,
    arguments: str | None = None,
) -> dict[str, Any]:
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    piece: dict[str, Any] = {"index": index, "function": function}
    if call_id is not None:
        piece["id"] = call_id
        piece["type"] = "function"
    return oa_chunk({"tool_calls": [piece]})


class OpenAIWire:
    """Chat Completions: content and reasoning as deltas, tool calls numbered among
    themselves, ``finish_reason`` in a last chunk, usage after it, then ``[DONE]``."""

    def _chunks(self, blocks: tuple[Block, ...]) -> list[dict[str, Any]]:
        chunks = [oa_chunk({"role": "assistant", "content": None})]  # as a server opens one
        tool_index = 0
        for block in blocks:
            if isinstance(block, Text):
                chunks += [oa_chunk({"content": piece}) for piece in block.pieces]
            elif isinstance(block, Thinking):
                chunks += [oa_chunk({"reasoning_content": piece}) for piece in block.pieces]
            else:
                chunks.append(
                    oa_tool_piece(tool_index, call_id=block.call_id, name=block.name, arguments="")
                )
                chunks += [oa_tool_piece(tool_index, arguments=piece) for piece in block.pieces]
                tool_index += 1
        return chunks

    def text_reply(self, *texts: str) -> bytes:
        return oa_text_reply(*texts)

    def reply(self, *blocks: Block, finish: str | None = None) -> bytes:
        uses_tools = any(isinstance(block, ToolUse) for block in blocks)
        reason = finish or ("tool_calls" if uses_tools else "stop")
        return oa_stream(*self._chunks(blocks), oa_chunk(finish=reason), oa_usage())

    def without_its_end(self, *blocks: Block) -> bytes:
        return oa_stream(*self._chunks(blocks))  # [DONE], but no finish_reason before it

    def text_beginning(self, *texts: str) -> bytes:
        return oa_stream(*(oa_chunk({"content": text}) for text in texts), done=False)

    def error_mid_stream(self, text: str, kind: str, message: str) -> bytes:
        error = {"error": {"message": message, "type": kind}}
        return oa_stream(oa_chunk({"content": text}), error, done=False)

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


# -- Anthropic Messages ---------------------------------------------------------------------


def an_event(data: dict[str, Any]) -> bytes:
    return sse_event(data, event=data["type"])


def an_message_start(input_tokens: int = 20, cache_read: int = 0, cache_write: int = 0) -> bytes:
    return an_event(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "claude-test",
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "cache_creation_input_tokens": cache_write,
                    "cache_read_input_tokens": cache_read,
                    "output_tokens": 1,
                },
            },
        }
    )


def an_block_start(index: int, block: dict[str, Any]) -> bytes:
    return an_event({"type": "content_block_start", "index": index, "content_block": block})


def an_delta(index: int, delta: dict[str, Any]) -> bytes:
    return an_event({"type": "content_block_delta", "index": index, "delta": delta})


def an_block_stop(index: int) -> bytes:
    return an_event({"type": "content_block_stop", "index": index})


def an_message_delta(stop_reason: str, output_tokens: int = 7) -> bytes:
    return an_event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        }
    )


def an_message_stop() -> bytes:
    return an_event({"type": "message_stop"})


PING = sse_event({"type": "ping"}, event="ping")


def an_text_block(index: int, *pieces: str) -> bytes:
    return b"".join(
        [
            an_block_start(index, {"type": "text", "text": ""}),
            *(an_delta(index, {"type": "text_delta", "text": piece}) for piece in pieces),
            an_block_stop(index),
        ]
    )


def an_tool_block(index: int, call_id: str, name: str, *pieces: str) -> bytes:
    return b"".join(
        [
            an_block_start(index, {"type": "tool_use", "id": call_id, "name": name, "input": {}}),
            *(an_delta(index, {"type": "input_json_delta", "partial_json": p}) for p in pieces),
            an_block_stop(index),
        ]
    )


def an_thinking_block(index: int, pieces: tuple[str, ...], signature: str | None) -> bytes:
    deltas = [an_delta(index, {"type": "thinking_delta", "thinking": p}) for p in pieces]
    if signature is not None:
        deltas.append(an_delta(index, {"type": "signature_delta", "signature": signature}))
    return b"".join(
        [an_block_start(index, {"type": "thinking", "thinking": ""}), *deltas, an_block_stop(index)]
    )


def an_reply(*blocks: bytes, stop_reason: str = "end_turn") -> bytes:
    return b"".join([an_message_start(), *blocks, an_message_delta(stop_reason), an_message_stop()])


def an_text_reply(*texts: str, stop_reason: str = "end_turn") -> bytes:
    return b"".join(
        [
            an_message_start(),
            an_block_start(0, {"type": "text", "text": ""}),
            PING,
            *(an_delta(0, {"type": "text_delta", "text": text}) for text in texts),
            an_block_stop(0),
            an_message_delta(stop_reason),
            an_message_stop(),
        ]
    )


class AnthropicWire:
    """Messages: content blocks numbered in order, each opened, fed and stopped; the stop
    reason in ``message_delta``, then ``message_stop``."""

    def _blocks(self, blocks: tuple[Block, ...]) -> list[bytes]:
        encoded = []
        for index, block in enumerate(blocks):
            if index:
                encoded.append(PING)  # the server may send one between any two events
            if isinstance(block, Text):
                encoded.append(an_text_block(index, *block.pieces))
            elif isinstance(block, Thinking):
                encoded.append(an_thinking_block(index, block.pieces, block.signature))
            else:
                encoded.append(an_tool_block(index, block.call_id, block.name, *block.pieces))
        return encoded

    def text_reply(self, *texts: str) -> bytes:
        return an_text_reply(*texts)

    def reply(self, *blocks: Block, finish: str | None = None) -> bytes:
        uses_tools = any(isinstance(block, ToolUse) for block in blocks)
        reason = finish or ("tool_use" if uses_tools else "end_turn")
        return an_reply(*self._blocks(blocks), stop_reason=reason)

    def without_its_end(self, *blocks: Block) -> bytes:
        # The stop reason arrives, but no message_stop.
        return b"".join([an_message_start(), *self._blocks(blocks), an_message_delta("end_turn")])

    def text_beginning(self, *texts: str) -> bytes:
        return b"".join(
            [
                an_message_start(),
                an_block_start(0, {"type": "text", "text": ""}),
                *(an_delta(0, {"type": "text_delta", "text": text}) for text in texts),
            ]
        )

    def error_mid_stream(self, text: str, kind: str, message: str) -> bytes:
        return b"".join(
            [
                self.text_beginning(text),
                an_event({"type": "error", "error": {"type": kind, "message": message}}),
            ]
        )

    def error_body(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        return {"type": "error", "error": {"type": kind, "message": message}}
