"""``python -m openprogram`` — the same as the ``openprogram`` command."""

from __future__ import annotations

from openprogram.cli.app import main

main()
