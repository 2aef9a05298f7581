"""``openprogram recordings …``: manage recordings and switch record/replay.

These commands call file and config functions directly: they never start the provider
runtime, never import a vendor provider or httpx, and work while the configured recording
or the config itself is broken. One module per command (``switch`` holds the three that
switch the configured mode); each is thin over the library.
"""

from __future__ import annotations

import typer

from openprogram.cli.recordings import (
    delete,
    diff,
    listing,
    prune,
    scan,
    show,
    status,
    switch,
    verify,
)

recordings_app = typer.Typer(
    name="recordings",
    help="Record, replay and manage recordings (changes take effect at the next start).",
    no_args_is_help=True,
)
status.register(recordings_app)
switch.register(recordings_app)
for module in (listing, show, delete, prune, diff, verify, scan):
    module.register(recordings_app)
