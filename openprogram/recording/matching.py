"""How replay pairs an incoming request with a recorded call: by content, or by order.

* ``content`` (the default): each request is served by the earliest unconsumed recorded
  call of its boundary whose request equals it under the comparison rules, whatever the
  order the calls arrive in — concurrent agents, parallel tool calls and batched
  evaluations replay although their calls interleave differently from run to run;
* ``order``: each request must equal the next recorded call, whatever its boundary (strict
  call-index replay).

This module imports nothing, so the plan and the configuration can check a matching name
without loading the replay machinery.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["DEFAULT_MATCHING", "MATCHINGS", "Matching", "check_matching"]

Matching = Literal["content", "order"]
MATCHINGS: tuple[Matching, ...] = ("content", "order")
DEFAULT_MATCHING: Matching = "content"


def check_matching(match: str | None) -> Matching:
    """``match`` if it names a matching (None: :data:`DEFAULT_MATCHING`); else ValueError."""
    if match is None:
        return DEFAULT_MATCHING
    if match == "content":
        return "content"
    if match == "order":
        return "order"
    raise ValueError(f"unknown matching {match!r}: replay matches calls by 'content' or 'order'")
