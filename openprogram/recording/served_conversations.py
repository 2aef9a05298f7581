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
rules: :func:`~openprogram.recording.redaction.recorded_redaction_is_current`).
A request equal to no recorded call is compared again as a whole, redacted in full, so a
report says exactly what it said before.

A boundary whose requests are models may hand :meth:`ServedConversations.redacted` a
:class:`DumpableRequest` instead of the dumped dict: the JSON text of its lists' *state*
comes first (the models' fields, walked by orjson, which costs a fraction of a dump), and
the request is dumped only without the items a served request's lists repeat. A change made
in place to an earlier item (a message edited after it was sent) changes that text, so the
request is then dumped and compared whole. State texts are only ever compared with state
texts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from openprogram.recording.format import RecordedCall
from openprogram.recording.request_delta import ListText, shared_lists, shared_section

__all__ = ["RECENT_SERVED", "DumpableRequest", "ServedConversations", "dumped"]

RECENT_SERVED = 16
"""How many served requests are remembered: one per conversation under way (concurrent
agents each extend their own). Each holds its lists' JSON text, so that a request is told
to extend it by comparing bytes."""


class DumpableRequest(Protocol):
    """A request not dumped yet: the JSON text of its shared lists' state first, then its
    sections (as :func:`~openprogram.recording.request_delta.shared_lists` would see them in
    :meth:`whole`), whole or without the first items of some lists."""

    def list_texts(self) -> dict[str, tuple[bytes, int]] | None:
        """Each shared list's state as JSON text, and its length; None when some item's
        state has no such text (then the request is handled as its dump)."""
        ...

    def whole(self) -> dict[str, Any]:
        """The request's sections, dumped: what the boundary would otherwise have passed."""
        ...

    def without_first(self, counts: dict[str, int]) -> dict[str, Any]:
        """:meth:`whole` with the first ``counts[key]`` items of each list ``key`` of the
        shared section left out, dumped without them."""
        ...


def dumped(request: dict[str, Any] | DumpableRequest) -> dict[str, Any]:
    """``request``'s sections as a dict."""
    return request if isinstance(request, dict) else request.whole()


@dataclass(frozen=True, slots=True)
class _Served:
    boundary: str
    redaction: Hashable
    lists: dict[str, tuple[ListText, list[Any]]]
    """Each shared list: the incoming text, and the served call's recorded items."""
    of_state: bool
    """Whether the texts are of a :class:`DumpableRequest`'s state, not of a dump."""


@dataclass(frozen=True, slots=True)
class _Texts:
    """A request's shared lists' JSON texts and lengths, by key, and what they are of."""

    lists: dict[str, tuple[bytes, int]]
    of_state: bool


class ServedConversations:
    """The latest requests served at any boundary, under one set of comparison rules."""

    __slots__ = ("_recent",)

    def __init__(self) -> None:
        self._recent: deque[_Served] = deque(maxlen=RECENT_SERVED)

    def redacted(
        self,
        boundary: str,
        incoming: dict[str, Any] | DumpableRequest,
        redact: Callable[[dict[str, Any]], dict[str, Any]],
        redaction: Hashable,
    ) -> tuple[dict[str, Any], _Texts, dict[str, list[Any]]]:
        """``incoming`` redacted, its shared lists built from a served call's items where
        they repeat a served request's; the JSON text and length of each of its shared
        lists, for :meth:`remember`; and the recorded list each built list starts with."""
        texts = None if isinstance(incoming, dict) else incoming.list_texts()
        of_state = texts is not None
        if texts is None:
            incoming = dumped(incoming)
            texts = {}
            for key, items in shared_lists(boundary, incoming):
                try:
                    texts[key] = (orjson.dumps(items), len(items))
                except TypeError:
                    continue
        best: _Served | None = None
        best_kept: dict[str, int] = {}
        best_items = 0
        for served in reversed(tuple(self._recent)):  # a snapshot: other threads take too
            if (
                served.boundary != boundary
                or served.redaction != redaction
                or served.of_state != of_state
            ):
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
            return redact(dumped(incoming)), _Texts(texts, of_state), {}
        section = shared_section(boundary)
        if isinstance(incoming, dict):
            holder = dict(incoming[section])
            for key, count in best_kept.items():
                holder[key] = holder[key][count:]
            redacted = redact({**incoming, section: holder})
        else:
            redacted = redact(incoming.without_first(best_kept))
        redacted_holder = redacted.get(section)
        if type(redacted_holder) is not dict or any(
            type(redacted_holder.get(key)) is not list for key in best_kept
        ):
            # redaction renamed a list's key
            return redact(dumped(incoming)), _Texts(texts, of_state), {}
        whole = dict(redacted_holder)
        starts: dict[str, list[Any]] = {}
        for key in best_kept:
            starts[key] = best.lists[key][1]
            whole[key] = starts[key] + redacted_holder[key]
        return {**redacted, section: whole}, _Texts(texts, of_state), starts

    def remember(
        self,
        boundary: str,
        redaction: Hashable,
        texts: _Texts,
        call: RecordedCall,
    ) -> None:
        """A request (its shared lists' ``texts`` from :meth:`redacted`) was served
        ``call``, equal to it."""
        holder = call.request.get(shared_section(boundary))
        if type(holder) is not dict:
            return
        lists: dict[str, tuple[ListText, list[Any]]] = {}
        for key, (text, count) in texts.lists.items():
            items = holder.get(key)
            if type(items) is list and len(items) == count:
                lists[key] = (ListText.of(text, keep=True), items)
        if lists:
            self._recent.append(_Served(boundary, redaction, lists, texts.of_state))
