"""How a count is written in a message: ``1 call``, ``2 calls``, ``0 calls``."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """``count`` and ``noun``, with an ``s`` unless the count is one: ``1 call``, ``2 calls``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
