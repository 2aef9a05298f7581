"""Registering ``run`` keeps ``openprogram --help`` light: no provider, no agent, no httpx."""

from __future__ import annotations

import os

import pytest

from tests.support.child_processes import python_process, reported

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
    result = python_process(PROBE, *argv, env=dict(os.environ))
    assert reported(result) == []
    assert "run" in result.stdout
