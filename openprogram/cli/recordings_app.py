"""The ``openprogram recordings`` command group, one module per command."""

from __future__ import annotations

import typer

from openprogram.cli.recordings import (
    delete,
    diff,
    listing,
    off,
    prune,
    record,
    replay,
    scan,
    show,
    status,
    verify,
)

recordings_app = typer.Typer(
    name="recordings",
    help="Record, replay and manage recordings (changes take effect at the next start).",
    no_args_is_help=True,
)
for module in (status, record, replay, off, listing, show, delete, prune, diff, verify, scan):
    module.register(recordings_app)
