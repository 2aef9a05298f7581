"""exec's private exchange folders: each names the exec process it belongs to, and the ones
an exec killed before it could clean up (``kill -9``) are swept away by the next exec."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from openprogram.activation.exec_environment import (
    EXCHANGE_PREFIX,
    OWNER_FILE,
    open_exchange,
)


@pytest.fixture(autouse=True)
def own_temporary_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temporary folders made in this test's own folder, so other tests' execs are not
    seen."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def ended_pid() -> int:
    """The pid of a process that has ended (and been waited for)."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def leftover(folder: Path, name: str, owner: int | None) -> Path:
    path = folder / f"{EXCHANGE_PREFIX}{name}"
    (path / "site").mkdir(parents=True)
    if owner is not None:
        (path / OWNER_FILE).write_text(str(owner))
    return path


def test_an_exchange_names_its_owner_and_the_dead_ones_are_swept(tmp_path: Path) -> None:
    killed = leftover(tmp_path, "killed", ended_pid())
    running = leftover(tmp_path, "running", os.getppid())
    unknown = leftover(tmp_path, "unknown", None)

    exchange = open_exchange()

    assert exchange.folder.parent == tmp_path
    assert (exchange.folder / OWNER_FILE).read_text() == str(os.getpid())
    assert (exchange.site / "sitecustomize.py").is_file()
    assert not killed.exists()
    assert running.exists()
    assert unknown.exists()  # no owner named: not ours to judge
    exchange.remove()
    assert not exchange.folder.exists()
