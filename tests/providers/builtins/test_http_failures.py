"""Every way the wire can fail ends the stream with an ``error`` event: never a hang, never a
bare traceback. Each test runs for both vendors against a real loopback server."""

from __future__ import annotations

import asyncio

import pytest

from openprogram.providers import StreamOptions, TextDeltaEvent
from tests.support.provider_events import collect, last_error, types
from tests.support.sse_server import (
    Script,
    ScriptedServer,
    cut,
    error_script,
    sse_event,
    unused_port,
)
from tests.support.vendors import HELLO, VENDORS, Vendor, vendor_id

pytestmark = pytest.mark.parametrize("vendor", VENDORS, ids=vendor_id)

KEY = "sk-test-0123456789abcdefghijklmnop"


@pytest.mark.parametrize(
    ("status", "phrase"),
    [
        (400, "Bad Request"),
        (401, "Unauthorized"),
        (403, "Forbidden"),
        (404, "Not Found"),
        (500, "Internal Server Error"),
        (502, "Bad Gateway"),
        (503, "Service Unavailable"),
        (529, ""),
    ],
)
async def test_an_http_error_carries_the_status_and_the_server_message(
    server: ScriptedServer, vendor: Vendor, status: int, phrase: str
) -> None:
    server.serve(error_script(status, vendor.wire.error_body(f"problem number {status}")))
    events = await collect(
        vendor.provider(server.base_url).stream(vendor.model, HELLO, StreamOptions(api_key=KEY))
    )
    assert types(events) == ["start", "error"]
    error = last_error(events)
    assert error.reason == "error"
    assert error.error.stop_reason == "error"
    message = error.error.error_message
    assert message is not None
    status_line = f"HTTP {status} {phrase}".rstrip()
    assert message.startswith(f"{vendor.api}: {status_line}: problem number {status}")
    assert KEY not in message


async def test_429_names_the_retry_after_value(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(
        error_script(429, vendor.wire.error_body("Rate limit reached"), {"Retry-After": "3"})
    )
    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))
    assert error.error.error_message == (
        f"{vendor.api}: HTTP 429 Too Many Requests: Rate limit reached (retry after 3 s)"
    )


async def test_401_hints_at_the_key(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(error_script(401, vendor.wire.error_body("invalid x-api-key")))
    provider = vendor.provider(server.base_url, api_key_env="MY_KEY")
    events = await collect(provider.stream(vendor.model, HELLO))  # loopback: no key needed
    message = last_error(events).error.error_message
    assert message == (
        f"{vendor.api}: HTTP 401 Unauthorized: invalid x-api-key "
        "(no API key was sent; set MY_KEY or pass options.api_key)"
    )


async def test_404_names_the_url(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(error_script(404, vendor.wire.error_body("model: nope")))
    message = last_error(
        await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))
    ).error.error_message
    assert message is not None
    assert "HTTP 404 Not Found: model: nope" in message
    assert f"{server.base_url}/" in message


async def test_an_error_body_that_is_not_json_is_quoted(
    server: ScriptedServer, vendor: Vendor
) -> None:
    page = "<html><body><h1>502 Bad Gateway</h1>" + "x" * 500 + "</body></html>"
    server.serve(error_script(502, page))
    message = last_error(
        await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))
    ).error.error_message
    assert message is not None
    assert message.startswith(f"{vendor.api}: HTTP 502 Bad Gateway: <html><body><h1>502 Bad")
    assert len(message) < 300


async def test_the_key_is_never_quoted_in_an_error(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(error_script(401, vendor.wire.error_body(f"Incorrect API key provided: {KEY}.")))
    events = await collect(
        vendor.provider(server.base_url).stream(vendor.model, HELLO, StreamOptions(api_key=KEY))
    )
    message = last_error(events).error.error_message
    assert message is not None
    assert KEY not in message
    assert "[secret removed]" in message
    assert "check the API key from options.api_key" in message


async def test_connection_refused(vendor: Vendor) -> None:
    port = unused_port()
    events = await collect(vendor.provider(f"http://127.0.0.1:{port}").stream(vendor.model, HELLO))
    assert types(events) == ["start", "error"]
    message = last_error(events).error.error_message
    assert message is not None
    assert message.startswith(f"{vendor.api}: could not connect to http://127.0.0.1:{port}/")
    assert message.endswith("(connection refused)")


async def test_a_connection_dropped_mid_stream_keeps_the_partial_text(
    server: ScriptedServer, vendor: Vendor
) -> None:
    stream = vendor.wire.text_beginning("Hello, ", "wor")
    server.serve(Script(cut(stream, every=50), ending="drop"))
    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))
    error = last_error(events)
    assert error.reason == "error"
    assert error.error.error_message is not None
    assert "the connection was dropped mid-stream" in error.error.error_message
    assert error.error.text == "Hello, wor"
    assert types(events)[:3] == ["start", "text_start", "text_delta"]


async def test_a_read_timeout_keeps_the_partial_text(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_beginning("slow")], ending="hold"))
    provider = vendor.provider(server.base_url, timeout=0.2)
    events = await asyncio.wait_for(collect(provider.stream(vendor.model, HELLO)), 5)
    error = last_error(events)
    assert error.error.error_message is not None
    assert "no data from the server for 0.2 s (read timeout)" in error.error.error_message
    assert f"[providers.{vendor.api}]" in error.error.error_message
    assert error.error.text == "slow"


async def test_a_server_that_never_answers_times_out(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script(answer="silence"))
    provider = vendor.provider(server.base_url, timeout=0.2)
    events = await asyncio.wait_for(collect(provider.stream(vendor.model, HELLO)), 5)
    assert types(events) == ["start", "error"]
    message = last_error(events).error.error_message
    assert message is not None
    assert "no data from the server for 0.2 s (read timeout)" in message


async def test_a_server_that_closes_without_replying(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script(answer="close"))
    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))
    assert types(events) == ["start", "error"]
    message = last_error(events).error.error_message
    assert message is not None
    assert message.startswith(f"{vendor.api}: the server closed the connection without replying")


async def test_data_that_is_not_json(server: ScriptedServer, vendor: Vendor) -> None:
    stream = vendor.wire.text_beginning("ok") + b"data: {this is not json\n\n"
    server.serve(Script([stream]))
    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))
    assert error.error.error_message == (
        f"{vendor.api}: malformed event stream: a data line is not JSON: '{{this is not json'"
    )
    assert error.error.text == "ok"


async def test_data_that_is_json_but_not_an_object(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(Script([sse_event([1, 2, 3], event="message_start")]))
    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))
    assert error.error.error_message is not None
    assert "malformed event stream: a data line is not a JSON object" in error.error.error_message


async def test_lines_that_are_not_server_sent_events(
    server: ScriptedServer, vendor: Vendor
) -> None:
    # Lines without a field name are ignored by the SSE rules; the stream then lacks a finish.
    server.serve(Script([b'{"choices": []}\n\nnot an event either\n\n']))
    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))
    assert error.error.error_message is not None
    assert "stream ended before the reply finished" in error.error.error_message


async def test_a_reply_that_is_not_an_event_stream(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(
        Script([b'{"id": "x", "choices": []}'], headers={"Content-Type": "application/json"})
    )
    error = last_error(await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO)))
    assert error.error.error_message == (
        f"{vendor.api}: expected a server-sent event stream, got Content-Type "
        '\'application/json\': {"id": "x", "choices": []}'
    )


async def test_a_stream_that_ends_early(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(Script([vendor.wire.text_beginning("Hel", "lo")]))
    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO))
    error = last_error(events)
    assert error.error.error_message is not None
    assert error.error.error_message.startswith(
        f"{vendor.api}: stream ended before the reply finished"
    )
    assert error.error.text == "Hello"


async def test_the_signal_aborts_mid_stream(server: ScriptedServer, vendor: Vendor) -> None:
    server.serve(Script([vendor.wire.text_beginning("Hel", "lo")], ending="hold"))
    signal = asyncio.Event()
    events = []
    stream = vendor.provider(server.base_url).stream(
        vendor.model, HELLO, StreamOptions(signal=signal)
    )
    async with asyncio.timeout(5):
        async for event in stream:
            events.append(event)
            if isinstance(event, TextDeltaEvent) and event.delta == "lo":
                signal.set()  # the server sends nothing more: only the signal can end this
    error = last_error(events)
    assert error.reason == "aborted"
    assert error.error.stop_reason == "aborted"
    assert error.error.error_message == f"{vendor.api}: request aborted by signal"
    assert error.error.text == "Hello"
    assert await asyncio.to_thread(server.client_gone.wait, 5)


async def test_the_signal_aborts_while_waiting_for_the_reply(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script(answer="silence"))
    signal = asyncio.Event()
    stream = vendor.provider(server.base_url).stream(
        vendor.model, HELLO, StreamOptions(signal=signal)
    )
    asyncio.get_running_loop().call_later(0.1, signal.set)
    events = await asyncio.wait_for(collect(stream), 5)
    assert types(events) == ["start", "error"]
    assert last_error(events).reason == "aborted"
    assert await asyncio.to_thread(server.client_gone.wait, 5)


async def test_a_signal_set_before_the_call_sends_nothing(
    server: ScriptedServer, vendor: Vendor
) -> None:
    signal = asyncio.Event()
    signal.set()
    options = StreamOptions(signal=signal)
    events = await collect(vendor.provider(server.base_url).stream(vendor.model, HELLO, options))
    assert types(events) == ["start", "error"]
    assert last_error(events).reason == "aborted"
    assert server.received == []


async def test_a_consumer_that_stops_early_closes_the_response(
    server: ScriptedServer, vendor: Vendor
) -> None:
    server.serve(Script([vendor.wire.text_beginning("one", "two")], ending="hold"))
    stream = vendor.provider(server.base_url).stream(vendor.model, HELLO)
    async with asyncio.timeout(5):
        async for event in stream:
            if isinstance(event, TextDeltaEvent):
                break
        await stream.aclose()  # type: ignore[attr-defined]
    assert await asyncio.to_thread(server.client_gone.wait, 5)


async def test_a_bad_base_url_is_an_error_event(vendor: Vendor) -> None:
    provider = vendor.provider("ftp://127.0.0.1:1")
    message = last_error(await collect(provider.stream(vendor.model, HELLO))).error.error_message
    assert message is not None
    assert message.startswith(f"{vendor.api}: cannot send a request to 'ftp://127.0.0.1:1/")
    assert message.endswith("check base_url")
