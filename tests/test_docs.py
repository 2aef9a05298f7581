"""Every example marked ``<!-- example: NAME -->`` in the README and docs/ runs as shown.

A marked example is a ```python block; the first ```text block after it, if any, is the
exact output it must print. Each runs in a fresh process in an empty folder, and then once
more in the same folder: a reader who runs an example twice gets the same output again.

A ```python block marked ``<!-- example-file: NAME -->`` is a file the examples of its document
use (a stand-in server, an agent to run): it is written as NAME into each example's folder.
A shell example (``<!-- example-sh: NAME -->``) must exit 0, twice in the same folder and
store, and print the transcript hashes its document shows.

The README opens with two one-line commands (``<!-- one-liners -->``): install and run the
demo, install the development extras and run the tests. Both are checked here.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
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
    r"<!-- example-sh: (?P<name>[\w-]+) -->\s*```sh\n(?P<code>.*?)```"
    r"(?:(?:(?!<!-- example).)*?```text\n(?P<output>.*?)```)?",
    re.DOTALL,
)
"""A shell example, and the output a document shows for it, if any (the first ```text block
before the next example): its transcript hash lines are checked."""


EXAMPLE_FILE = re.compile(
    r"<!-- example-file: (?P<name>[\w.-]+) -->\s*```python\n(?P<code>.*?)```", re.DOTALL
)


def example_files(name: str) -> dict[str, str]:
    """The files the document of example ``name`` (``docs/x.md:example``) provides."""
    document = ROOT / name.split(":", 1)[0]
    return {match["name"]: match["code"] for match in EXAMPLE_FILE.finditer(document.read_text())}


def write_example_files(name: str, folder: Path) -> None:
    for file_name, code in example_files(name).items():
        (folder / file_name).write_text(code)


HASH_LINE = re.compile(r"^transcript hash: [0-9a-f]{64}$", re.MULTILINE)
ANY_HASH = re.compile(r"\b[0-9a-f]{64}\b")


def shell_examples() -> list[tuple[str, str, str]]:
    found = []
    for document in DOCUMENTS:
        for match in SHELL_EXAMPLE.finditer(document.read_text()):
            name = f"{document.relative_to(ROOT)}:{match['name']}"
            found.append((name, match["code"], match["output"] or ""))
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
    write_example_files(name, tmp_path)
    script = tmp_path / "example.py"
    script.write_text(code)
    for attempt in ("first", "second"):
        result = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            timeout=120,
        )
        assert result.returncode == 0, f"{name} failed on its {attempt} run:\n{result.stderr}"
        if output is not None:
            assert result.stdout == output, f"{name} printed something else on its {attempt} run"


NOT_A_USERS_SHELL = ("CI", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")
"""Variables this test run may have that a reader's own shell would not (on CI, ``CI`` would
make the examples' recording step refuse to record)."""


@pytest.mark.parametrize(
    ("name", "code", "output"), shell_examples(), ids=[e[0] for e in shell_examples()]
)
def test_shell_example_runs(name: str, code: str, output: str, tmp_path: Path) -> None:
    write_example_files(name, tmp_path)
    bin_dir = Path(sys.executable).parent
    environment = {
        **{key: value for key, value in os.environ.items() if key not in NOT_A_USERS_SHELL},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "OPENPROGRAM_HOME": str(tmp_path / "openprogram-home"),
    }
    # A reader runs a walkthrough again in the same folder and store: it must work again.
    for attempt in ("first", "second"):
        try:
            result = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                env=environment,
                timeout=180,
            )
        finally:
            stop_background_server(tmp_path / "stand_in.pid")
        assert result.returncode == 0, (
            f"{name} failed on its {attempt} run:\n{result.stdout}\n{result.stderr}"
        )
        # The transcript hashes the document shows are the ones the commands print, and
        # every hash the commands print is one the document shows (in its output or in a
        # later example of the same session).
        printed = HASH_LINE.findall(result.stdout + result.stderr)
        shown = HASH_LINE.findall(output)
        assert shown == printed[: len(shown)], f"{name}, {attempt} run"
        document = (ROOT / name.split(":", 1)[0]).read_text()
        unknown = [h for h in ANY_HASH.findall(result.stdout + result.stderr) if h not in document]
        assert unknown == [], f"{name} printed hashes its document does not show"


def stop_background_server(pid_file: Path) -> None:
    """Stop a stand-in server an example left running because it failed before its ``kill``."""
    with contextlib.suppress(OSError, ValueError):  # none left, or it has ended already
        os.kill(int(pid_file.read_text()), signal.SIGTERM)


ONE_LINERS = re.compile(r"<!-- one-liners -->\s*```sh\n(?P<code>.*?)```", re.DOTALL)


def readme_one_liners() -> list[str]:
    match = ONE_LINERS.search((ROOT / "README.md").read_text())
    assert match is not None, "the README has no <!-- one-liners --> block"
    return [line.split("#", 1)[0].strip() for line in match["code"].splitlines()]


def test_the_readme_opens_with_the_two_one_liners() -> None:
    readme = (ROOT / "README.md").read_text()
    assert readme.index("<!-- one-liners -->") < readme.index("\n## "), "not at the top"
    install_and_demo, install_and_test = readme_one_liners()
    assert install_and_demo == "pip install . && openprogram demo"
    assert install_and_test.startswith("pip install -e '.[dev]' && ")
    test_command = install_and_test.split(" && ", 1)[1]
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines(), (
        "CI must run the test command the README gives"
    )


def test_the_demo_one_liner_runs_offline_and_touches_nothing(tmp_path: Path) -> None:
    demo = readme_one_liners()[0].split(" && ", 1)[1]
    home = tmp_path / "openprogram-home"
    bin_dir = Path(sys.executable).parent
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", demo],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
            "OPENPROGRAM_HOME": str(home),
        },
        timeout=120,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert "replayed and matched; transcript hash" in result.stdout
    assert not home.exists(), "the demo wrote into the configuration or the store"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home"], "it left files behind"


SAME_AS = re.compile(r"<!-- same-as: (?P<path>[\w./-]+) -->\s*```\w*\n(?P<code>.*?)```", re.DOTALL)
"""A block a reader copies into their project, shown whole: it must be the file the tests run."""


def copied_files() -> list[tuple[str, str, str]]:
    found = []
    for document in DOCUMENTS:
        for match in SAME_AS.finditer(document.read_text()):
            found.append(
                (f"{document.relative_to(ROOT)}:{match['path']}", match["path"], match["code"])
            )
    return found


@pytest.mark.parametrize(
    ("name", "path", "code"), copied_files(), ids=[c[0] for c in copied_files()]
)
def test_a_file_to_copy_is_the_one_the_tests_run(name: str, path: str, code: str) -> None:
    assert code == (ROOT / path).read_text(), f"{name} differs from the file"


def test_the_files_to_copy_are_there() -> None:
    assert {path for _, path, _ in copied_files()} >= {
        "tests/serving/node/openprogram-vitest.mjs",
        "tests/serving/node/openprogram-jest.cjs",
    }
