"""A pytest run in a new process over test files a test writes: for the tests whose subject
is the process boundary of ``pytest --openprogram-isolate`` (the session runs again inside a
namespace; the live servers stay outside, in the process of the test that started it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.isolation.live import CLIENT_TIMEOUT
from tests.support.inner_project import ENVIRONMENT_CLEARED

RUN_TIMEOUT = 600
"""Only a run that hangs waits this long (seconds); no test measures time with it."""

_NOT_INHERITED = (*ENVIRONMENT_CLEARED, "PYTEST_CURRENT_TEST")
"""What the outer run set (CI's ``CI=true``, the test's own pytest-xdist worker, a configured
mode): the run started here is a developer's session of its own, unless ``env`` says otherwise."""


@dataclass(frozen=True)
class Case:
    """One generated test: it runs ``argv`` as a child process, or ``source`` in the test's
    own process (``exec``), prints what the client printed, and passes either way unless
    ``expect`` is given (then the client's line must contain it)."""

    name: str
    argv: list[str] | None = None
    source: str | None = None
    expect: str | None = None
    fixture: str | None = None


def suite_text(cases: list[Case]) -> str:
    """The text of a test module holding one test per case."""
    lines = ["import json", "import subprocess", ""]
    for case in cases:
        argument = "" if case.fixture is None else case.fixture
        lines.append(f"def test_{case.name}({argument}):")
        if case.argv is not None:
            lines += [
                f"    argv = json.loads({json.dumps(case.argv)!r})",
                "    done = subprocess.run(argv, capture_output=True, text=True, "
                f"timeout={CLIENT_TIMEOUT * 3})",
                "    said = done.stdout + done.stderr",
            ]
        else:
            lines += [
                "    import contextlib, io",
                "    out = io.StringIO()",
                "    with contextlib.redirect_stdout(out):",
                f"        exec(compile({case.source!r}, 'client', 'exec'), {{}})",
                "    said = out.getvalue()",
            ]
        lines.append(f"    print('CLIENT {case.name}:', said)")
        if case.expect is not None:
            lines.append(f"    assert {case.expect!r} in said, said")
        lines.append("")
    return "\n".join(lines)


def run_pytest(
    folder: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -p no:cacheprovider -rA ARGS`` in ``folder``, as a user runs it."""
    environ = {name: value for name, value in os.environ.items() if name not in _NOT_INHERITED}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", *args],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )


def said(done: subprocess.CompletedProcess[str]) -> str:
    """All a run printed, for an assertion's message."""
    return f"exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n{done.stderr}"
