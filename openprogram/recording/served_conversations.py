"""What replay remembers of the requests it served, so that a conversation is walked once.

Every request of an agent session repeats the conversation so far. Replay redacts, digests
and compares each incoming request; done whole each time, a session of N calls would cost
N² in the conversation's size. :class:`ServedConversations` remembers, for the latest
requests served, the JSON text of their shared lists (``context.messages``, an HTTP body's
``messages``, … : :func:`~openprogram.recording.request_delta.shared_lists`) and the recorded
call each was served — found equal to it under the comparison rules.

A new request whose shared list *extends* a remembered request's (its JSON text, unredacted,
starts with all of that list's items: the exact text, so ``1`` never passes for ``true``),
under the same redaction rules, holds those items as the served call holds them, up to
what the rules leave out. So only its new items are redacted, and its list is built as the
served call's recorded items followed by the new items, redacted. The recorded items are the
same objects as in the recorded calls the reader rebuilt, so the digest and the comparison
that follow pass over them by identity: the cost of a call is the cost of what it adds.

This holds under the rules the remembered request was compared with — the same ignored
fields, with no ignored field path (with paths, a list may be shorter and still equal) —
and only for a recording whose requests are compared as stored (redacted by the current
rules: :func:`~openprogram.recording.redaction_state.recorded_redaction_is_current`).
A request equal to no recorded call is compared again as a whole, redacted in full, so a
report says exactly what it said before.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import orjson

from openprogram.recording.format import RecordedCall
from openprogram.recording.request_delta import ListText, shared_lists, shared_section

__all__ = ["RECENT_SERVED", "ServedConversations"]

RECENT_SERVED = 16
"""How many served requests are remembered: one per conversation under way (concurrent
agents each extend their own). Each holds its lists' JSON text, so that a request is told
to extend it by comparing bytes."""


@dataclass(frozen=True, slots=True)
class _Served:
    boundary: str
    redaction: Hashable
    lists: dict[str, tuple[ListText, list[Any]]]
    """Each shared list: the incoming text, and the served call's recorded items."""


class ServedConversations:
    """The latest requests served at any boundary, under one set of comparison rules."""

    __slots__ = ("_recent",)

    def __init__(self) -> None:
        self._recent: deque[_Served] = deque(maxlen=RECENT_SERVED)

    def redacted(
        self,
        boundary: str,
        incoming: dict[str, Any],
        redact: Callable[[dict[str, Any]], dict[str, Any]],
        redaction: Hashable,
    ) -> tuple[dict[str, Any], dict[str, tuple[bytes, int]], dict[str, list[Any]]]:
        """``incoming`` redacted, its shared lists built from a served call's items where
        they repeat a served request's; the JSON text and length of each of its shared
        lists, for :meth:`remember`; and the recorded list each built list starts with."""
        texts: dict[str, tuple[bytes, int]] = {}
        for key, items in shared_lists(boundary, incoming):
            try:
                texts[key] = (orjson.dumps(items), len(items))
            except TypeError:
                continue
        best: _Served | None = None
        best_kept: dict[str, int] = {}
        best_items = 0
        for served in reversed(tuple(self._recent)):  # a snapshot: other threads take too
            if served.boundary != boundary or served.redaction != redaction:
                continue
            if sum(len(items) for _, items in served.lists.values()) <= best_items:
                continue
            kept = {
                key: len(items)
                for key, (text, items) in served.lists.items()
                if items and key in texts and text.extended_by(texts[key][0])
            }
            total = sum(kept.values())
            if total > best_items:
                best, best_kept, best_items = served, kept, total
        if best is None:
            return redact(incoming), texts, {}
        section = shared_section(boundary)
        holder = dict(incoming[section])
        for key, count in best_kept.items():
            holder[key] = holder[key][count:]
        redacted = redact({**incoming, section: holder})
        redacted_holder = redacted.get(section)
        if type(redacted_holder) is not dict or any(
            type(redacted_holder.get(key)) is not list for key in best_kept
        ):
            return redact(incoming), texts, {}  # redaction renamed a list's key
        whole = dict(redacted_holder)
        starts: dict[str, list[Any]] = {}
        for key in best_kept:
            starts[key] = best.lists[key][1]
            whole[key] = starts[key] + redacted_holder[key]
        return {**redacted, section: whole}, texts, starts

    def remember(
        self,
        boundary: str,
        redaction: Hashable,
        texts: dict[str, tuple[bytes, int]],
        call: RecordedCall,
    ) -> None:
        """A request (its shared lists' ``texts`` from :meth:`redacted`) was served
        ``call``, equal to it."""
        holder = call.request.get(shared_section(boundary))
        if type(holder) is not dict:
            return
        lists: dict[str, tuple[ListText, list[Any]]] = {}
        for key, (text, count) in texts.items():
            items = holder.get(key)
            if type(items) is list and len(items) == count:
                lists[key] = (ListText.of(text, keep=True), items)
        if lists:
            self._recent.append(_Served(boundary, redaction, lists))
