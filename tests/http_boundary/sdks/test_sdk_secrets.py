"""The key an SDK client was made with never reaches disk — not as its credential header,
not quoted back by the server in an error — nor the error a replay raises; cookies the
vendor sets are not stored either."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.recording.token_shapes import PLACEHOLDER
from tests.support.sdk_capture import recording, replaying
from tests.support.sdk_clients import API_KEYS, CLIENT_KINDS, ClientKind, Scenario, observe
from tests.support.sdk_scenarios import ANTHROPIC_SCENARIOS, OPENAI_SCENARIOS
from tests.support.sdk_server import ErrorReply, SdkServer

KINDS = [pytest.param(kind, id=kind.name) for kind in CLIENT_KINDS]


def scenarios(kind: ClientKind) -> dict[str, Scenario]:
    return dict(OPENAI_SCENARIOS if kind.vendor == "openai" else ANTHROPIC_SCENARIOS)


@pytest.mark.parametrize("kind", KINDS)
async def test_no_credential_or_cookie_is_recorded(kind: ClientKind, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    with SdkServer() as server, recording(path):
        for scenario in scenarios(kind).values():
            assert (await observe(kind, server.base_url, scenario)).raised is None
        cookies = [
            sent.headers["set-cookie"] for sent in server.sent if "set-cookie" in sent.headers
        ]
        sent_headers = {name for received in server.received for name in received.headers}

    text = path.read_text()
    assert API_KEYS[kind.vendor] not in text
    assert {"authorization", "x-api-key"} & sent_headers  # the key was sent, as a header
    for name in ("authorization", "x-api-key", "set-cookie", "__cf_bm"):
        assert name not in text.lower()
    assert all(cookie not in text for cookie in cookies)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_key_the_server_quotes_in_an_error_is_neither_recorded_nor_replayed(
    kind: ClientKind, tmp_path: Path
) -> None:
    key = API_KEYS[kind.vendor]
    path = tmp_path / "session.jsonl"
    scenario = scenarios(kind)["chat_create" if kind.vendor == "openai" else "messages_create"]
    with SdkServer() as server, recording(path):
        server.queue(ErrorReply(401, echo_key=True))
        live = await observe(kind, server.base_url, scenario, max_retries=0)
    assert live.raised is not None
    assert key in live.raised.message  # the live error did quote it
    assert key not in path.read_text()

    with replaying(path):
        replayed = await observe(kind, server.base_url, scenario, max_retries=0)

    assert replayed.raised is not None
    assert (replayed.raised.type, replayed.raised.status) == (live.raised.type, 401)
    assert key not in replayed.raised.message
    assert replayed.raised.message == live.raised.message.replace(key, PLACEHOLDER)
