"""Registering ``run`` and ``serve`` keeps ``openprogram --help`` light: no provider, no agent,
no httpx, no aiohttp (the recording proxy's server)."""

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
heavy = ("httpx", "openprogram.providers", "openprogram.agent", "aiohttp", "openprogram.serving")
print("PROBE " + json.dumps(sorted(m for m in sys.modules if m.startswith(heavy))))
"""


@pytest.mark.parametrize("argv", [["--help"], ["run", "--help"], ["serve", "--help"]], ids=" ".join)
def test_help_imports_no_provider_agent_httpx_or_aiohttp(argv: list[str]) -> None:
    result = python_process(PROBE, *argv, env=dict(os.environ))
    assert reported(result) == []
    assert "Usage: openprogram" in result.stdout


def test_recordings_status_imports_no_provider_agent_httpx_or_aiohttp() -> None:
    result = python_process(PROBE, "recordings", "status", env=dict(os.environ))
    assert reported(result) == []
    assert "mode:" in result.stdout
