"""Registering ``run`` keeps ``openprogram --help`` light: no provider, no agent, no httpx."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
sys.argv = ["openprogram", *sys.argv[1:]]
from openprogram.cli import main
try:
    main()
except SystemExit:
    pass
heavy = ("httpx", "openprogram.providers", "openprogram.agent")
print("PROBE " + json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"]], ids=" ".join)
def test_help_imports_no_provider_agent_or_httpx(argv: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    [line] = [line for line in result.stdout.splitlines() if line.startswith("PROBE ")]
    assert json.loads(line.removeprefix("PROBE ")) == []
    assert "run" in result.stdout
