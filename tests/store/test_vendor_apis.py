"""The registry of model APIs: each API's name, its claim by request coming before any claim by
response shape, and the usage names the token counts read, derived from the registry."""

from __future__ import annotations

from openprogram.vendors import (
    API_NAMES,
    INPUT_COUNTS,
    OUTPUT_COUNTS,
    VENDOR_APIS,
    http_api,
    usage_tokens,
)


def test_the_apis_are_registered_once_in_their_order() -> None:
    assert API_NAMES == (
        "openai-completions",
        "openai-responses",
        "anthropic-messages",
        "gemini-generate-content",
        "bedrock-converse",
    )
    assert [api.name for api in VENDOR_APIS] == list(API_NAMES)


def test_the_usage_names_are_the_provider_events_then_each_apis() -> None:
    assert INPUT_COUNTS == (
        "input",
        "prompt_tokens",
        "input_tokens",
        "promptTokenCount",
        "inputTokens",
    )
    assert OUTPUT_COUNTS == (
        "output",
        "completion_tokens",
        "output_tokens",
        "candidatesTokenCount",
        "outputTokens",
    )
    assert usage_tokens({"prompt_tokens": 3, "completion_tokens": 4}) == (3, 4)
    assert usage_tokens({"input": 1, "input_tokens": 9, "output_tokens": 2}) == (1, 2)


def test_a_request_path_wins_over_any_response_shape() -> None:
    anthropic_shape = {"type": "message_start"}
    request = {"url": "https://api.example.com/v1/responses", "headers": {}}
    assert http_api(request, anthropic_shape) == "openai-responses"
    unknown = {"url": "https://api.example.com/v1/generate", "headers": {}}
    assert http_api(unknown, anthropic_shape) == "anthropic-messages"
    assert http_api(unknown, {"object": "chat.completion"}) == "openai-completions"
    assert http_api(unknown, {"candidates": [], "modelVersion": "m"}) == "gemini-generate-content"
    assert http_api(unknown, {"type": "ping"}) is None
