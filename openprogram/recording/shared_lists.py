"""The lists a request shares with the requests before it, and what replay remembers of them.

Every request of an agent session repeats the conversation so far: a provider request's
``context.messages`` and ``context.tools``, an HTTP request body's ``messages``, ``input``,
``tools``, …, the list-valued entries of the request's *shared section*
(:func:`shared_section`, :func:`shared_lists`). Done whole each time, storing, redacting,
digesting and comparing the requests of a session of N calls would cost N² in the
conversation's size; done on what each request adds, it costs what the session says.

**A list is told to extend another by its JSON text.** :class:`ListText` keeps a list's text as what
the text of a list extending it must start with: all of its items, then a ``]`` or a ``,``. The
exact text, so ``1`` never passes for ``true``. The writer stores a request against the earlier one
whose lists it extends (:mod:`~openprogram.recording.request_delta`); replay does the same with the
requests it served.

**Replay remembers the requests it served** (:class:`ServedConversations`): for the latest
ones, the JSON text of their shared lists and the recorded call each was served, found
equal to it under the comparison rules. A new request whose shared list extends a
remembered request's (its text, unredacted), under the same redaction rules, holds those
items as the served call holds them, up to what the rules leave out. So only its new items
are redacted, and its list is built as the served call's recorded items followed by the new
items, redacted. The recorded items are the same objects as in the recorded calls the reader
rebuilt, so the digest and the comparison that follow pass over them by identity.

This holds under the rules the remembered request was compared with (the same ignored
fields, with no ignored field path: with paths, a list may be shorter and still equal), and
only for a recording whose requests are compared as stored (redacted by the current rules:
:func:`~openprogram.recording.redaction.recorded_redaction_is_current`). A request equal to
no recorded call is compared again as a whole, redacted in full, so a report says exactly
what it said before.

**A request not dumped yet.** A boundary whose requests are models may hand
:meth:`ServedConversations.redacted` a :class:`DumpableRequest` instead of the dumped dict: the JSON
text of its lists' *state* comes first (the models' fields, walked by orjson, which costs a fraction
of a dump), and the request is dumped only without the items a served request's lists repeat. A
change made in place to an earlier item (a message edited after it was sent) changes that text, so
the request is then dumped and compared whole. State texts are only ever compared with state texts.

The request replay pairs with a recorded call is redacted through them
(:class:`~openprogram.recording.content_matching.IncomingRequest`)."""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

__all__ = [
    "RECENT_SERVED",
    "DumpableRequest",
    "ListText",
    "ListTexts",
    "ServedConversations",
    "dumped",
    "shared_lists",
    "shared_section",
]


def shared_section(boundary: str) -> str:
    """The section whose list-valued entries a request of ``boundary`` may share."""
    return "body" if boundary == "http" else "context"


def shared_lists(boundary: str, request: dict[str, Any]) -> Iterator[tuple[str, list[Any]]]:
    """The entries of ``request``'s shared section that hold lists, by key."""
    holder = request.get(shared_section(boundary))
    if type(holder) is dict:
        for key, value in holder.items():
            if type(value) is list:
                yield key, value


_HEAD = 256
"""How many bytes of a list's text are kept as they are, to rule candidates out cheaply."""


@dataclass(frozen=True, slots=True)
class ListText:
    """A list's JSON text, kept as what the text of a list extending it must start with:
    the text itself (``keep``), or its size, its first bytes and a hash of the rest (a long
    conversation's text is then not held once per request remembered)."""

    size: int
    head: bytes
    digest: bytes
    text: bytes | None = None

    @classmethod
    def of(cls, text: bytes, *, keep: bool = False) -> ListText:
        if keep:
            return cls(len(text), b"", b"", text)
        return cls(len(text), text[: min(_HEAD, len(text) - 1)], _prefix_digest(text, len(text)))

    def extended_by(self, text: bytes) -> bool:
        """Whether ``text`` is the JSON text of a list holding this list's items first
        (all of them, then any more)."""
        size = self.size
        if len(text) < size:
            return False
        # "[a,b]" is extended by "[a,b]" and by "[a,b,c]": its text but the "]" comes
        # first, then a "]" or a ",".
        if text[size - 1] != (0x5D if len(text) == size else 0x2C):
            return False
        if self.text is not None:
            return text.startswith(memoryview(self.text)[: size - 1])
        if not text.startswith(self.head):
            return False
        return _prefix_digest(text, size) == self.digest


def _prefix_digest(text: bytes, size: int) -> bytes:
    return hashlib.sha256(memoryview(text)[: size - 1]).digest()


RECENT_SERVED = 16
"""How many served requests replay remembers: one per conversation under way (concurrent
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
class ListTexts:
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
    ) -> tuple[dict[str, Any], ListTexts, dict[str, list[Any]]]:
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
            return redact(dumped(incoming)), ListTexts(texts, of_state), {}
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
            return redact(dumped(incoming)), ListTexts(texts, of_state), {}
        whole = dict(redacted_holder)
        starts: dict[str, list[Any]] = {}
        for key in best_kept:
            starts[key] = best.lists[key][1]
            whole[key] = starts[key] + redacted_holder[key]
        return {**redacted, section: whole}, ListTexts(texts, of_state), starts

    def remember(
        self, boundary: str, redaction: Hashable, texts: ListTexts, recorded: dict[str, Any]
    ) -> None:
        """A request (its shared lists' ``texts`` from :meth:`redacted`) was served the call
        whose request is ``recorded``, equal to it."""
        holder = recorded.get(shared_section(boundary))
        if type(holder) is not dict:
            return
        lists: dict[str, tuple[ListText, list[Any]]] = {}
        for key, (text, count) in texts.lists.items():
            items = holder.get(key)
            if type(items) is list and len(items) == count:
                lists[key] = (ListText.of(text, keep=True), items)
        if lists:
            self._recent.append(_Served(boundary, redaction, lists, texts.of_state))
