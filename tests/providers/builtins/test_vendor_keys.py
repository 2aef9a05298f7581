"""Where the key comes from, and how configuration reaches the vendor providers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram.errors import MissingApiKeyError
from openprogram.providers import (
    Model,
    SimpleStreamOptions,
    get_api_provider,
    provider_scope,
    register_api_provider,
    stream_simple,
)
from openprogram.providers.builtins.anthropic_messages import AnthropicMessagesProvider
from openprogram.providers.builtins.openai_completions import OpenAICompletionsProvider
from openprogram.providers.builtins.vendor_provider import HttpVendorProvider, is_loopback_url
from openprogram.providers.registry import reset_provider_runtime
from tests.support.provider_events import collect, last_done
from tests.support.sse_server import Script, ScriptedServer
from tests.support.vendors import ANTHROPIC, HELLO, OPENAI, VENDORS, Vendor, vendor_id

REMOTE = "https://api.example.test"
"""A server that needs a key; the calls below never reach it (``model.base_url`` wins)."""


def remote_provider(vendor: Vendor, **settings: str) -> HttpVendorProvider:
    provider = vendor.provider(REMOTE, **settings)
    assert provider.requires_credentials
    return provider


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
@pytest.mark.parametrize(
    ("configured", "option", "expected"),
    [
        (None, None, "default-key"),  # the vendor's own variable
        ("MY_KEY", None, "configured-key"),  # the variable api_key_env names wins over it
        ("MY_KEY", "option-key", "option-key"),  # options.api_key wins over both
    ],
)
async def test_key_lookup_order(
    server: ScriptedServer,
    monkeypatch: pytest.MonkeyPatch,
    vendor: Vendor,
    configured: str | None,
    option: str | None,
    expected: str,
) -> None:
    monkeypatch.setenv(vendor.key_variable, "default-key")
    monkeypatch.setenv("MY_KEY", "configured-key")
    server.serve(Script([vendor.wire.text_reply("ok")]))
    settings = {"api_key_env": configured} if configured else {}
    with provider_scope():
        register_api_provider(vendor.api, remote_provider(vendor, **settings))
        options = SimpleStreamOptions(api_key=option)
        last_done(await collect(stream_simple(vendor.model_at(server.base_url), HELLO, options)))
    assert vendor.sent_key(server) == expected


@pytest.mark.parametrize(
    ("vendor", "configured", "variable"),
    [
        (OPENAI, None, "OPENAI_API_KEY"),
        (ANTHROPIC, None, "ANTHROPIC_API_KEY"),
        (OPENAI, "MY_KEY", "MY_KEY"),
        (ANTHROPIC, "MY_KEY", "MY_KEY"),
    ],
    ids=["openai-default", "anthropic-default", "openai-configured", "anthropic-configured"],
)
def test_a_missing_key_names_the_variable(
    vendor: Vendor, configured: str | None, variable: str
) -> None:
    settings = {"api_key_env": configured} if configured else {}
    with provider_scope():
        register_api_provider(vendor.api, remote_provider(vendor, **settings))
        with pytest.raises(MissingApiKeyError) as caught:
            stream_simple(vendor.model, HELLO)
    assert caught.value.env_var == variable
    assert f"set {variable}" in str(caught.value)


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_calling_the_provider_directly_also_needs_the_key(vendor: Vendor) -> None:
    # Raised by the first __anext__, before any event: a recorder records it as the error.
    events = remote_provider(vendor, api_key_env="MY_KEY").stream(vendor.model, HELLO)
    with pytest.raises(MissingApiKeyError, match="MY_KEY"):
        await anext(events)


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_loopback_server_gets_the_key_when_there_is_one(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    monkeypatch.setenv("LOCAL_KEY", "local-key")
    server.serve(Script([vendor.wire.text_reply("ok")]))
    provider = vendor.provider(server.base_url, api_key_env="LOCAL_KEY")
    assert not provider.requires_credentials
    last_done(await collect(provider.stream(vendor.model, HELLO)))
    assert vendor.sent_key(server) == "local-key"


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://localhost:11434/v1", True),
        ("http://LOCALHOST/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://127.8.9.10/v1", True),
        ("http://[::1]:1234/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://192.168.1.5:11434/v1", False),
        ("http://localhost.example.com/v1", False),
        ("not a url", False),
    ],
)
def test_loopback_hosts(url: str, loopback: bool) -> None:
    assert is_loopback_url(url) is loopback
    assert OpenAICompletionsProvider(base_url=url).requires_credentials is not loopback


def write_config(text: str) -> None:
    home = Path(os.environ["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    reset_provider_runtime()


async def test_the_runtime_builds_the_providers_from_config_toml(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(
        f"""
[providers.openai-completions]
base_url = "{server.base_url}/v1"
api_key_env = "MY_KEY"
timeout = 5

[providers.anthropic-messages]
base_url = "{server.base_url}"
"""
    )
    openai = get_api_provider("openai-completions")
    assert isinstance(openai, OpenAICompletionsProvider)
    assert (openai.base_url, openai.api_key_env, openai.timeout) == (
        f"{server.base_url}/v1",
        "MY_KEY",
        5,
    )
    anthropic = get_api_provider("anthropic-messages")
    assert isinstance(anthropic, AnthropicMessagesProvider)
    assert (anthropic.base_url, anthropic.api_key_env, anthropic.timeout) == (
        server.base_url,
        "ANTHROPIC_API_KEY",
        600,
    )

    monkeypatch.setenv("MY_KEY", "from-my-key")
    server.serve(Script([OPENAI.wire.text_reply("hello")]))
    model = Model(id="llama3:8b", api="openai-completions", provider="openai")
    done = last_done(await collect(stream_simple(model, HELLO)))
    assert done.message.text == "hello"
    assert server.received[0].request_line == "POST /v1/chat/completions HTTP/1.1"
    assert server.received[0].json()["model"] == "llama3:8b"
    assert OPENAI.sent_key(server) == "from-my-key"


def test_without_config_the_vendor_defaults_apply() -> None:
    openai = get_api_provider("openai-completions")
    anthropic = get_api_provider("anthropic-messages")
    assert repr(openai) == (
        "OpenAICompletionsProvider(base_url='https://api.openai.com/v1', "
        "api_key_env='OPENAI_API_KEY', timeout=600.0)"
    )
    assert repr(anthropic) == (
        "AnthropicMessagesProvider(base_url='https://api.anthropic.com', "
        "api_key_env='ANTHROPIC_API_KEY', timeout=600.0)"
    )
    with pytest.raises(MissingApiKeyError, match="ANTHROPIC_API_KEY"):
        stream_simple(ANTHROPIC.model, HELLO)


def test_a_configured_remote_server_without_its_key_names_the_variable() -> None:
    write_config(
        '[providers.openai-completions]\nbase_url = "https://gpu.example.test/v1"\n'
        'api_key_env = "TEAM_KEY"\n'
    )
    with pytest.raises(MissingApiKeyError) as caught:
        stream_simple(OPENAI.model, HELLO)
    assert caught.value.env_var == "TEAM_KEY"


def test_registering_the_builtins_does_not_import_httpx() -> None:
    probe = (
        "import json, sys\n"
        "from openprogram.providers import get_api_provider\n"
        "get_api_provider('openai-completions'); get_api_provider('anthropic-messages')\n"
        "print(json.dumps({'httpx': 'httpx' in sys.modules}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(result.stdout) == {"httpx": False}
