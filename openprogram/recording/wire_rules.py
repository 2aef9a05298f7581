"""What the core must know of the model APIs' wire, handed down to it as data.

The core's own rules are generic: names like a credential's (``authorization``, ``api_key``,
``token``, …), bearer tokens, key shapes of no one vendor (GitHub, AWS, Slack, JWTs, PEM),
ids under keys named ``id``, ``…_id``, ``…Id``. What only one API's wire holds — its key
header (``x-api-key``), its keys' shape (``AIza…``), its conversation keys, the tokens its
server signs, its per-run fields — is stated by that API's module in
:mod:`openprogram.vendors` as a :class:`WireRules`; the core never imports that package.

**Handed down once, for the process.** Every path that writes a recording (the boundaries,
``serve``, ``exec``, the configured mode, the pytest plugin, an import, a rewrite) must redact by
the same rules, and a rule passed to each writer could be forgotten on one path. So the core asks
openprogram's package (``openprogram/__init__.py``, which every import of any part of openprogram
runs first) for them when it first needs them, and keeps them; a test may hand down others
(:func:`hand_down`). The core has no default of its own: :func:`wire_rules` raises when there is no
supplier, so no path can redact or compare with fewer rules without failing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from functools import cache, update_wrapper
from typing import Any, TypeVar

import openprogram

__all__ = ["KeyShape", "WireRules", "derived", "hand_down", "wire_rules"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class KeyShape:
    """The shape of one vendor's keys, found in any text and replaced whole."""

    kind: str
    """What ``recordings scan`` calls a finding of it (``google-api-key``)."""
    pattern: str
    """A regular expression matching one key; a match must start a token (not right after a
    letter or digit)."""
    hints: tuple[str, ...]
    """Substrings one of which every match holds (its fixed prefix)."""
    before: str
    """The kind of the core's shape it is applied before (where a text could match both, the
    first one applied names the finding)."""


@dataclass(frozen=True, slots=True)
class WireRules:
    """The facts of the model APIs' wire the core applies: one API's, or all of them merged
    (``|``). Every field adds to the core's own generic rules."""

    credential_names: frozenset[str] = frozenset()
    """Headers, configuration fields and URL query parameters whose value is a credential
    (compared ignoring case, ``-`` and ``_``): the API's key header."""
    credential_query_words: frozenset[str] = frozenset()
    """URL query parameters named with an ordinary word whose value, 8 characters or more,
    is a credential (a key passed as ``?key=…``)."""
    key_shapes: tuple[KeyShape, ...] = ()
    conversation_keys: frozenset[str] = frozenset()
    """The top-level keys of a JSON request body that hold the conversation (what the user,
    the model and the tools said): redacted by value only, never by field name."""
    compared_response_headers: frozenset[str] = frozenset()
    """Response headers that change what the API's clients do (retry or not): compared."""
    signature_keys: frozenset[str] = frozenset()
    """Keys of the opaque tokens the server signs anew each run and the session sends back:
    compared up to consistent renaming, as ids are."""
    per_run_fields: frozenset[str] = frozenset()
    """Fields of a response object that say when and by which build this run's instance of
    it was made, left out of every comparison."""
    per_run_objects: tuple[str, ...] = ()
    """Top-level objects of a response body or event whose :attr:`per_run_fields` are left
    out too."""
    per_run_timings: tuple[tuple[str, str], ...] = ()
    """(object, field): how long this run took, in a top-level object of a response."""
    per_run_padding: frozenset[str] = frozenset()
    """Fields of random content an event-stream payload is padded with."""

    def __or__(self, other: WireRules) -> WireRules:
        """Both rules: sets joined, tuples concatenated without repeats."""
        merged: dict[str, Any] = {}
        for field in fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            merged[field.name] = (
                mine | theirs
                if isinstance(mine, frozenset)
                else tuple(dict.fromkeys(mine + theirs))
            )
        return WireRules(**merged)


def _from_the_package() -> WireRules:
    """Every vendor API's rules, as openprogram's package gives them."""
    rules = openprogram._vendor_wire_rules()
    if not isinstance(rules, WireRules):
        raise TypeError(f"openprogram's package gave the core {type(rules).__name__}, not rules")
    return rules


_supplier: Callable[[], WireRules] | None = _from_the_package
_DERIVED: list[Any] = []
"""What :func:`derived` prepared from the rules in force: forgotten when others are handed down."""


def hand_down(supplier: Callable[[], WireRules]) -> None:
    """Make ``supplier`` what the core asks for its wire rules, the next time it needs them
    (the package's own, every vendor API's, until then)."""
    global _supplier
    _supplier = supplier
    for prepared in (wire_rules, *_DERIVED):
        prepared.cache_clear()


@cache
def wire_rules() -> WireRules:
    """The wire rules in force (the package's, or those :func:`hand_down` gave). Raises
    ``RuntimeError`` without a supplier: the core never redacts or compares with fewer rules
    than openprogram knows."""
    if _supplier is None:
        raise RuntimeError(
            "no wire rules were handed down to the recording core: openprogram's package "
            "hands down every vendor API's as it is imported (openprogram/__init__.py)"
        )
    return _supplier()


def derived(compute: Callable[[WireRules], T]) -> Callable[[], T]:
    """``compute`` of the rules in force, computed once for them (again if others are
    handed down): a decorator for what the core prepares from the rules. Once computed, a
    call is answered by :func:`functools.cache` alone, with no Python frame of its own."""
    current = cache(lambda: compute(wire_rules()))
    update_wrapper(current, compute)
    _DERIVED.append(current)
    return current
