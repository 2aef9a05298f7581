"""The start-up decision: the hook's cheap one (``_openprogram_startup``: where the
configuration is, the marker beside it, openprogram's own commands) agrees with openprogram's
full one, and :func:`openprogram.activation.startup.start` decides once, fails closed, and
leaves the precedence to the ways in entered later (an explicit ``record_replay()`` over the
configured mode; a refusal inside a replay naming both sides)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import _openprogram_startup as hook
import openprogram
from openprogram.activation import startup
from openprogram.activation.model_layer import (
    LayerBoundaries,
    ModelLayerProcess,
    start_model_layer,
)
from openprogram.activation.plan import RecordReplayPlan
from openprogram.config.paths import config_location, recordings_dir
from openprogram.errors import RecordReplayBlockedError, ReplayConnectionRefusedError
from openprogram.provider_boundary.codec import read_recording
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.store.status import configured_status
from tests.support.cli_runner import run
from tests.support.config_files import configure, write_config
from tests.support.http_agent import answering, ask
from tests.support.recording_rows import write_recording
from tests.support.sse_server import ScriptedServer


@pytest.mark.parametrize(
    "variables",
    [
        {},
        {"XDG_CONFIG_HOME": "/elsewhere/config"},
        {"XDG_CONFIG_HOME": ""},
        {"XDG_CONFIG_HOME": "relative/config"},
        {"XDG_CONFIG_HOME": " /spaced "},
        {"HOME": "relative-home"},
        {"HOME": "/home/someone/"},
        {"OPENPROGRAM_HOME": "~/op"},
        {"OPENPROGRAM_HOME": "relative/op"},
        {"OPENPROGRAM_CONFIG": "~/my.toml", "OPENPROGRAM_HOME": "/ignored"},
        {"OPENPROGRAM_CONFIG": "conf/my.toml"},
        {"OPENPROGRAM_CONFIG": "", "OPENPROGRAM_HOME": ""},
    ],
)
def test_the_hook_finds_the_configuration_where_openprogram_does(
    variables: dict[str, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENPROGRAM_HOME")
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    found = hook.config_path(os.environ)
    assert found is not None
    assert os.path.normpath(found) == os.path.normpath(config_location().path)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["/venv/bin/python", "/venv/bin/openprogram", "recordings", "off"], True),
        (["python", "-X", "importtime", "/venv/bin/openprogram", "--version"], True),
        (["python", "-m", "openprogram", "run", "hi"], True),
        (["python", "-mopenprogram", "run"], True),
        (["python", "-Im", "openprogram.cli"], True),
        (["python", "-W", "ignore", "-m", "openprogram"], True),
        (["python", "-c", "import openprogram"], False),
        (["python", "-Ic", "pass"], False),
        (["python", "agent.py", "openprogram"], False),
        (["python", "-m", "pytest"], False),
        (["python"], False),
        (["python", "-"], False),
    ],
)
def test_openprogram_s_own_commands_are_told_from_their_arguments(
    argv: list[str], expected: bool
) -> None:
    assert hook.is_openprogram_command(argv) is expected


def test_off_without_a_file_or_a_variable_and_with_the_mode_variable() -> None:
    assert hook.configured_off(os.environ)
    assert hook.configured_off({**os.environ, "OPENPROGRAM_RECORD_REPLAY__MODE": "off"})
    # a variable could turn it on: openprogram must read the configuration to tell
    assert not hook.configured_off({**os.environ, "OPENPROGRAM_RECORD_REPLAY__MODE": "replay"})
    assert not hook.configured_off({**os.environ, "OPENPROGRAM_DEFAULT_MODEL": "echo:x"})


def test_the_mode_switching_commands_write_the_marker_and_a_hand_edit_voids_it() -> None:
    assert run("record", "demo").exit_code == 0
    assert not hook.configured_off(os.environ)  # record: openprogram decides in full
    assert run("off").exit_code == 0
    assert hook.configured_off(os.environ)

    config = config_location().path
    config.write_text(config.read_text().replace('mode = "off"', 'mode = "replay"'))
    assert not hook.configured_off(os.environ)  # edited by hand: read in full again


def test_a_process_that_found_the_mode_off_writes_the_marker_for_the_next(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_config('# only a comment\n[record_replay]\nmode = "off"\n')
    monkeypatch.setenv("OPENPROGRAM_DEFAULT_MODEL", "echo:echo")
    assert not hook.configured_off(os.environ)
    assert startup.configured_at_start(os.environ) is None
    assert hook.configured_off(os.environ)
    # another variable, another decision; the marker keeps a line for each
    monkeypatch.setenv("OPENPROGRAM_DEFAULT_MODEL", "echo:other")
    assert not hook.configured_off(os.environ)
    assert startup.configured_at_start(os.environ) is None
    assert hook.configured_off(os.environ)
    monkeypatch.setenv("OPENPROGRAM_DEFAULT_MODEL", "echo:echo")
    assert hook.configured_off(os.environ)


def test_the_marker_holds_a_digest_of_the_variables_never_their_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "sk-proj-0123456789abcdefSECRET"
    monkeypatch.setenv("OPENPROGRAM_PROVIDERS__OPENAI__BASE_URL", f"https://u:{secret}@h/v1")
    assert run("off").exit_code == 0
    marker = Path(hook.marker_path(str(config_location().path)))
    assert marker.is_file()
    assert secret not in marker.read_text()
    assert oct(marker.stat().st_mode & 0o777) == "0o600"
    assert hook.configured_off(os.environ)


def test_a_broken_configuration_starts_blocked_naming_the_recovery() -> None:
    write_config("[record_replay\n")
    decided = startup.configured_at_start(os.environ)
    assert decided is not None
    plan, _ = decided
    assert plan.mode == "blocked"
    assert "not valid TOML" in (plan.blocked_reason or "")


@pytest.fixture
def fresh_start(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``startup.start`` as in a process that has not started yet; its mode stopped after."""
    monkeypatch.setattr(startup, "_started", [])
    monkeypatch.setattr(startup, "_layer", [])
    yield
    startup.stop_configured_mode()


@pytest.mark.usefixtures("fresh_start")
def test_start_decides_once_however_often_it_is_called(
    server: ScriptedServer, tmp_path: Path
) -> None:
    configure("replay", str(tmp_path / "missing.jsonl"))
    startup.start(argv=["python", "-c", "pass"])
    startup.start(argv=["python", "-c", "pass"])
    assert len(startup._layer) == 1


@pytest.mark.usefixtures("fresh_start")
def test_a_failure_of_the_start_itself_fails_closed(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(environ: object) -> None:
        raise RuntimeError("the disk fell off")

    monkeypatch.setattr(startup, "configured_at_start", broken)
    startup.start(argv=["python", "-c", "pass"])
    layer = startup.started_layer()
    assert layer is not None
    assert layer.plan.mode == "blocked"
    with httpx.Client() as client, pytest.raises(RecordReplayEscape) as refused:
        client.post(
            f"{server.base_url}/v1/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
    assert isinstance(refused.value.error, RecordReplayBlockedError)
    assert "the disk fell off" in str(refused.value.error)
    assert "openprogram recordings off" in str(refused.value.error)
    assert server.received == []  # refused before it was sent


@pytest.fixture
def configured_replay(server: ScriptedServer, tmp_path: Path) -> Iterator[ModelLayerProcess]:
    """The configured replay mode of a recording of one call, every request to the loopback
    server model traffic (``model_hosts``); taken off after."""
    path = tmp_path / "configured.jsonl"
    server.serve(answering("configured"))
    with openprogram.record_replay(path, mode="record"):
        ask(server.base_url, "hi")
    plan = RecordReplayPlan("replay", path, model_hosts=frozenset({"127.0.0.1"}))
    layer = start_model_layer(plan)
    yield layer
    layer.stop()


def test_an_explicit_record_block_records_inside_the_configured_replay(
    configured_replay: ModelLayerProcess, server: ScriptedServer, tmp_path: Path
) -> None:
    assert ask(server.base_url, "hi") == "configured"  # the configured replay answers
    inside = tmp_path / "explicit.jsonl"
    server.serve(answering("live"))
    with openprogram.record_replay(inside, mode="record"):
        assert ask(server.base_url, "something else") == "live"
    assert len(read_recording(inside).calls) == 1


def test_a_recording_inside_a_hermetic_replay_is_refused_naming_both(
    server: ScriptedServer, empty: Path, tmp_path: Path
) -> None:
    inside = tmp_path / "inside.jsonl"
    with (
        pytest.raises(ReplayConnectionRefusedError) as refused,
        openprogram.record_replay(empty, mode="replay"),
        openprogram.record_replay(inside, mode="record"),
    ):
        ask(server.base_url, "hi")
    message = str(refused.value)
    assert f"the recording into {inside} runs inside the replay of {empty}" in message
    assert "record outside that replay" in message


def _snapshot(path: Path) -> None:
    """Make the recording at ``path`` a drift snapshot (its header says so)."""
    header, *rest = path.read_text().splitlines(keepends=True)
    marked = header.rstrip("\n")[:-1] + ', "drift_snapshot": {"recording": "x"}}\n'
    path.write_text(marked + "".join(rest))


def _configured_and_broken(setup: str, tmp_path: Path) -> None:
    """Configure one state of the mode and its recording (see the test's cases)."""
    store = recordings_dir()
    if setup == "not TOML":
        write_config("[record_replay\n")
    elif setup == "replay without a file":
        write_config('[record_replay]\nmode = "replay"\n')
    elif setup == "replay of a name that is none":
        write_config('[record_replay]\nmode = "replay"\nfile = "bad name"\n')
    elif setup == "replay of a missing recording":
        configure("replay", "gone")
    elif setup in ("replay of a damaged recording", "record into a damaged recording"):
        path = write_recording("demo", calls=1)
        path.write_text(path.read_text() + "{damaged\n")
        configure(setup.split()[0], "demo")
    elif setup == "replay of a drift snapshot":
        _snapshot(write_recording("demo", calls=1))
        configure("replay", "demo")
    elif setup == "record through a link in the store":
        elsewhere = write_recording(tmp_path / "elsewhere.jsonl", calls=0)
        store.mkdir(parents=True, exist_ok=True)
        (store / "demo.jsonl").symlink_to(elsewhere)
        configure("record", "demo")
    elif setup in ("replay of a good recording", "record into a good recording"):
        write_recording("demo", calls=1)
        configure(setup.split()[0], "demo")
    else:
        raise AssertionError(setup)


@pytest.mark.parametrize(
    "setup",
    [
        "not TOML",
        "replay without a file",
        "replay of a name that is none",
        "replay of a missing recording",
        "replay of a damaged recording",
        "replay of a drift snapshot",
        "record into a damaged recording",
        "record through a link in the store",
        "replay of a good recording",
        "record into a good recording",
    ],
)
def test_a_process_is_blocked_exactly_when_status_calls_the_configuration_broken(
    setup: str, tmp_path: Path
) -> None:
    _configured_and_broken(setup, tmp_path)
    broken = configured_status().broken
    decided = startup.configured_at_start(os.environ)
    assert decided is not None
    plan, setting = decided
    if plan.mode != "blocked":  # the recording is read when the first model call needs it
        plan = LayerBoundaries(plan, setting).prepared().plan
    assert (plan.mode == "blocked") is broken, plan.blocked_reason
