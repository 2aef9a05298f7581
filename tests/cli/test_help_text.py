"""``--help`` of every command: arguments in capitals, flags without a value placeholder."""

from __future__ import annotations

import pytest
import typer

from openprogram.cli.app import app
from tests.support.cli_runner import openprogram


def every_command_path() -> list[list[str]]:
    """The argv of every command and group of the app, the root included."""
    paths: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_run_help_shows_prompt_and_bare_flags() -> None:
    result = openprogram("run", "--help")

    assert result.exit_code == 0
    assert "Usage: openprogram run [OPTIONS] PROMPT" in result.stdout
    assert "<bool>" not in result.stdout
    assert "{" not in result.stdout
    for flag in ("--no-tools", "--json", "--help"):
        [line] = [line for line in result.stdout.splitlines() if f" {flag} " in line]
        words = line.strip("│ ").split()
        if flag == "--help":  # its short form comes with it: -h in every command
            assert words[1] == "-h"
            words = [words[0], *words[2:]]
        assert words[0] == flag
        assert words[1][0].isupper()  # the help text follows the flag directly


def test_recordings_list_help_shows_bare_flags() -> None:
    result = openprogram("recordings", "list", "--help")

    assert result.exit_code == 0
    assert "Usage: openprogram recordings list [OPTIONS]" in result.stdout
    assert "<bool>" not in result.stdout
    assert "{" not in result.stdout
    assert "--json" in result.stdout


def test_an_optional_argument_is_shown_in_brackets() -> None:
    result = openprogram("recordings", "record", "--help")

    assert "Usage: openprogram recordings record [OPTIONS] [NAME]" in result.stdout


@pytest.mark.parametrize("path", every_command_path(), ids=lambda path: " ".join(path) or "root")
def test_no_command_shows_braces_or_bool_placeholders(path: list[str]) -> None:
    result = openprogram(*path, "--help")

    assert result.exit_code == 0, result.stderr
    assert "<bool>" not in result.stdout
    assert "{" not in result.stdout


def test_a_missing_argument_is_named_as_in_the_usage_line() -> None:
    result = openprogram("run")

    assert result.exit_code == 2
    assert result.stderr == "error: Missing argument 'PROMPT'. (see --help)\n"


def test_help_paragraphs_are_wrapped_to_the_terminal_not_to_the_source_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A docstring's line breaks are the source file's; at 80 columns they left single words
    on lines of their own."""
    monkeypatch.setenv("COLUMNS", "80")
    result = openprogram("demo", "--help")
    assert result.exit_code == 0
    lines = [line.strip() for line in result.stdout.splitlines()]
    assert "your" not in lines
    assert any(line.startswith("your configuration and recordings store") for line in lines)


def test_scans_usage_names_its_paths_once() -> None:
    result = openprogram("recordings", "scan", "--help")

    assert result.exit_code == 0
    assert "Usage: openprogram recordings scan [OPTIONS] [PATH]..." in result.stdout
    assert "[[PATH]" not in result.stdout
