"""How a count and a set of calls are written in every message: ``2 calls``, ``calls 0..3, 5``.

The words every command, error and report shares. The module imports nothing, so the CLI's
output helpers and :mod:`openprogram.errors` reach it without loading the report writer."""

from __future__ import annotations

from typing import Final

__all__ = ["plural", "which_calls"]

_SHOWN_RANGES: Final = 5
"""The runs of consecutive calls :func:`which_calls` names before ``…``."""


def which_calls(indexes: list[int], *, unit: tuple[str, str] = ("call", "calls")) -> str:
    """``call 3``, ``calls 1..2``, or, when calls were served out of order, the runs of
    consecutive indexes: ``calls 0, 2..3, 5`` (the first few, then ``…``)."""
    runs: list[tuple[int, int]] = []
    for index in indexes:
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    shown = [str(a) if a == b else f"{a}..{b}" for a, b in runs[:_SHOWN_RANGES]]
    more = ", …" if len(runs) > _SHOWN_RANGES else ""
    return f"{unit[0] if len(indexes) == 1 else unit[1]} {', '.join(shown)}{more}"


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an ``s`` unless the count is one: ``1 call``, ``2 calls``,
    ``0 calls``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
