"""The tokens a recorded call's usage counts, as the provider or the vendor reported them.

A provider call's usage is the one in its ``done`` event's message (``input`` / ``output``);
an HTTP call's is the one the vendor's response reported, read by
:func:`~openprogram.store.http_views.http_call_parts` (``prompt_tokens`` /
``completion_tokens`` for OpenAI, ``input_tokens`` / ``output_tokens`` for OpenAI Responses
and Anthropic). Reads event rows as stored: no provider event model is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from openprogram.store.http_views import http_call_parts

if TYPE_CHECKING:
    from openprogram.recording.format import RecordedCall

__all__ = ["INPUT_COUNTS", "OUTPUT_COUNTS", "call_tokens", "usage_tokens"]

INPUT_COUNTS = ("input", "prompt_tokens", "input_tokens")
OUTPUT_COUNTS = ("output", "completion_tokens", "output_tokens")


def usage_tokens(usage: dict[str, Any] | None) -> tuple[int, int] | None:
    """Tokens in and out of a usage object, by whichever names it uses; None without one."""
    if not usage:
        return None
    counts = []
    for names in (INPUT_COUNTS, OUTPUT_COUNTS):
        found = (usage.get(name) for name in names)
        counts.append(next((value for value in found if type(value) is int), 0))
    return counts[0], counts[1]


def call_tokens(call: RecordedCall) -> int | None:
    """The tokens (in and out) ``call``'s recorded usage counts; None when it has none."""
    if call.boundary == "http":
        tokens = usage_tokens(http_call_parts(call)[1].usage)
    else:
        tokens = usage_tokens(_done_usage(call.event_rows))
    return None if tokens is None else tokens[0] + tokens[1]


def _done_usage(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    for row in reversed(rows):
        if row.get("type") == "done":
            message = row.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            return usage if isinstance(usage, dict) else None
    return None
