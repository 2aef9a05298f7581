"""The ``recordings`` commands never start the provider runtime nor import a provider or httpx.

Each case runs ``openprogram.cli.main()`` in a fresh interpreter, then reports which
``httpx``, ``openprogram.providers``, ``openprogram.recording``, ``openprogram.store`` and
``rich.console`` modules got imported and the runtime's state.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from openprogram.config.paths import recordings_dir
from tests.support.child_processes import python_process, reported
from tests.support.cli_runner import run
from tests.support.config_files import config_file
from tests.support.recording_rows import write_corrupt_recording, write_recording

PROBE = """
import json, sys
PREFIXES = ("httpx", "openprogram.providers", "openprogram.recording", "openprogram.store")
PREFIXES += ("rich.console",)
sys.argv = ["openprogram", *sys.argv[1:]]
from openprogram.cli import main
try:
    main()
    code = 0
except SystemExit as exit:
    code = exit.code
modules = sorted(m for m in sys.modules if m.startswith(PREFIXES))
state = "new"  # a runtime module never imported never left NEW
if "openprogram.providers.runtime" in sys.modules:
    state = str(sys.modules["openprogram.providers.runtime"].provider_runtime_status().state)
print("PROBE " + json.dumps({"code": code, "modules": modules, "state": state}))
"""

NEVER = ("httpx", "openprogram.providers.builtins", "openprogram.providers.runtime")
"""Never imported by any ``recordings`` command, whatever state it finds."""
NOT_FOR_LIGHT_COMMANDS = ("openprogram.providers.events", "openprogram.providers.types")
"""Not imported by ``off``, ``record``, ``list`` and ``status`` (outside replay mode):
only checking a replay recording's events needs the event models."""


def probe(*argv: str) -> dict[str, object]:
    report: dict[str, object] = reported(python_process(PROBE, *argv, env=dict(os.environ)))
    return report


def nothing() -> None:
    pass


def replaying() -> None:
    write_recording("demo", calls=2)
    assert run("replay", "demo").exit_code == 0


def recording() -> None:
    write_recording("older", calls=1)
    assert run("record", "demo").exit_code == 0


def replaying_a_corrupt_file() -> None:
    replaying()
    write_corrupt_recording(recordings_dir() / "demo.jsonl")


def broken_config() -> None:
    config_file().parent.mkdir(parents=True)
    config_file().write_text("[record_replay\n")


Setup = Callable[[], None]

LIGHT_CASES: list[tuple[Setup, list[str], int]] = [
    (nothing, ["recordings", "status"], 0),
    (recording, ["recordings", "status"], 0),
    (broken_config, ["recordings", "status"], 1),
    (nothing, ["recordings", "list"], 0),
    (replaying_a_corrupt_file, ["recordings", "list"], 0),
    (replaying, ["recordings", "off"], 0),
    (broken_config, ["recordings", "off"], 0),
    (nothing, ["recordings", "record", "demo"], 0),
    (nothing, ["--help"], 0),
    (nothing, ["recordings", "--help"], 0),
]

HEAVIER_CASES: list[tuple[Setup, list[str], int]] = [
    (replaying, ["recordings", "status"], 0),
    (replaying_a_corrupt_file, ["recordings", "status"], 1),
    (recording, ["recordings", "replay", "older"], 0),
    (replaying, ["recordings", "show", "demo"], 0),
    # scan reads a recording as replay does: a provider call's events as its event models
    (replaying, ["recordings", "scan", "--fix"], 0),
    (recording, ["recordings", "delete", "older", "--yes"], 0),
    (recording, ["recordings", "prune", "--keep", "0", "--yes"], 0),
]


def case_id(case: tuple[Setup, list[str], int]) -> str:
    setup, argv, _ = case
    return f"{' '.join(argv[1:] or argv)}-{setup.__name__}"


@pytest.mark.parametrize("case", LIGHT_CASES, ids=case_id)
def test_light_commands_import_no_provider_code(case: tuple[Setup, list[str], int]) -> None:
    setup, argv, code = case
    setup()

    report = probe(*argv)

    assert report["code"] == code
    modules = report["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith(NEVER + NOT_FOR_LIGHT_COMMANDS)] == []
    assert report["state"] == "new"


@pytest.mark.parametrize("case", HEAVIER_CASES, ids=case_id)
def test_no_command_imports_a_provider_or_starts_the_runtime(
    case: tuple[Setup, list[str], int],
) -> None:
    setup, argv, code = case
    setup()

    report = probe(*argv)

    assert report["code"] == code
    modules = report["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith(NEVER)] == []
    assert report["state"] == "new"


START_UP_CASES: list[tuple[Setup, list[str]]] = [
    (nothing, ["recordings", "status"]),
    (nothing, ["recordings", "list"]),
]
"""The commands a user and a script run most, from the state of a fresh install."""
NOT_AT_START_UP = (
    "rich.console",  # a line written to a pipe carries no style: written as it is
    "openprogram.recording.token_shapes",  # no text to redact
    "openprogram.recording.report",
    "openprogram.store.summary",  # an empty store has nothing to read
    "openprogram.recording.format",
)


@pytest.mark.parametrize(
    "case", START_UP_CASES, ids=lambda case: f"{case[1][1]}-{case[0].__name__}"
)
def test_the_start_up_commands_written_to_a_pipe_load_only_what_they_use(
    case: tuple[Setup, list[str]],
) -> None:
    setup, argv = case
    setup()

    report = probe(*argv)

    assert report["code"] == 0
    modules = report["modules"]
    assert isinstance(modules, list)
    assert [m for m in modules if m.startswith(NOT_AT_START_UP)] == []
