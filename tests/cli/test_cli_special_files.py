"""A FIFO or a device named as the recording (or as the configuration) is refused at once,
with one line: no command blocks on it or reads it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import Result

from openprogram.config.paths import recordings_dir
from tests.support.cli_runner import error_line, run
from tests.support.config_files import config_file, configure
from tests.support.recording_rows import write_recording

TIME_LIMIT = 10.0
"""Seconds a command may take; far more than refusing needs, far less than a hang."""


def run_quickly(*args: str, fifo: Path | None = None) -> Result:
    """``run(*args)``, failing — instead of hanging the suite — when it has not finished in
    :data:`TIME_LIMIT` seconds. A command stuck opening ``fifo`` is released by opening the
    FIFO's other end, so the thread ends."""
    finished: list[Result] = []
    worker = threading.Thread(target=lambda: finished.append(run(*args)), daemon=True)
    worker.start()
    worker.join(TIME_LIMIT)
    if worker.is_alive():
        if fifo is not None:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # EOF for the stuck reader
            worker.join(TIME_LIMIT)
        pytest.fail(f"`recordings {' '.join(args)}` was still running after {TIME_LIMIT}s")
    return finished[0]


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("mode", ["replay", "record"])
def test_status_with_a_fifo_as_the_configured_recording(fifo: Path, mode: str) -> None:
    configure(mode, fifo)

    result = run_quickly("status", fifo=fifo)

    assert result.exit_code == 1, result.output
    assert f"problem: {fifo}: not a regular file (a FIFO)" in result.stdout


@pytest.mark.parametrize(
    "command",
    [["show"], ["show", "--json"], ["verify"], ["replay"], ["diff", "good"], ["diff", "-", "good"]],
    ids=["show", "show-json", "verify", "replay", "diff-first", "diff-second"],
)
def test_reading_commands_refuse_a_fifo(fifo: Path, command: list[str]) -> None:
    write_recording("good", calls=1)
    if command[:2] == ["diff", "-"]:
        arguments = ["diff", "good", str(fifo)]
    elif command[0] == "diff":
        arguments = ["diff", str(fifo), "good"]
    else:
        arguments = [command[0], str(fifo), *command[1:]]

    result = run_quickly(*arguments, fifo=fifo)

    assert result.exit_code == 2, result.output
    assert f"{fifo}: not a regular file (a FIFO)" in error_line(result)
    assert not config_file().exists()  # replay changed nothing


def test_list_and_prune_step_over_a_fifo_in_the_store() -> None:
    write_recording("good", calls=1)
    os.mkfifo(recordings_dir() / "pipe.jsonl")

    listed = run_quickly("list", "--json", fifo=recordings_dir() / "pipe.jsonl")
    pruned = run_quickly("prune", "--keep", "0", "--yes", fifo=recordings_dir() / "pipe.jsonl")

    assert listed.exit_code == 0, listed.output
    assert '"name": "pipe"' not in listed.stdout
    assert pruned.exit_code == 0, pruned.output
    assert (recordings_dir() / "pipe.jsonl").exists()


def test_a_fifo_as_the_configuration_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config-pipe.toml"
    os.mkfifo(config)
    monkeypatch.setenv("OPENPROGRAM_CONFIG", str(config))

    status = run_quickly("status", fifo=config)
    off = run_quickly("off", fifo=config)

    assert status.exit_code == 1, status.output
    assert f"problem: {config}: is not a regular file" in status.stdout
    assert off.exit_code == 1, off.output
    assert f"{config}: is not a regular file" in error_line(off)


PROBE = """
import resource, sys
limit = 512 * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))  # a regression fails, not the machine
sys.argv = ["openprogram", *sys.argv[1:]]
from openprogram.cli import main
main()
"""


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
@pytest.mark.parametrize(
    ("argv", "environ", "code"),
    [
        (["recordings", "show", "/dev/zero"], {}, 2),
        (["recordings", "status"], {"OPENPROGRAM_CONFIG": "/dev/zero"}, 1),
    ],
    ids=["show", "config"],
)
def test_dev_zero_is_refused_without_reading_it(
    argv: list[str], environ: dict[str, str], code: int
) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env={**os.environ, **environ},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == code, result.stderr
    assert "not a regular file" in result.stdout + result.stderr
    assert "Traceback" not in result.stderr


def test_delete_refuses_a_fifo_in_the_store_saying_what_it_is() -> None:
    recordings_dir().mkdir(parents=True)
    os.mkfifo(recordings_dir() / "pipe.jsonl")

    result = run_quickly("delete", "pipe", "--yes", fifo=recordings_dir() / "pipe.jsonl")

    assert result.exit_code == 1
    assert "it is not a regular file" in error_line(result)
    assert (recordings_dir() / "pipe.jsonl").exists()
