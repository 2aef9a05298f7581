"""docs/cli.md shows ``openprogram demo`` as it runs: its stdout, line for line, and its
stderr (the tool calls as they run) in the places the page puts them."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from tests.support.cli_runner import openprogram

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
TOOL_LINES = ("→ ", "← ")


def documented_run() -> list[str]:
    """The lines of the documented ``$ openprogram demo`` run, without the prompt line."""
    section = CLI_DOC.read_text().split("## `openprogram demo`", 1)[1]
    match = re.search(r"```sh\n\$ openprogram demo\n(?P<lines>.*?)```", section, re.DOTALL)
    assert match is not None, "docs/cli.md shows no run of `openprogram demo`"
    return match["lines"].splitlines()


def test_the_documented_run_is_what_the_demo_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = openprogram("demo")
    assert result.exit_code == 0, result.output

    documented = documented_run()
    assert result.stdout.splitlines() == [
        line for line in documented if not line.startswith(TOOL_LINES)
    ]
    assert result.stderr.splitlines() == [
        line for line in documented if line.startswith(TOOL_LINES)
    ]
