"""``openprogram recordings …``: manage recordings and switch record/replay.

These commands call file and config functions directly: they never start the provider
runtime, never import a vendor provider or httpx, and work while the configured recording
or the config itself is broken. One module per command; each is thin over the library.
"""

from __future__ import annotations

import typer

from openprogram.cli.recordings import (
    delete as delete,
    listing as listing,
    off as off,
    prune as prune,
    record as record,
    replay as replay,
    show as show,
    status as status,
)

recordings_app = typer.Typer(
    name="recordings",
    help="Record, replay and manage recordings (changes take effect at the next start).",
    no_args_is_help=True,
)
for module in (status, record, replay, off, listing, show, delete, prune):
    module.register(recordings_app)
