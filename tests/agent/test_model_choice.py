"""``resolve_model``: --model, else default_model, else echo; first colon; base_url."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram.agent import resolve_model
from openprogram.config.models import build_settings
from openprogram.errors import ModelReferenceError, OpenProgramError
from openprogram.providers import ECHO_MODEL, Model


def settings(**values: Any) -> Any:
    return build_settings(values, {})


def test_nothing_named_means_the_echo_model() -> None:
    assert resolve_model(None, None) == ECHO_MODEL
    assert resolve_model(None, settings()) == ECHO_MODEL


def test_the_reference_splits_at_the_first_colon_only() -> None:
    model = resolve_model("openai-completions:llama3:8b", None)
    assert (model.api, model.id, model.provider) == ("openai-completions", "llama3:8b", "openai")


@pytest.mark.parametrize(
    ("reference", "provider"),
    [
        ("echo:echo", "echo"),
        ("openai-completions:gpt-4o-mini", "openai"),
        ("anthropic-messages:claude-sonnet-4", "anthropic"),
        ("my-api:m1", "my-api"),
    ],
)
def test_known_apis_get_their_vendor_name_others_the_api(reference: str, provider: str) -> None:
    assert resolve_model(reference, None).provider == provider


def test_default_model_from_settings_is_used_without_a_reference() -> None:
    configured = settings(default_model="anthropic-messages:claude-x")
    assert resolve_model(None, configured) == Model(
        id="claude-x", api="anthropic-messages", provider="anthropic"
    )


def test_the_reference_wins_over_default_model() -> None:
    configured = settings(default_model="anthropic-messages:claude-x")
    assert resolve_model("echo:echo", configured) == ECHO_MODEL


def test_base_url_comes_from_the_api_s_provider_settings() -> None:
    configured = settings(
        default_model="openai-completions:llama3:8b",
        providers={
            "openai-completions": {"base_url": "http://localhost:11434/v1"},
            "anthropic-messages": {"timeout": 5},
        },
    )
    assert resolve_model(None, configured).base_url == "http://localhost:11434/v1"
    assert resolve_model("anthropic-messages:c", configured).base_url is None
    assert resolve_model("echo:echo", configured).base_url is None


@pytest.mark.parametrize(
    "reference", ["gpt-4o", "", ":", "openai-completions:", ":gpt-4o", "echo :echo", "echo: echo"]
)
def test_a_malformed_reference_is_an_error_naming_it(reference: str) -> None:
    with pytest.raises(ModelReferenceError) as raised:
        resolve_model(reference, None)
    assert raised.value.reference == reference
    assert repr(reference) in str(raised.value)
    assert "api:model-id" in str(raised.value)
    assert isinstance(raised.value, OpenProgramError)
    assert isinstance(raised.value, ValueError)


def test_surrounding_whitespace_is_ignored() -> None:
    assert resolve_model("  echo:echo\n", None) == ECHO_MODEL
