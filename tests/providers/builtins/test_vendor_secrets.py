"""Keys and passwords never leave through a recording or a message, and a server on this
machine needs no key: each case against the real loopback server."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.errors import MissingApiKeyError
from openprogram.providers import (
    Model,
    SimpleStreamOptions,
    get_api_provider,
    provider_scope,
    register_api_provider,
    stream_simple,
)
from openprogram.providers.registry import reset_provider_runtime
from openprogram.providers.streaming import with_api_key
from openprogram.recording import redaction
from openprogram.recording.writer import close_recording_writers
from tests.support.cli_runner import openprogram, run
from tests.support.provider_events import collect, last_done, last_error
from tests.support.sse_server import Script, ScriptedServer, error_script, unused_port
from tests.support.vendors import HELLO, VENDORS, Vendor, vendor_id

GPU_KEY = "gpu-box-secret-value-0123"
"""A key whose shape no redaction rule knows, held by a variable whose name looks like none."""
PLACEHOLDER = "[secret removed]"


@pytest.fixture(autouse=True)
def no_remembered_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # What earlier tests' providers remembered must not make these pass.
    monkeypatch.setattr(redaction, "_remembered_variables", set())


# -- a key read through a configured api_key_env ---------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
def test_a_key_from_a_configured_variable_never_reaches_the_recording(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    home = Path(os.environ["OPENPROGRAM_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[providers.{vendor.api}]\nbase_url = "{vendor.base_url(server.base_url)}"\n'
        'api_key_env = "GPU_BOX_KEY"\n'
    )
    monkeypatch.setenv("GPU_BOX_KEY", GPU_KEY)
    server.serve(
        Script([vendor.wire.text_reply(f"you sent {GPU_KEY}, thanks")]),
        error_script(401, vendor.wire.error_body(f"key {GPU_KEY} is revoked")),
    )
    model = f"--model={vendor.api}:m"

    assert run("record", "gpu").exit_code == 0
    reset_provider_runtime()  # the next start records
    answered = openprogram("run", "--no-tools", model, "hi")
    failed = openprogram("run", "--no-tools", model, "again")
    close_recording_writers()

    assert answered.exit_code == 0, answered.stderr
    assert vendor.sent_key(server) == GPU_KEY  # the server did get the key
    assert failed.exit_code == 1
    assert "HTTP 401" in failed.stderr
    assert GPU_KEY not in failed.stderr
    recording = (recordings_dir() / "gpu.jsonl").read_text()
    assert "you sent" in recording
    assert "is revoked" in recording
    assert GPU_KEY not in recording
    assert recording.count(PLACEHOLDER) >= 2


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
def test_constructing_a_vendor_provider_makes_its_variable_known(
    monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    provider_class = vendor.provider_class
    monkeypatch.setenv("GPU_BOX_KEY", GPU_KEY)
    monkeypatch.setenv("PLAIN_NAME", "a-default-variable-value")
    assert GPU_KEY not in redaction.known_secret_values()

    provider_class(base_url="https://api.example.test", api_key_env="GPU_BOX_KEY")
    assert GPU_KEY in redaction.known_secret_values()

    class Renamed(provider_class):  # type: ignore[valid-type,misc]
        default_api_key_env = "PLAIN_NAME"

    Renamed()  # the default variable is remembered too, whatever its name
    assert "a-default-variable-value" in redaction.known_secret_values()


# -- messages built from a URL or a server's text ----------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_connection_error_hides_the_password_in_the_base_url(vendor: Vendor) -> None:
    port = unused_port()
    provider = vendor.provider(f"http://admin:hunter2-password@127.0.0.1:{port}")
    events = await collect(provider.stream(vendor.model, HELLO))

    message = last_error(events).error.error_message
    assert message is not None
    assert "could not connect to http://[secret removed]@127.0.0.1" in message
    assert "hunter2-password" not in message
    assert "hunter2-password" not in repr(provider)


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_404_hides_a_key_in_the_query_of_the_url(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(error_script(404, vendor.wire.error_body("no such route")))
    base_url = vendor.base_url(server.base_url)
    model = vendor.model.model_copy(update={"base_url": f"{base_url}?api_key=query-key-98765"})
    events = await collect(vendor.provider(server.base_url).stream(model, HELLO))

    message = last_error(events).error.error_message
    assert message is not None
    assert "?api_key=[secret removed]" in message
    assert "query-key-98765" not in message


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_server_message_quoting_a_known_credential_is_redacted(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    monkeypatch.setenv("BILLING_SERVICE_TOKEN", "billing-token-value-4242")
    server.serve(
        error_script(500, vendor.wire.error_body("upstream said billing-token-value-4242 expired"))
    )
    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))

    message = last_error(events).error.error_message
    assert message is not None
    assert "upstream said [secret removed] expired" in message


# -- a model served on this machine ----------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_model_on_a_loopback_server_needs_no_key(
    server: ScriptedServer, vendor: Vendor
) -> None:
    # The built-in provider points at the vendor's remote server; the model at this machine.
    assert get_api_provider(vendor.api).requires_credentials
    model = vendor.model_at(server.base_url)
    server.serve(Script([vendor.wire.text_reply("local answer")]))

    done = last_done(await collect(stream_simple(model, HELLO)))

    assert done.message.text == "local answer"
    assert vendor.sent_key(server) is None


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_model_on_a_loopback_server_still_gets_a_key_when_there_is_one(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    monkeypatch.setenv(vendor.key_variable, "the-default-key-value")
    model = vendor.model_at(server.base_url)
    server.serve(Script([vendor.wire.text_reply("ok")]))

    last_done(await collect(stream_simple(model, HELLO)))

    assert vendor.sent_key(server) == "the-default-key-value"


class NeedsKey:
    requires_credentials = True
    api_key_env = "NEEDS_KEY_API_KEY"


@pytest.mark.parametrize(
    "base_url", ["http://localhost:11434/v1", "http://127.0.0.2:8000", "http://[::1]:1234/v1"]
)
def test_every_loopback_address_of_a_model_waives_the_key(base_url: str) -> None:
    model = Model(id="m", api="needs-key", provider="x", base_url=base_url)
    options = with_api_key(NeedsKey(), model, SimpleStreamOptions())  # type: ignore[arg-type]
    assert options.api_key is None


def test_a_remote_model_still_needs_its_key() -> None:
    model = Model(id="m", api="needs-key", provider="x", base_url="https://gpu.example.test")
    with pytest.raises(MissingApiKeyError, match="NEEDS_KEY_API_KEY"):
        with_api_key(NeedsKey(), model, SimpleStreamOptions())  # type: ignore[arg-type]


@pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)
async def test_a_401_names_the_variable_the_key_came_from(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch, vendor: Vendor
) -> None:
    monkeypatch.setenv("TEAM_KEY", "team-key-value-1234")
    server.serve(error_script(401, vendor.wire.error_body("invalid key")))
    model = vendor.model_at(server.base_url)
    with provider_scope():
        register_api_provider(
            vendor.api, vendor.provider("https://api.example.test", api_key_env="TEAM_KEY")
        )
        events = await collect(stream_simple(model, HELLO))

    message = last_error(events).error.error_message
    assert message is not None
    assert message.endswith("(check the API key from TEAM_KEY)")
