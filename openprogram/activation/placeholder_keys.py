"""The placeholder API keys: what replay sets where a vendor's SDK finds no key.

The official SDKs refuse to build a client (openai) or to send a request (anthropic) when
their key variable is unset, although replay never sends anything. Under replay, openprogram
therefore sets each vendor's key variables to :data:`PLACEHOLDER_API_KEY` where they are
all unset (:func:`set_placeholder_keys`: ``openprogram exec --replay``, the configured replay
mode, ``record_replay()``, ``openprogram serve --replay`` and the pytest plugin when it only
replays — the one definition all of them use).

The placeholder is a known secret like any key: the variables' names end in ``API_KEY``, so
their values are removed from everything written, compared or shown (see
:mod:`openprogram.recording.redaction`). It never reaches a recording, and a request that
carries it compares equal to one recorded with a real key.

Each vendor's variables are its :class:`~openprogram.vendors.wire.Wire`'s, read when the keys
are first set or hidden: a process of the configured mode that records starts without them."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, MutableMapping

__all__ = [
    "PLACEHOLDER_API_KEY",
    "hide_placeholder_keys",
    "placeholder_key_variables",
    "placeholder_keys",
    "set_placeholder_keys",
]


PLACEHOLDER_API_KEY = "openprogram-replay-placeholder-key"
"""The value the key variables get under replay when they are unset."""


@functools.cache
def placeholder_keys() -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    """For each client the variables it reads its key from, and those set to the placeholder
    when all of them are unset: the official OpenAI and Anthropic SDKs', google-genai's (it
    prefers ``GOOGLE_API_KEY`` and warns when both are set, so only ``GEMINI_API_KEY`` is set),
    and botocore's (keys to sign with, so that a replay never looks for credentials on a
    metadata server)."""
    from openprogram.vendors import VENDOR_WIRES

    return tuple(
        (wire.placeholder_if_unset, wire.placeholder_variables)
        for wire in VENDOR_WIRES
        if wire.placeholder_variables
    )


@functools.cache
def placeholder_key_variables() -> tuple[str, ...]:
    """The variables replay may set to the placeholder."""
    return tuple(dict.fromkeys(name for _, placed in placeholder_keys() for name in placed))


def set_placeholder_keys(environ: MutableMapping[str, str] | None = None) -> Callable[[], None]:
    """Set the key variables of each client whose variables are all unset or empty in ``environ``
    (default :data:`os.environ`) to the placeholder (:func:`placeholder_keys`); returns the function
    that puts back exactly those (unless something else changed them meanwhile)."""
    target = os.environ if environ is None else environ
    placed: dict[str, str | None] = {}
    for read, to_set in placeholder_keys():
        if not any(target.get(name) for name in read):
            placed.update({name: target.get(name) for name in to_set})
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


def hide_placeholder_keys(environ: MutableMapping[str, str] | None = None) -> Callable[[], None]:
    """Unset each key variable that holds the placeholder (a live call must not send it); returns
    the function that sets back exactly those (unless something set them meanwhile). What the pytest
    plugin does for a test that calls live in a run that otherwise only replays."""
    target = os.environ if environ is None else environ
    variables = placeholder_key_variables()
    hidden = [name for name in variables if target.get(name) == PLACEHOLDER_API_KEY]
    for name in hidden:
        del target[name]

    def restore() -> None:
        for name in hidden:
            if name not in target:
                target[name] = PLACEHOLDER_API_KEY

    return restore
