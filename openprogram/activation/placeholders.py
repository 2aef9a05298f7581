"""Placeholder API keys under replay, so that SDK clients build without a real key.

The official SDKs refuse to build a client (openai) or to send a request (anthropic) when
their key variable is unset, although replay never sends anything. Under replay, openprogram
therefore sets ``OPENAI_API_KEY`` and ``ANTHROPIC_API_KEY`` to :data:`PLACEHOLDER_API_KEY`
when they are unset (``openprogram exec``, ``record_replay()``, and the pytest plugin when it
only replays).

The placeholder is a known secret like any key: the variables' names end in ``API_KEY``, so
their values are removed from everything written, compared or shown (see
:mod:`openprogram.recording.redaction`). It never reaches a recording, and a request that
carries it compares equal to one recorded with a real key.
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping

__all__ = [
    "PLACEHOLDER_API_KEY",
    "PLACEHOLDER_KEY_VARIABLES",
    "hide_placeholder_keys",
    "set_placeholder_keys",
]

PLACEHOLDER_API_KEY = "openprogram-replay-placeholder-key"
"""The value the key variables get under replay when they are unset."""

PLACEHOLDER_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""The variables the official SDKs read their keys from."""


def set_placeholder_keys(
    environ: MutableMapping[str, str] | None = None,
) -> Callable[[], None]:
    """Set each key variable that is unset or empty in ``environ`` (default
    :data:`os.environ`) to the placeholder; returns the function that puts back exactly
    those (unless something else changed them meanwhile)."""
    target = os.environ if environ is None else environ
    placed = {name: target.get(name) for name in PLACEHOLDER_KEY_VARIABLES if not target.get(name)}
    for name in placed:
        target[name] = PLACEHOLDER_API_KEY

    def restore() -> None:
        for name, previous in placed.items():
            if target.get(name) != PLACEHOLDER_API_KEY:
                continue
            if previous is None:
                del target[name]
            else:
                target[name] = previous

    return restore


def hide_placeholder_keys(
    environ: MutableMapping[str, str] | None = None,
) -> Callable[[], None]:
    """Unset each key variable that holds the placeholder (a live call must not send it);
    returns the function that sets back exactly those (unless something set them
    meanwhile). What the pytest plugin does for a test that calls live in a run that
    otherwise only replays."""
    target = os.environ if environ is None else environ
    hidden = [name for name in PLACEHOLDER_KEY_VARIABLES if target.get(name) == PLACEHOLDER_API_KEY]
    for name in hidden:
        del target[name]

    def restore() -> None:
        for name in hidden:
            if name not in target:
                target[name] = PLACEHOLDER_API_KEY

    return restore
