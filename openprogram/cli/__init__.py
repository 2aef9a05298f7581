"""The ``openprogram`` command line: a thin typer app over the library.

Heavy imports happen inside commands, so ``openprogram --help`` starts fast and never
imports a provider or httpx.
"""

from __future__ import annotations

from openprogram.cli.app import app, main

__all__ = ["app", "main"]
