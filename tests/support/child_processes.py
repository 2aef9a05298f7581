"""``openprogram`` and Python code in a new process, as a user runs them: for the tests whose
subject is the process boundary (a new process reads the configuration, replays offline)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.offline import SOCKETS_REFUSED

CLI_MAIN = """\
import sys
from openprogram.cli import main
sys.argv = ["openprogram", *sys.argv[1:]]
main()
"""


def user_environment(home: Path) -> dict[str, str]:
    """This environment with ``OPENPROGRAM_HOME`` at ``home`` and no colours."""
    return {**os.environ, "OPENPROGRAM_HOME": str(home), "NO_COLOR": "1"}


def python_process(
    code: str,
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    offline: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -c CODE ARGS``; with ``offline``, every socket connection in it fails."""
    source = (SOCKETS_REFUSED if offline else "") + code
    return subprocess.run(
        [sys.executable, "-c", source, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def openprogram_process(
    *args: str,
    env: dict[str, str],
    cwd: Path | None = None,
    offline: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``openprogram ARGS`` in a new process; with ``offline``, every socket connection in it
    fails."""
    return python_process(CLI_MAIN, *args, env=env, cwd=cwd, offline=offline, timeout=timeout)


def reported(result: subprocess.CompletedProcess[str], tag: str = "PROBE") -> Any:
    """The JSON a child process printed after ``tag`` on a line of its own stdout."""
    [line] = [line for line in result.stdout.splitlines() if line.startswith(f"{tag} ")]
    return json.loads(line.removeprefix(f"{tag} "))
