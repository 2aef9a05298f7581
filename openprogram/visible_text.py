"""Untrusted text shown as text: every character a terminal or a browser would act on,
instead of showing it, written as its escape.

A recording, a file name or a model's reply may hold C0 and C1 control characters (NUL, ESC, BEL),
DEL, and the Unicode marks that reorder or separate lines (bidi overrides and isolates,
U+2028/U+2029). Shown raw, they clear a screen, hide text, retitle a window, or make a reviewer read
``txt.exe`` for ``exe.txt``. :func:`visible` writes each as its escape, ``\\x1b``, ``\\u202e``; the
terminal (:mod:`openprogram.cli.output`), the review pages (:mod:`openprogram.store.html_pages`) and
the test run's Markdown summary (:mod:`openprogram.testing.suite_pages`) all show text through it,
so the set is defined here once. The module imports nothing."""

from __future__ import annotations

import re
from typing import Final

__all__ = ["INVISIBLE_CHARACTERS", "visible"]

INVISIBLE_CHARACTERS: Final = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
)
"""The characters shown as their escapes (a regular expression's character class body): C0
and C1 controls but tab and newline, DEL, the Arabic letter mark, the left-to-right and
right-to-left marks, the line and paragraph separators, the bidi embeddings and overrides
(U+202A–U+202E) and isolates (U+2066–U+2069)."""

_CONTROLS = re.compile(f"[{INVISIBLE_CHARACTERS}]")

_CONTROLS_AND_BREAKS = re.compile(f"[\t\n{INVISIBLE_CHARACTERS}]")


def visible(text: str, *, keep_lines: bool = True) -> str:
    """``text`` with every invisible character (:data:`INVISIBLE_CHARACTERS`) written as its
    escape, ``\\x1b``, ``\\u202e``. Tabs and newlines stay unless ``keep_lines`` is false
    (then ``\\t``, ``\\n``)."""
    pattern = _CONTROLS if keep_lines else _CONTROLS_AND_BREAKS
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code == 0x09:
        return "\\t"
    if code == 0x0A:
        return "\\n"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
