"""The root ``openprogram`` app; command groups attach to it.

Usage errors (an unknown option, a malformed value) leave like every other error: one line
on stderr and exit 2, instead of click's boxed panel.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from openprogram import __version__


class OneLineErrorsGroup(TyperGroup):
    """A command group whose usage errors are one ``error:`` line (exit 2)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(
                args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra
            )
        try:
            result = super().main(
                args, prog_name, complete_var, False, windows_expand_args, **extra
            )
        except typer.Abort:
            sys.stderr.write("error: aborted\n")
            sys.exit(1)
        except Exception as error:
            message = getattr(error, "format_message", None)
            code = getattr(error, "exit_code", None)
            if message is None or not isinstance(code, int):
                raise
            if type(error).__name__ == "NoArgsIsHelpError":
                sys.stdout.write(message() + "\n")  # no arguments: show the help
            else:
                one_line = " ".join(str(message()).split())
                sys.stderr.write(f"error: {one_line} (see --help)\n")
            sys.exit(code)
        sys.exit(result if isinstance(result, int) else 0)


app = typer.Typer(
    name="openprogram",
    cls=OneLineErrorsGroup,
    help="Record LLM agent sessions at the provider boundary and replay them offline.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"openprogram {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Show the version and exit.",
        callback=_show_version,
        is_eager=True,
    ),
) -> None:
    """Record LLM agent sessions at the provider boundary and replay them offline."""


def _add_groups() -> None:
    from openprogram.cli import demo, run
    from openprogram.cli.recordings_app import recordings_app

    run.register(app)
    demo.register(app)
    app.add_typer(recordings_app, name="recordings")


_add_groups()


def main() -> None:
    """The console-script entry point."""
    app(prog_name="openprogram")
