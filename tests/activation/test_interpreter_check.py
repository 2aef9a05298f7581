"""What exec checks before running a command: the Python it runs (the command itself, or a
script's #! line), the flags that would skip the sitecustomize, and that an interpreter
other than exec's own can import openprogram."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from openprogram.activation.exec_environment import check_command, python_of
from openprogram.errors import ExecSetupError

ENV = {"PATH": os.environ["PATH"]}


def script(folder: Path, first_line: str, name: str = "tool") -> Path:
    path = folder / name
    path.write_text(f"{first_line}\nprint('hi')\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(
    ("arguments", "flag"),
    [
        (["-I", "agent.py"], "-I"),
        (["-E", "agent.py"], "-E"),
        (["-S", "-c", "pass"], "-S"),
        (["-uIS", "agent.py"], "-I"),
        (["-X", "dev", "-E", "agent.py"], "-E"),
        (["-W", "error", "-S", "-m", "pytest"], "-S"),
        (["--check-hash-based-pycs", "always", "-I", "x.py"], "-I"),
    ],
)
def test_flags_that_skip_the_sitecustomize_are_refused(arguments: list[str], flag: str) -> None:
    with pytest.raises(ExecSetupError, match=f"{flag} .*would run without record/replay"):
        check_command([sys.executable, *arguments], ENV)


@pytest.mark.parametrize(
    "arguments",
    [
        ["agent.py", "-I"],  # the program's own arguments
        ["-c", "import sys; print(sys.argv)", "-E"],
        ["-m", "pytest", "-S"],
        ["-u", "-X", "importtime", "-"],
        ["-s", "-B", "agent.py"],
        ["-XI", "agent.py"],  # -X's value, not -I
    ],
)
def test_other_flags_and_the_program_s_own_arguments_pass(arguments: list[str]) -> None:
    check_command([sys.executable, *arguments], ENV)


def test_the_python_of_a_script_is_read_from_its_shebang(tmp_path: Path) -> None:
    direct = script(tmp_path, f"#!{sys.executable} -I")
    with pytest.raises(ExecSetupError, match=r"-I .*in the #! line of .*tool"):
        check_command([str(direct)], ENV)
    python_folder = os.path.dirname(sys.executable)
    env = {"PATH": f"{python_folder}{os.pathsep}{ENV['PATH']}"}
    name = os.path.basename(sys.executable)
    split = script(tmp_path, f"#!/usr/bin/env -S {name} -E", name="split")
    with pytest.raises(ExecSetupError, match=r"-E .*in the #! line"):
        check_command([str(split)], env)
    found = python_of(str(script(tmp_path, f"#!/usr/bin/env {name}", "plain")), [], env)
    assert found is not None
    assert found.options == ()
    assert python_of(str(script(tmp_path, "#!/bin/sh", "shell")), ["-I"], env) is None
    binary = tmp_path / "binary"
    binary.write_bytes(b"\x7fELF\x00")
    assert python_of(str(binary), [], env) is None


def test_an_interpreter_that_cannot_import_openprogram_is_refused(tmp_path: Path) -> None:
    # A real Python, started so that it sees neither PYTHONPATH nor site-packages.
    fake = tmp_path / "python3"
    fake.write_text(f'#!/bin/sh\nexec {sys.executable} -E -S "$@"\n')
    fake.chmod(0o755)
    with pytest.raises(ExecSetupError, match=r"python3 .*cannot import openprogram"):
        check_command([str(fake), "agent.py"], {**ENV, "PYTHONPATH": ""})


def test_a_command_that_cannot_be_found_is_refused_before_anything_runs() -> None:
    with pytest.raises(ExecSetupError, match="no-such-program: command not found"):
        check_command(["no-such-program"], ENV)
    with pytest.raises(ExecSetupError, match="command not found"):
        check_command(["./missing.py"], ENV)
