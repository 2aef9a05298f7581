"""The root ``openprogram`` app; command groups attach to it."""

from __future__ import annotations

import typer

from openprogram import __version__

app = typer.Typer(
    name="openprogram",
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
    from openprogram.cli.recordings_app import recordings_app

    app.add_typer(recordings_app, name="recordings")


_add_groups()


def main() -> None:
    """The console-script entry point."""
    app()
