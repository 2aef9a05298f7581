"""Gemini's answers as recording rows, faithful to the published ``generateContent`` format:
a ``streamGenerateContent?alt=sse`` stream of a thought summary, text and a ``functionCall``
(each event a whole ``GenerateContentResponse``, the usage counted again in each, the last
with the finish reason); the whole ``generateContent`` reply that follows the function's
response; a prompt the API refused; and the API's error body."""

from __future__ import annotations

from typing import Any

from tests.support.http_exchange_rows import (
    QUESTION,
    SYSTEM,
    WEATHER_ARGUMENTS,
    WEATHER_PARAMETERS,
    http_call,
    json_body,
    response,
    sse,
)
from tests.support.recording_rows import Row

GEMINI_BASE = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash"
STREAM_URL = f"{GEMINI_BASE}:streamGenerateContent?alt=sse"
WHOLE_URL = f"{GEMINI_BASE}:generateContent"
THOUGHT = "The user wants the weather in Paris: call get_weather."
WEATHER = {"temp_c": 14, "sky": "overcast"}
STREAM_USAGE = {
    "promptTokenCount": 61,
    "candidatesTokenCount": 17,
    "totalTokenCount": 102,
    "thoughtsTokenCount": 24,
    "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 61}],
}
_TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "get_weather",
                "description": "Current weather for a city",
                "parameters": WEATHER_PARAMETERS,
            }
        ]
    }
]
_ASKED = {"role": "user", "parts": [{"text": QUESTION}]}
_CALLED = {
    "role": "model",
    "parts": [{"functionCall": {"name": "get_weather", "args": WEATHER_ARGUMENTS}}],
}


def _body(contents: list[Row]) -> Row:
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "tools": _TOOLS,
        "generationConfig": {"thinkingConfig": {"includeThoughts": True}},
    }


def _chunk(parts: list[Row], usage: Row, **candidate: Any) -> Row:
    return {
        "candidates": [{"content": {"parts": parts, "role": "model"}, "index": 0, **candidate}],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "Ox4waNuSKPnUvdIPwLaA4Ak",
    }


def gemini_stream_call(index: int = 0) -> list[Row]:
    """A stream: a thought, the text in two pieces, then the function call and the end."""
    early = {"promptTokenCount": 61, "totalTokenCount": 85, "thoughtsTokenCount": 24}
    call = {"functionCall": {"name": "get_weather", "args": WEATHER_ARGUMENTS}}
    events = [
        response(),
        sse(_chunk([{"text": THOUGHT, "thought": True}], early)),
        sse(_chunk([{"text": "Let me check"}], early)),
        sse(_chunk([{"text": " the weather."}], early)),
        sse(_chunk([call], STREAM_USAGE, finishReason="STOP")),
    ]
    return http_call(index, "POST", STREAM_URL, _body([_ASKED]), events)


def gemini_whole_call(index: int = 0) -> list[Row]:
    """The whole reply to the function's response."""
    answered = {"name": "get_weather", "response": WEATHER}
    contents = [_ASKED, _CALLED, {"role": "user", "parts": [{"functionResponse": answered}]}]
    usage = {"promptTokenCount": 98, "candidatesTokenCount": 11, "totalTokenCount": 109}
    reply = _chunk([{"text": "It's 14 °C and overcast in Paris."}], usage, finishReason="STOP")
    events = [response(content_type="application/json; charset=UTF-8"), json_body(reply)]
    return http_call(index, "POST", WHOLE_URL, _body(contents), events)


def gemini_blocked_call(index: int = 0) -> list[Row]:
    """A prompt the API refused: no candidate, the prompt feedback's block reason."""
    reply = {
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "bL0waKq7N-nUvdIP2Y2Q8Qs",
    }
    events = [response(content_type="application/json; charset=UTF-8"), json_body(reply)]
    body = {"contents": [{"role": "user", "parts": [{"text": "something refused"}]}]}
    return http_call(index, "POST", WHOLE_URL, body, events)


def gemini_error_call(index: int = 0) -> list[Row]:
    """The API's 429, in Google's error format."""
    error = {
        "error": {
            "code": 429,
            "message": "Resource has been exhausted (e.g. check quota).",
            "status": "RESOURCE_EXHAUSTED",
        }
    }
    events = [response(429, "application/json; charset=UTF-8"), json_body(error)]
    return http_call(index, "POST", WHOLE_URL, _body([_ASKED]), events)
