"""Destructive commands ask on a terminal, and need ``--yes`` anywhere else."""

from __future__ import annotations

import sys

import typer

from openprogram.cli.output import EXIT_FAILURE, EXIT_USAGE, abort


def confirm_or_abort(question: str, *, yes: bool) -> None:
    if yes:
        return
    if not sys.stdin.isatty():
        abort(f"{question.rstrip('?')}: not a terminal, so pass --yes to confirm", EXIT_USAGE)
    if not typer.confirm(question, default=False):
        abort("nothing was deleted", EXIT_FAILURE)
