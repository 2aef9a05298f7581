"""Every example marked ``<!-- example: NAME -->`` in the README and docs/ runs as shown.

A marked example is a ```python block; the first ```text block after it, if any, is the
exact output it must print. Each runs in a fresh process in an empty folder.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
EXAMPLE = re.compile(
    r"<!-- example: (?P<name>[\w-]+) -->\s*```python\n(?P<code>.*?)```"
    r"(?:(?:(?!<!-- example:).)*?```text\n(?P<output>.*?)```)?",
    re.DOTALL,
)


SHELL_EXAMPLE = re.compile(
    r"<!-- example-sh: (?P<name>[\w-]+) -->\s*```sh\n(?P<code>.*?)```", re.DOTALL
)


def shell_examples() -> list[tuple[str, str]]:
    found = []
    for document in DOCUMENTS:
        for match in SHELL_EXAMPLE.finditer(document.read_text()):
            found.append((f"{document.relative_to(ROOT)}:{match['name']}", match["code"]))
    return found


def examples() -> list[tuple[str, str, str | None]]:
    found = []
    for document in DOCUMENTS:
        for match in EXAMPLE.finditer(document.read_text()):
            name = f"{document.relative_to(ROOT)}:{match['name']}"
            found.append((name, match["code"], match["output"]))
    return found


def test_the_readme_has_examples() -> None:
    assert any(name.startswith("README.md:") for name, _, _ in examples())


@pytest.mark.parametrize(("name", "code", "output"), examples(), ids=[e[0] for e in examples()])
def test_example_runs_as_documented(
    name: str, code: str, output: str | None, tmp_path: Path
) -> None:
    script = tmp_path / "example.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stderr}"
    if output is not None:
        assert result.stdout == output, f"{name} printed something else"


@pytest.mark.parametrize(("name", "code"), shell_examples(), ids=[e[0] for e in shell_examples()])
def test_shell_example_runs(name: str, code: str, tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "OPENPROGRAM_HOME": str(tmp_path / "openprogram-home"),
        },
        timeout=180,
    )
    assert result.returncode == 0, f"{name} failed:\n{result.stdout}\n{result.stderr}"
