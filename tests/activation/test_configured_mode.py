"""Record/replay activated from the configuration at runtime start."""

from __future__ import annotations

import logging

import pytest

from openprogram.config.paths import recordings_dir
from openprogram.errors import RecordReplayBlockedError
from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.transforms import BlockedProvider
from openprogram.providers import (
    ECHO_MODEL,
    Context,
    EchoProvider,
    Model,
    ReplayProvider,
    RuntimeState,
    UserMessage,
    complete_simple,
    get_api_provider,
    provider_runtime_status,
    register_api_provider,
)
from tests.support.config_files import write_config
from tests.support.tool_sessions import tool_session

HELLO = Context(messages=[UserMessage(content="hello")])


async def test_no_configuration_means_off() -> None:
    reply = await complete_simple(ECHO_MODEL, HELLO)
    assert reply.text == "echo:hello"
    status = provider_runtime_status()
    assert (status.state, status.mode) == (RuntimeState.READY, "off")


async def test_record_mode_wraps_every_current_and_future_api() -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    await tool_session()
    register_api_provider("later", EchoProvider())  # registered after activation
    await complete_simple(Model(id="m", api="later", provider="later"), HELLO)

    recording = read_recording(recordings_dir() / "demo.jsonl")
    assert [call.request["model"]["api"] for call in recording.calls] == ["echo", "echo", "later"]
    status = provider_runtime_status()
    assert status.mode == "record"
    assert status.recording == recordings_dir() / "demo.jsonl"


async def test_recording_into_a_recording_with_calls_appends_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    await complete_simple(ECHO_MODEL, HELLO)
    from openprogram.providers.registry import reset_provider_runtime
    from openprogram.recording.writer import close_recording_writers

    close_recording_writers()
    reset_provider_runtime()  # as the next process would start
    with caplog.at_level(logging.WARNING, logger="openprogram"):
        await complete_simple(ECHO_MODEL, HELLO)
    assert "already holds 1 call;" in caplog.text
    recording = read_recording(recordings_dir() / "demo.jsonl")
    assert len(recording.calls) == 2
    assert recording.appended_sessions == [1]  # the second process began a second session


async def test_replay_mode_answers_for_every_api() -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    _, recorded = await tool_session()
    from openprogram.providers.registry import reset_provider_runtime
    from openprogram.recording.writer import close_recording_writers

    close_recording_writers()
    reset_provider_runtime()
    write_config('[record_replay]\nmode = "replay"\nfile = "demo"\n')
    _, replayed = await tool_session()
    assert [r.text for r in replayed] == [r.text for r in recorded]
    provider = get_api_provider("echo")
    assert isinstance(provider, ReplayProvider)
    assert get_api_provider("never-registered") is provider
    provider.assert_consumed()


async def test_replay_ignores_the_configured_fields() -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    await complete_simple(ECHO_MODEL, HELLO)
    from openprogram.providers.registry import reset_provider_runtime
    from openprogram.recording.writer import close_recording_writers

    close_recording_writers()
    reset_provider_runtime()
    write_config(
        '[record_replay]\nmode = "replay"\nfile = "demo"\n'
        'ignore_fields = ["context.messages[*].content"]\n',
    )
    changed = Context(messages=[UserMessage(content="something else")])
    await complete_simple(ECHO_MODEL, changed)  # no mismatch: the field is ignored


BROKEN_CONFIGS = {
    "not toml": ("[record_replay\nmode = 'record'\n", "line 1"),
    "unknown mode": ('[record_replay]\nmode = "sometimes"\n', "record_replay.mode"),
    "record without a file": ('[record_replay]\nmode = "record"\n', "record_replay.file"),
    "missing replay file": ('[record_replay]\nmode = "replay"\nfile = "gone"\n', "gone.jsonl"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_CONFIGS))
async def test_a_broken_configuration_blocks_every_api(case: str) -> None:
    text, named = BROKEN_CONFIGS[case]
    write_config(text)
    with pytest.raises(RecordReplayBlockedError) as caught:
        await complete_simple(ECHO_MODEL, HELLO)
    message = str(caught.value)
    assert named in message
    assert "openprogram recordings status" in message
    assert "openprogram recordings off" in message
    assert "\n" not in message
    status = provider_runtime_status()
    assert (status.state, status.mode) == (RuntimeState.READY, "blocked")
    # Nothing falls through to a live provider, for apis registered before or after.
    register_api_provider("later", EchoProvider())
    assert isinstance(get_api_provider("later"), BlockedProvider)
    assert isinstance(get_api_provider("echo"), BlockedProvider)
    with pytest.raises(RecordReplayBlockedError) as again:
        await complete_simple(ECHO_MODEL, HELLO)
    assert str(again.value) == message


@pytest.mark.parametrize("damage", ["corrupt", "other version"])
async def test_a_bad_replay_file_blocks(damage: str) -> None:
    write_config('[record_replay]\nmode = "replay"\nfile = "demo"\n')
    recordings_dir().mkdir(parents=True)
    recording = recordings_dir() / "demo.jsonl"
    if damage == "corrupt":
        recording.write_text('{"type":"header","format_version":1}\n{oops\n{"type":"x"}\n')
    else:
        recording.write_text('{"type":"header","format_version":99}\n')
    with pytest.raises(RecordReplayBlockedError, match=r"demo\.jsonl, line \d"):
        await complete_simple(ECHO_MODEL, HELLO)


async def test_an_unwritable_record_target_blocks() -> None:
    write_config('[record_replay]\nmode = "record"\nfile = "demo"\n')
    # A file where the store folder should be: no user, root included, can create in it.
    recordings_dir().write_text("not a folder")
    with pytest.raises(RecordReplayBlockedError, match="cannot write the recording"):
        await complete_simple(ECHO_MODEL, HELLO)
    assert recordings_dir().read_text() == "not a folder"


async def test_an_environment_override_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    write_config('[record_replay]\nmode = "off"\nfile = "demo"\n')
    monkeypatch.setenv("OPENPROGRAM_RECORD_REPLAY__MODE", "record")
    await complete_simple(ECHO_MODEL, HELLO)
    assert provider_runtime_status().mode == "record"
    assert len(read_recording(recordings_dir() / "demo.jsonl").calls) == 1


async def test_an_unexpected_activation_failure_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram.activation import configured as activation

    def explode(loaded: object) -> None:
        raise KeyError("surprise")

    monkeypatch.setattr(activation, "_activate", explode)
    with pytest.raises(RecordReplayBlockedError, match="KeyError"):
        await complete_simple(ECHO_MODEL, HELLO)


def test_the_runtime_configuration_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram.config import settings
    from openprogram.providers.registry import runtime_configuration

    write_config('default_model = "echo:echo"\n')
    reads: list[int] = []
    real = settings.load_config
    monkeypatch.setattr(settings, "load_config", lambda *a, **k: reads.append(1) or real(*a, **k))
    first = runtime_configuration()
    assert first is not None
    assert first.settings is not None
    assert first.settings.default_model == "echo:echo"
    assert runtime_configuration() is first
    assert reads == [1]
