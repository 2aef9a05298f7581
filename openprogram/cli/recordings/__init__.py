"""``openprogram recordings …``: manage recordings and switch record/replay.

These commands call file and config functions directly: they never start the provider
runtime, never import a vendor provider or httpx, and work while the configured recording
or the config itself is broken. Each is thin over the library.

    listing      ``list``: the store's recordings, the active one marked
    list_layout  the table ``list`` prints, fitted to the terminal
    show         ``show``: one recording's calls, replies and tapes
    scan         ``scan``: credentials a recording may still hold
    diff         ``diff``: the first difference between two recordings
    verify       ``verify``: re-run a recorded session under replay
    drift        ``drift``: re-send recorded calls live, and how the answers drifted
    importing    ``import``: vcrpy cassettes made into recordings
    delete       ``delete``: remove recordings, never the active one
    prune        ``prune``: remove old recordings
    status       ``status``: what is configured, and whether the next start would work
    switch       ``record``, ``replay``, ``off``: switch the configured mode"""

from __future__ import annotations

import typer

from openprogram.cli.recordings import (
    delete,
    diff,
    drift,
    importing,
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
for module in (listing, show, delete, prune, diff, verify, drift, importing, scan):
    module.register(recordings_app)
