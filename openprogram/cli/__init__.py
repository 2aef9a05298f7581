"""The ``openprogram`` command line: a thin typer app over the library.

    app         the typer app, its options, the help and ``--version``
    output      how every command prints: errors in one line, confirmations, tables, JSON
    run         ``openprogram run``: one agent session on the configured model
    exec        ``openprogram exec -- COMMAND``: a command run with record/replay active
    recording_sources  ``--seed``, ``--clock-start``, ``--clock-step``: the sources a
                recording draws the clock and randomness from (``exec``, ``record``)
    serve       ``openprogram serve``: the recording proxy for programs in any language
    demo        ``openprogram demo``: the offline record → replay → verify round trip
    recordings  ``openprogram recordings …``: one module per command

Heavy imports happen inside commands, so ``openprogram --help`` starts fast and never
imports a provider or httpx.
"""

from __future__ import annotations

from openprogram.cli.app import app, main

__all__ = ["app", "main"]
