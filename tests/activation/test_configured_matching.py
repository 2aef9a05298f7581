"""The configured replay mode (at runtime start) pairs requests with recorded calls as
``record_replay.match`` says: by content by default, strictly by order when asked."""

from __future__ import annotations

import pytest

from openprogram.errors import ReplayMismatch
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    ReplayProvider,
    UserMessage,
    complete_simple,
    get_api_provider,
)
from openprogram.providers.registry import reset_provider_runtime
from openprogram.recording.writer import close_recording_writers
from tests.support.config_files import write_config


def ask(text: str) -> Context:
    return Context(messages=[UserMessage(content=text)])


async def record_two_calls() -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    await complete_simple(ECHO_MODEL, ask("first"))
    await complete_simple(ECHO_MODEL, ask("second"))
    close_recording_writers()
    reset_provider_runtime()  # as the next process would start


async def test_by_default_calls_are_served_by_content() -> None:
    await record_two_calls()
    write_config('[record_replay]\nmode = "replay"\nfile = "demo"\n')

    assert (await complete_simple(ECHO_MODEL, ask("second"))).text == "echo:second"
    assert (await complete_simple(ECHO_MODEL, ask("first"))).text == "echo:first"
    provider = get_api_provider("echo")
    assert isinstance(provider, ReplayProvider)
    assert provider.match == "content"
    provider.assert_consumed()


async def test_match_order_serves_only_the_next_call() -> None:
    await record_two_calls()
    write_config('[record_replay]\nmode = "replay"\nfile = "demo"\nmatch = "order"\n')

    with pytest.raises(ReplayMismatch, match="recorded 'first', incoming 'second'"):
        await complete_simple(ECHO_MODEL, ask("second"))
    provider = get_api_provider("echo")
    assert isinstance(provider, ReplayProvider)
    assert provider.match == "order"
