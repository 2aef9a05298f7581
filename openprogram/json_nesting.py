"""The one nesting limit every reader of JSON-like data in openprogram agrees on.

Recordings, the configuration and ``OPENPROGRAM_…`` variables hold JSON-like values
(dicts, lists, scalars). The code that walks them (redaction, the first-difference walk, the
transcript hash, the ``show`` views, validation) recurses, so a value nested thousands of
levels deep would end in a ``RecursionError`` somewhere far from where it was read. Instead,
everything that reads such a value refuses it at the door when it is nested deeper than
:data:`MAX_NESTING_DEPTH`, with an error naming where it is; everything that writes one
refuses it the same way, so openprogram never writes what it would refuse to read.

Depth counts containers: ``1`` and ``"x"`` have depth 0, ``[]`` and ``{"a": 1}`` depth 1,
``{"a": [1]}`` depth 2. A recording's row counts from the row itself, so the limit leaves
ample room for real requests (whose deepest parts, tool schemas, rarely pass 20 levels)."""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "MAX_NESTING_DEPTH",
    "TOO_DEEP",
    "exceeds_nesting_limit",
    "json_text_may_exceed_nesting_limit",
    "nesting_depth",
]

MAX_NESTING_DEPTH: Final = 128
"""The deepest nesting of dicts and lists openprogram reads or writes."""
TOO_DEEP: Final = f"nested deeper than {MAX_NESTING_DEPTH} levels"
"""How a refusal says what is wrong with a value nested too deep."""


def json_text_may_exceed_nesting_limit(data: bytes | str, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether JSON (or TOML) text *could* nest deeper than ``limit``.

    A cheap, exact-when-false pre-check: nesting needs one ``[`` or ``{`` per level, so text
    holding ``limit`` of them or fewer cannot exceed it. Only text that fails this check
    needs :func:`exceeds_nesting_limit` on its parsed value."""
    if isinstance(data, str):
        return data.count("[") + data.count("{") > limit
    return data.count(b"[") + data.count(b"{") > limit


def nesting_depth(value: Any, *, stop_after: int | None = None) -> int:
    """How deeply ``value``'s dicts and lists (tuples count as lists) nest.

    Walks iteratively, so it never recurses itself. With ``stop_after``, the walk ends as
    soon as a depth above it is seen and returns that depth."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        depth += 1
        if depth > deepest:
            deepest = depth
            if stop_after is not None and deepest > stop_after:
                return deepest
        stack.extend((child, depth) for child in children if isinstance(child, dict | list | tuple))
    return deepest


def exceeds_nesting_limit(value: Any, limit: int = MAX_NESTING_DEPTH) -> bool:
    """Whether ``value`` nests deeper than ``limit``."""
    return nesting_depth(value, stop_after=limit) > limit
