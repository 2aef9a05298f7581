"""A line the CLI writes to a pipe is what the console would write, without the console."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.text import Text

from openprogram.cli import output


class Pipe(io.StringIO):
    def isatty(self) -> bool:
        return False


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


PARTS: list[tuple[str | tuple[str, str], ...]] = [
    (("mode:    ", "bold"), "replay"),
    ("plain [secret removed] messages[2]",),
    (("error:", "red"), " ", "a\tb\tcc\x1b[31m \u202e end"),
    ("two\tcolumns\nnext\tline",),
]


def rich_writes(parts: tuple[str | tuple[str, str], ...]) -> str:
    buffer = Pipe()
    console = Console(file=buffer, highlight=False, soft_wrap=True, force_terminal=False)
    console.print(
        Text.assemble(
            *(
                output.visible(part)
                if isinstance(part, str)
                else (output.visible(part[0]), part[1])
                for part in parts
            )
        )
    )
    return buffer.getvalue()


@pytest.mark.parametrize("parts", PARTS)
def test_a_line_to_a_pipe_is_what_the_console_writes(
    parts: tuple[str | tuple[str, str], ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE"):
        monkeypatch.delenv(name, raising=False)
    pipe = Pipe()
    monkeypatch.setattr("sys.stdout", pipe)

    output.say(*parts)

    assert pipe.getvalue() == rich_writes(parts)


@pytest.mark.parametrize("variable", ["FORCE_COLOR", "TTY_COMPATIBLE"])
def test_styles_asked_for_on_a_pipe_are_written(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "1")
    monkeypatch.delenv("NO_COLOR", raising=False)
    pipe = Pipe()
    monkeypatch.setattr("sys.stderr", pipe)

    output.complain("it broke")

    assert "\x1b[" in pipe.getvalue()
    assert "it broke" in pipe.getvalue()


def test_a_terminal_gets_the_styles(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)

    output.say(("mode:", "bold"), " off")

    assert terminal.getvalue() == "\x1b[1mmode:\x1b[0m off\n"
