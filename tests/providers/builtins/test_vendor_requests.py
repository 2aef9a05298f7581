"""The request a vendor's server receives, for every vendor: each test runs once for each row
of the vendor table. The body each API expects is tested in ``test_openai_request.py`` and
``test_anthropic_request.py``."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram.providers import (
    StreamOptions,
)
from tests.support.provider_events import collect, last_done
from tests.support.sse_server import Script, ScriptedServer
from tests.support.vendors import HELLO, VENDORS, Vendor, conversation, vendor_id

pytestmark = pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)

KEY = "sk-test-key-0123"


async def test_the_same_input_sends_the_same_bytes(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(Script([vendor.wire.text_reply("ok")]), Script([vendor.wire.text_reply("ok")]))
    for _ in range(2):
        await collect(
            vendor.provider(server.base_url).stream(
                vendor.model, conversation(vendor), StreamOptions()
            )
        )
    assert server.received[0].body == server.received[1].body


async def test_the_key_the_model_s_headers_and_the_call_s_headers(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_reply("ok")]))
    model = vendor.model.model_copy(update={"headers": {"X-Model": "m", "X-Both": "model"}})
    options = StreamOptions(api_key=KEY, headers={"X-Call": "c", "x-both": "options"})
    await collect(vendor.provider(server.base_url).stream(model, HELLO, options))

    headers = server.received[0].headers
    assert headers[vendor.key_header] == vendor.key_prefix + KEY
    assert [name for name, value in headers.items() if KEY in value] == [vendor.key_header]
    other_key_headers = {other.key_header for other in VENDORS} - {vendor.key_header}
    assert not other_key_headers & set(headers)
    assert {name: headers.get(name) for name in vendor.fixed_headers} == vendor.fixed_headers
    assert (headers["x-model"], headers["x-call"], headers["x-both"]) == ("m", "c", "options")


async def test_no_key_header_without_a_key_on_loopback(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_reply("ok")]))
    provider = vendor.provider(server.base_url)
    assert provider.requires_credentials is False
    last_done(await collect(provider.stream(vendor.model, HELLO)))

    headers = server.received[0].headers
    assert vendor.key_header not in headers
    assert {name: headers.get(name) for name in vendor.fixed_headers} == vendor.fixed_headers


async def test_on_payload_sees_the_body_before_it_is_sent(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_reply("ok")]))
    seen: list[dict[str, Any]] = []

    def on_payload(body: dict[str, Any]) -> None:
        assert server.received == []
        seen.append(body)

    options = StreamOptions(on_payload=on_payload)
    await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO, options))
    assert seen == [server.received[0].json()]


async def test_the_model_s_base_url_wins_over_the_provider_s(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_reply("ok")]))
    elsewhere = vendor.provider("http://127.0.0.1:9")
    model = vendor.model_at(server.base_url)
    model = model.model_copy(update={"base_url": f"{model.base_url}/"})  # a trailing slash too
    last_done(await collect(elsewhere.stream(model, HELLO)))
    assert server.received[0].request_line == f"POST {vendor.request_path} HTTP/1.1"
