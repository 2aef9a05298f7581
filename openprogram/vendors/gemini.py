"""Google's Gemini API (``…/models/{model}:generateContent`` and ``:streamGenerateContent``),
read from a recorded HTTP call.

A call is one of it when its path ends in ``:generateContent`` or ``:streamGenerateContent`` (the
Gemini Developer API's ``/v1beta/models/…`` and Vertex AI's ``…/publishers/google/models/…`` alike),
or, on a path no vendor claims, when its first SSE event's data or its whole body is a
``GenerateContentResponse``: ``candidates`` with a ``modelVersion``, ``responseId`` or
``usageMetadata`` beside them. A model's ``:embedContent``, ``:batchEmbedContents`` and
``:countTokens`` go to a model too, though the store does not read them.

The new input is the last of the request's ``contents`` — its parts' text, a ``functionCall`` as
``name(args)``, a ``functionResponse`` as ``name → response``, ``[image]``, ``[audio]``, ``[video]``
or ``[file]`` for inline and file data — or the ``systemInstruction`` when there is no content.
Every ``GenerateContentResponse`` (each event of a stream, or the whole body) is read for candidate
0: a part's ``text`` is the reply, or the thinking when the part is a ``thought``; a
``functionCall`` part is a tool call, whole (``name`` and ``args``); ``finishReason`` is the stop
reason — or the prompt feedback's ``blockReason`` when the prompt was refused — and
``usageMetadata`` the usage (``promptTokenCount`` / ``candidatesTokenCount``; each event's counts
replace the earlier ones). An error body's ``error`` is shown as ``STATUS: message``.

The streamed pieces of text are, for every candidate, each part's ``text``: the reply's
pieces one block, the thought's another."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from openprogram.recording.wire_rules import KeyShape, WireRules
from openprogram.vendors.openai_chat import call_text
from openprogram.vendors.reply import (
    BlockKey,
    HttpReply,
    Piece,
    as_dict,
    as_list,
    as_str,
    error_text,
    joined_texts,
)
from openprogram.vendors.wire import ServedApi, Wire

__all__ = ["GEMINI", "GEMINI_WIRE", "Gemini"]

GEMINI_WIRE = Wire(
    vendor="google",
    hosts=("googleapis.com",),
    official_hosts=(
        r"generativelanguage\.googleapis\.com|(?:[a-z]+(?:-[a-z]+)*\d+-)?aiplatform\.googleapis\.com"
    ),
    key_variables=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    key_header="x-goog-api-key",
    key_query="key",
    # google-genai prefers GOOGLE_API_KEY and warns when both are set: only the other is set
    placeholder_if_unset=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
    placeholder_variables=("GEMINI_API_KEY",),
    model_path=r"/models/([^/:]+):\w+$",
    served=ServedApi(
        "gemini",
        "https://generativelanguage.googleapis.com",
        "",
        # google-genai (Python and JavaScript) and the Gemini CLI; litellm reads the second
        ("GOOGLE_GEMINI_BASE_URL", "GEMINI_API_BASE"),
        "google",
    ),
)
"""Google's Gemini API (the Developer API and Vertex AI): its key in ``x-goog-api-key`` or
a ``key=`` query parameter."""

_METHODS = (":generateContent", ":streamGenerateContent")
_OTHER_METHODS = frozenset({"embedContent", "batchEmbedContents", "countTokens"})
"""The model methods of the Gemini API beside generating (``…/models/{model}:<method>``),
which the store does not read."""
_RESPONSE_FIELDS = ("modelVersion", "responseId", "usageMetadata")
_MEDIA = ("image", "audio", "video")


class Gemini:
    """Gemini's ``generateContent``, as :class:`~openprogram.vendors.VendorApi` reads it."""

    name = "gemini-generate-content"
    wire = GEMINI_WIRE
    last_events: frozenset[str] = frozenset()
    kind_fields = frozenset({"finishReason", "blockReason"})
    recording_rules = WireRules(
        credential_names=frozenset({GEMINI_WIRE.key_header}),
        credential_query_words=frozenset({GEMINI_WIRE.key_query}),
        key_shapes=(
            KeyShape(
                "google-api-key", r"AIza[0-9A-Za-z_-]{30,}", ("AIza",), "url-query-credential"
            ),
        ),
        conversation_keys=frozenset({"contents", "systemInstruction"}),
        signature_keys=frozenset({"thoughtSignature"}),  # a thought's, signed anew
        per_run_fields=frozenset({"createTime"}),
    )
    input_tokens = "promptTokenCount"
    output_tokens = "candidatesTokenCount"

    def claims(self, path: str, host: str, headers: dict[str, Any]) -> bool:
        return path.endswith(_METHODS)

    def model_endpoint(self, path: str) -> str | None:
        method = path.rpartition(":")[2]
        return method if method in _OTHER_METHODS and "/models/" in path else None

    def claims_shape(self, first: object) -> bool:
        shape = as_dict(first)
        return isinstance(shape.get("candidates"), list) and any(
            field in shape for field in _RESPONSE_FIELDS
        )

    def reply(self, body: object, datas: list[object], whole: object) -> HttpReply:
        reply = HttpReply()
        _input(as_dict(body), reply)
        for data in datas:
            _response(as_dict(data), reply)
        if whole is not None:
            _response(as_dict(whole), reply)
        return reply

    def streamed_pieces(
        self, position: int, data: dict[str, Any]
    ) -> Iterator[tuple[BlockKey, Piece]]:
        candidates = data.get("candidates")
        for number, candidate in enumerate(candidates if isinstance(candidates, list) else []):
            parts = as_dict(as_dict(candidate).get("content")).get("parts")
            key = as_dict(candidate).get("index", number)
            for place, part in enumerate(parts if isinstance(parts, list) else []):
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    path = ("data", "candidates", number, "content", "parts", place, "text")
                    kind = "thought" if part.get("thought") is True else "text"
                    yield (key, kind), Piece(position, path, part["text"])


GEMINI = Gemini()


def _input(body: dict[str, Any], reply: HttpReply) -> None:
    contents = as_list(body.get("contents"))
    if contents:
        content = as_dict(contents[-1])
        reply.input_role = as_str(content.get("role")) or "user"
        reply.input_text = _parts_text(content.get("parts"))
    elif "systemInstruction" in body:
        reply.input_role = "system"
        reply.input_text = _parts_text(as_dict(body["systemInstruction"]).get("parts"))


def _parts_text(parts: Any) -> str:
    """A content's parts: text, function calls and responses, placeholders for data."""
    texts: list[str] = []
    for part in as_list(parts):
        part = as_dict(part)
        text = as_str(part.get("text"))
        if text is not None:
            texts.append(text)
        elif isinstance(part.get("functionCall"), dict):
            call = part["functionCall"]
            texts.append(call_text(call.get("name"), call.get("args", {})))
        elif isinstance(part.get("functionResponse"), dict):
            answer = part["functionResponse"]
            shown = orjson.dumps(answer.get("response", {})).decode()
            texts.append(f"{as_str(answer.get('name')) or '?'} → {shown}")
        elif isinstance(part.get("inlineData"), dict) or isinstance(part.get("fileData"), dict):
            data = as_dict(part.get("inlineData") or part.get("fileData"))
            kind = (as_str(data.get("mimeType")) or "").partition("/")[0]
            texts.append(f"[{kind if kind in _MEDIA else 'file'}]")
    return joined_texts(texts)


def _response(response: dict[str, Any], reply: HttpReply) -> None:
    """One ``GenerateContentResponse`` (a stream's event, or the whole body) into ``reply``."""
    reply.error = _error(response) or reply.error
    candidates = as_list(response.get("candidates"))
    candidate = as_dict(next((c for c in candidates if as_dict(c).get("index", 0) == 0), None))
    for part in as_list(as_dict(candidate.get("content")).get("parts")):
        part = as_dict(part)
        if part.get("thought") is True:
            reply.add_thinking("thought", part.get("text"))
        else:
            reply.add_text("text", part.get("text"))
        call = part.get("functionCall")
        if isinstance(call, dict):
            tool = reply.tool(len(reply.tools))
            tool.name = as_str(call.get("name")) or ""
            tool.value = call.get("args", {})
    blocked = as_str(as_dict(response.get("promptFeedback")).get("blockReason"))
    reply.stop_reason = as_str(candidate.get("finishReason")) or blocked or reply.stop_reason
    reply.add_usage(response.get("usageMetadata"))


def _error(body: dict[str, Any]) -> str | None:
    """``STATUS: message`` of Google's error body (``{"error": {"code", "message", "status"}}``)."""
    error = as_dict(body.get("error"))
    message, status = as_str(error.get("message")), as_str(error.get("status"))
    if message is not None and status:
        return f"{status}: {message}"
    return error_text(body) if "error" in body else None
