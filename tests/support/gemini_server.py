"""A loopback stand-in for Gemini's REST API (the Gemini Developer API), for driving the real
``google-genai`` SDK over a real socket.

It answers the two methods an agent generates with, under ``/v1beta`` and ``/v1`` (the
version google-genai 3 sends by default):

* ``POST /v1beta/models/{model}:generateContent``: one ``GenerateContentResponse`` as JSON;
* ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``: the same reply as
  server-sent events, each ``data:`` one ``GenerateContentResponse`` carrying the next piece
  of text, the last one with the ``finishReason`` and the ``usageMetadata``. As the API does,
  the stream has no end marker: the body simply ends.

A reply is ``echo: <the last user text>``, unless the request declares functions
(``tools[].functionDeclarations``): then the model calls the first one (a ``functionCall``
part with ``name`` and ``args``), and the request that sends its ``functionResponse`` back is
answered ``the tool said: <its response as JSON>``. Each response carries the values the API
makes anew every time, a ``responseId`` and a ``date``. The key is taken from the
``x-goog-api-key`` header or the ``key=`` query parameter; a request without one gets the
API's 403 error body, and one for :data:`MISSING_MODEL` its 404.

    with GeminiServer() as server:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
        client.models.generate_content(model="gemini-2.5-flash", contents="hello")
        assert server.received[0].headers["x-goog-api-key"] == "k"
"""

from __future__ import annotations

import json
import re
import secrets
import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received, sse_event

__all__ = ["ARGUMENTS", "MISSING_MODEL", "MODEL", "GeminiServer", "Received", "reply_pieces"]

MODEL = "gemini-2.5-flash"
MISSING_MODEL = "gemini-0-missing"
"""A model the API does not have: asked for, it answers 404 ``NOT_FOUND``."""
ARGUMENTS = {"city": "Paris"}
"""The arguments the model calls a declared function with."""
_VERSION = "gemini-2.5-flash-001"
_ROUTE = re.compile(r"/v1(?:beta)?/models/([^/:]+):(\w+)")


def reply_pieces(text: str) -> list[str]:
    """The pieces a streamed reply of ``text`` arrives in: one word (and the space before it)
    each."""
    words = text.split(" ")
    return [words[0], *(" " + word for word in words[1:])]


class GeminiServer(LoopbackServer):
    """Gemini's ``generateContent`` and ``streamGenerateContent`` on ``127.0.0.1``; a context
    manager (started on creation). ``base_url`` is what ``HttpOptions(base_url=…)`` takes."""

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        url = urlsplit(received.path)
        route = _ROUTE.fullmatch(url.path)
        model, method = route.groups() if route else ("", "")
        key = received.headers.get("x-goog-api-key") or parse_qs(url.query).get("key", [""])[0]
        if not key:
            self._send_json(
                http,
                403,
                _error(403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED"),
            )
        elif model == MISSING_MODEL:
            message = f"models/{model} is not found for API version v1beta."
            self._send_json(http, 404, _error(404, message, "NOT_FOUND"))
        elif method == "generateContent":
            self._send_json(http, 200, _response(_parts(received.json()), model, final=True))
        elif method == "streamGenerateContent":
            self._send_stream(http, _parts(received.json()), model)
        else:
            self._send_json(http, 404, _error(404, f"Method {method!r} not found.", "NOT_FOUND"))

    def _send_json(self, http: LoopbackHandler, status: int, value: Any) -> None:
        raw = json.dumps(value).encode()
        headers = {
            "content-type": "application/json; charset=UTF-8",
            "content-length": str(len(raw)),
        }
        http.send_head(status, headers)
        http.send_body(raw)

    def _send_stream(self, http: LoopbackHandler, parts: list[dict[str, Any]], model: str) -> None:
        http.send_head(200, {"content-type": "text/event-stream", "transfer-encoding": "chunked"})
        text = parts[0].get("text")
        pieces = [{"text": piece} for piece in reply_pieces(text)] if text is not None else parts
        response_id = _response_id()
        for number, piece in enumerate(pieces):
            final = number == len(pieces) - 1
            chunk = _response([piece], model, final=final, response_id=response_id)
            http.send_chunk(sse_event(chunk, separators=(",", ":")))
            time.sleep(0.0005)
        http.end_chunks()


def _parts(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of the model's reply to ``request``."""
    contents = request.get("contents") or [{}]
    last = contents[-1].get("parts") or [{}]
    answered = next((part["functionResponse"] for part in last if "functionResponse" in part), None)
    if answered is not None:
        return [{"text": "the tool said: " + json.dumps(answered.get("response"))}]
    declared = [
        declaration
        for tool in request.get("tools") or []
        for declaration in tool.get("functionDeclarations") or []
    ]
    if declared:
        return [{"functionCall": {"name": declared[0]["name"], "args": ARGUMENTS}}]
    said = " ".join(part["text"] for part in last if "text" in part)
    return [{"text": "echo: " + said}]


def _response(
    parts: list[dict[str, Any]], model: str, *, final: bool, response_id: str | None = None
) -> dict[str, Any]:
    """One ``GenerateContentResponse``: ``final`` holds the finish reason and the counts."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    response: dict[str, Any] = {"candidates": [candidate]}
    if final:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = {
            "promptTokenCount": 4,
            "candidatesTokenCount": 6,
            "totalTokenCount": 10,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 4}],
        }
    response["modelVersion"] = _VERSION if model == MODEL else model
    response["responseId"] = response_id or _response_id()
    return response


def _response_id() -> str:
    return secrets.token_urlsafe(16)


def _error(code: int, message: str, status: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}
