"""A stand-in for Amazon Bedrock's Converse API on ``127.0.0.1``, for boto3's
``bedrock-runtime`` client.

``POST /model/{modelId}/converse`` answers one JSON object (``output.message.content`` of
``text`` and ``toolUse`` blocks, ``stopReason``, ``usage``, ``metrics``);
``POST /model/{modelId}/converse-stream`` answers the same reply in AWS's binary event stream
(``application/vnd.amazon.eventstream``): ``messageStart``, per block ``contentBlockStart``
(a tool use), ``contentBlockDelta`` pieces and ``contentBlockStop``, then ``messageStop`` and
``metadata``. The reply is ``echo: <the last user text>``; a request offering tools also gets a
call of its first tool, with :data:`TOOL_INPUT`. Each response carries a new
``x-amzn-requestid``, as AWS's do.

The event-stream encoding is written here from the format (:func:`event_message`), on its own:
the tests check it against botocore's parser, and openprogram's reading of it against it.

    with BedrockServer() as server:
        client = bedrock_client(server.base_url)
        client.converse(modelId=MODEL_ID, messages=[...])
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received

__all__ = [
    "MODEL_ID",
    "TOOL_INPUT",
    "WEATHER_TOOL",
    "BedrockServer",
    "bedrock_client",
    "converse_events",
    "event_message",
    "reply_blocks",
]

MODEL_ID = "anthropic.claude-3-haiku-20240307-v1:0"
TOOL_INPUT = {"city": "Paris", "unit": "celsius"}
WEATHER_TOOL: dict[str, Any] = {
    "tools": [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "The weather in a city.",
                "inputSchema": {
                    "json": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
                        "required": ["city"],
                    }
                },
            }
        }
    ]
}

"""Converse's ``toolConfig`` offering the one tool the server calls with :data:`TOOL_INPUT`."""
ACCESS_KEY_ID = "AKIATESTFAKE"
SECRET_ACCESS_KEY = "fake"
SESSION_TOKEN = "faketoken"


def bedrock_client(
    endpoint_url: str,
    *,
    access_key_id: str = ACCESS_KEY_ID,
    session_token: str = SESSION_TOKEN,
) -> Any:
    """boto3's ``bedrock-runtime`` client for ``endpoint_url``, with fake credentials and one
    retry (botocore's standard mode)."""
    import boto3  # type: ignore[import-untyped]
    from botocore.config import Config  # type: ignore[import-untyped]

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        aws_access_key_id=access_key_id,
        aws_secret_access_key=SECRET_ACCESS_KEY,
        aws_session_token=session_token,
        config=Config(retries={"max_attempts": 2, "mode": "standard"}),
    )


def event_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One event-stream message: the prelude (total length, headers length, their CRC32),
    ``headers`` (all of string type, 7), ``payload``, and the CRC32 of all that."""
    encoded = b""
    for name, value in headers.items():
        raw_name, raw_value = name.encode(), value.encode()
        encoded += bytes([len(raw_name)]) + raw_name + b"\x07"
        encoded += struct.pack(">H", len(raw_value)) + raw_value
    total = 12 + len(encoded) + len(payload) + 4
    prelude = struct.pack(">II", total, len(encoded))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + encoded + payload
    return message + struct.pack(">I", zlib.crc32(message))


def _event(event_type: str, body: dict[str, Any]) -> bytes:
    headers = {
        ":event-type": event_type,
        ":content-type": "application/json",
        ":message-type": "event",
    }
    return event_message(headers, json.dumps(body, separators=(",", ":")).encode())


def _last_user_text(request: dict[str, Any]) -> str:
    for message in reversed(request.get("messages", [])):
        if message.get("role") == "user":
            return "".join(block.get("text", "") for block in message.get("content", []))
    return ""


def reply_blocks(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the reply to ``request``: the echo, and a call of its first
    tool when it offers tools."""
    blocks: list[dict[str, Any]] = [{"text": f"echo: {_last_user_text(request)}"}]
    tools = request.get("toolConfig", {}).get("tools", [])
    if tools:
        name = tools[0]["toolSpec"]["name"]
        blocks.append({"toolUse": {"toolUseId": "tooluse_1", "name": name, "input": TOOL_INPUT}})
    return blocks


def _stop_reason(blocks: list[dict[str, Any]]) -> str:
    return "tool_use" if any("toolUse" in block for block in blocks) else "end_turn"


USAGE = {"inputTokens": 12, "outputTokens": 7, "totalTokens": 19}
METRICS = {"latencyMs": 321}


def converse_events(request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The events of the streamed reply to ``request`` (type, payload), in order."""
    blocks = reply_blocks(request)
    events: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for index, block in enumerate(blocks):
        if "text" in block:
            text = block["text"]
            middle = len(text) // 2
            for piece in (text[:middle], text[middle:]):
                events.append(
                    ("contentBlockDelta", {"delta": {"text": piece}, "contentBlockIndex": index})
                )
        else:
            tool = block["toolUse"]
            start = {"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"]}}
            events.append(("contentBlockStart", {"start": start, "contentBlockIndex": index}))
            arguments = json.dumps(tool["input"])
            for piece in (arguments[:9], arguments[9:]):
                events.append(
                    (
                        "contentBlockDelta",
                        {"delta": {"toolUse": {"input": piece}}, "contentBlockIndex": index},
                    )
                )
        events.append(("contentBlockStop", {"contentBlockIndex": index}))
    events.append(("messageStop", {"stopReason": _stop_reason(blocks)}))
    events.append(("metadata", {"usage": USAGE, "metrics": METRICS}))
    return events


class BedrockServer(LoopbackServer):
    """Converse and ConverseStream on loopback. ``piece_size``: the stream is sent in chunks
    of that many bytes, cutting messages anywhere (default: one chunk per message);
    ``cut_at``: the connection is closed after that many bytes of the stream, without its end;
    ``whole``: the stream is sent as one body with a ``content-length``, not chunked.
    Each stream's bytes are kept in ``streams``."""

    path_with_query = False

    def __init__(
        self, *, piece_size: int | None = None, cut_at: int | None = None, whole: bool = False
    ) -> None:
        super().__init__()
        self.piece_size = piece_size
        self.cut_at = cut_at
        self.whole = whole
        self.streams: list[bytes] = []
        """The bytes of each event stream sent, in order."""

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        request = received.json()
        model, _, operation = unquote(received.path).removeprefix("/model/").rpartition("/")
        request_id = {"x-amzn-requestid": str(uuid.uuid4())}
        if operation == "converse":
            blocks = reply_blocks(request)
            body = json.dumps(
                {
                    "output": {"message": {"role": "assistant", "content": blocks}},
                    "stopReason": _stop_reason(blocks),
                    "usage": USAGE,
                    "metrics": METRICS,
                }
            ).encode()
            http.send_head(
                200,
                {
                    "content-type": "application/json",
                    "content-length": str(len(body)),
                    **request_id,
                },
            )
            http.send_body(body)
            return
        if operation != "converse-stream" or not model:
            body = json.dumps({"message": f"no such operation: {received.path}"}).encode()
            http.send_head(
                404,
                {
                    "content-type": "application/json",
                    **request_id,
                    "content-length": str(len(body)),
                },
            )
            http.send_body(body)
            return
        messages = [_event(kind, payload) for kind, payload in converse_events(request)]
        stream = b"".join(messages)
        self.streams.append(stream)
        if self.whole:
            http.send_head(
                200,
                {
                    "content-type": "application/vnd.amazon.eventstream",
                    "content-length": str(len(stream)),
                    **request_id,
                },
            )
            http.send_body(stream)
            return
        http.send_head(
            200,
            {
                "content-type": "application/vnd.amazon.eventstream",
                "transfer-encoding": "chunked",
                **request_id,
            },
        )
        if self.piece_size is None:
            pieces = messages
        else:
            pieces = [
                stream[at : at + self.piece_size] for at in range(0, len(stream), self.piece_size)
            ]
        if self.cut_at is not None:
            http.send_chunk(stream[: self.cut_at])
            http.cut()
            return
        for piece in pieces:
            http.send_chunk(piece)
        http.end_chunks()
