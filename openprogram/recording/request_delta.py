"""Requests stored against an earlier request: what is new, not what it repeats.

Every request of an agent session carries the whole conversation so far, so a recording that
stored each request whole would grow with the square of the session's length. A request row
may instead name a *base*, an earlier call of the same boundary, and store only the items its
lists add to the base's::

    {"type":"request","call_index":7,"base":{"call_index":6,"context":{"messages":13,"tools":2}},
     "model":{…},"context":{"system_prompt":…,"messages":[<items 13 and on>],"tools":[]},…}

reads as: ``context.messages`` is the first 13 items of call 6's ``context.messages`` (as rebuilt,
if call 6 has a base itself), then the items this row stores; ``context.tools`` is call 6's first 2
tools, then none. The lists that may be shared are the list-valued entries of a provider request's
``context`` and of an HTTP request's JSON ``body`` (an object): ``messages``, ``tools``, ``input``,
``contents``, …. The base is named by its ``call_index``, never "the previous row": calls made
concurrently interleave, and each shares its own conversation's earlier call.

A recording holding such rows announces :data:`DELTA_FEATURE` in its header, so an
openprogram that does not know the encoding refuses the file with the advice to upgrade
instead of reading the tails as whole lists.

This module holds the encoding's two halves: :func:`rebuild_request`, for the reader, and
:class:`RequestBases`, the earlier requests a writer stores the next ones against. Which
lists a request shares, and how a list is told to extend another by its JSON text, are
:mod:`~openprogram.recording.shared_lists`' (replay uses them too)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from openprogram.recording.shared_lists import ListText, shared_lists, shared_section

if TYPE_CHECKING:
    from openprogram.recording.redaction import RequestRedactor

__all__ = [
    "BASE_FIELD",
    "DELTA_FEATURE",
    "RECENT_BASES",
    "BaseProblem",
    "RequestBases",
    "StoredList",
    "StoredRequest",
    "rebuild_request",
]

DELTA_FEATURE = "request_deltas"
"""The header feature of a recording whose request rows may name a base."""
BASE_FIELD = "base"
"""The request row field naming the base and how many items of each list it keeps."""
RECENT_BASES = 32
"""How many of its latest requests a writer compares a new request with: enough for as many
concurrent conversations, and a bound on the cost of a call."""


class BaseProblem(ValueError):
    """Why a request row's ``base`` cannot be read; the message is the reader's problem."""


def rebuild_request(
    boundary: str,
    row_request: dict[str, Any],
    base: Any,
    base_of: Callable[[int], tuple[str, dict[str, Any]] | None],
    call_index: int,
) -> dict[str, Any]:
    """The whole request a row stores against ``base`` (the row's ``base`` field):
    ``row_request``'s sections with each kept list rebuilt as the base's first items and
    then the row's. The base's items are shared, not copied.

    ``base_of(index)`` gives an earlier call's boundary and whole request (None: no such
    call). Raises :class:`BaseProblem` for a base that cannot be read."""
    if type(base) is not dict:
        raise BaseProblem(f"base must be an object, found {base!r}")
    base_index = base.get("call_index")
    if type(base_index) is not int or not 0 <= base_index < call_index:
        raise BaseProblem(
            f"base call_index must be an earlier call (0 to {call_index - 1}), found {base_index!r}"
        )
    found = base_of(base_index)
    if found is None:
        raise BaseProblem(f"base call {base_index} has no request")
    base_boundary, base_request = found
    if base_boundary != boundary:
        raise BaseProblem(f"base call {base_index} is a call of another boundary")
    section = shared_section(boundary)
    for name in base:
        if name != "call_index" and name != section:
            raise BaseProblem(f"base field {name!r}: a {boundary} request shares only {section}")
    kept = base.get(section)
    if type(kept) is not dict or not kept:
        raise BaseProblem(f"base {section} must name the lists kept, found {kept!r}")
    holder = row_request.get(section)
    base_holder = base_request.get(section)
    if type(holder) is not dict or type(base_holder) is not dict:
        raise BaseProblem(f"base keeps lists of {section}, which must be an object on both sides")
    rebuilt = dict(holder)
    for key, count in kept.items():
        where = f"{section}.{key}"
        if type(count) is not int or count < 1:
            raise BaseProblem(f"base keeps {count!r} items of {where}: a whole number >= 1")
        tail = holder.get(key)
        if type(tail) is not list:
            raise BaseProblem(f"base keeps items of {where}, which must be a list in the row")
        start = base_holder.get(key)
        if type(start) is not list or len(start) < count:
            held = len(start) if type(start) is list else 0
            raise BaseProblem(
                f"base keeps {count} items of {where}, but call {base_index} holds {held}"
            )
        rebuilt[key] = start[:count] + tail if tail else start[:count]
    request = dict(row_request)
    request[section] = rebuilt
    return request


@dataclass(slots=True)
class StoredList:
    """One shared list of a stored request."""

    text: ListText
    """Its JSON text, unredacted: what a later request's list is compared with."""
    items: list[Any]
    """Its items as stored (redacted), whole."""
    parts: list[Any]
    """The deterministic part of each item (for the call's digest)."""


@dataclass(slots=True)
class StoredRequest:
    """A request as a writer stores it: its row's sections, its base, its shared lists."""

    boundary: str
    redaction: Hashable
    """What the request was redacted with: items are reused only under the same rules."""
    sections: dict[str, Any]
    """The redacted sections the row holds (kept lists cut to their new items)."""
    base: dict[str, Any] | None
    """The row's ``base`` field; None when the request is stored whole."""
    lists: dict[str, StoredList]
    """Its shared lists, whole."""
    call_index: int = -1
    """Set once the row is written (:meth:`RequestBases.remember`)."""

    def row_fields(self, within: str | None) -> dict[str, Any]:
        """The fields of its request row after ``type`` and ``call_index``: ``boundary``
        (none for the provider registry), ``base``, the sections, then ``within`` (the tape
        whose call was being recorded, if any)."""
        fields: dict[str, Any] = {} if self.boundary == "provider" else {"boundary": self.boundary}
        if self.base is not None:
            fields[BASE_FIELD] = self.base
        fields.update(self.sections)
        if within is not None:
            fields["within"] = within
        return fields


class RequestBases:
    """The latest requests one writer stored into one file, to store the next against.

    A new request is compared with each of them (its shared lists' JSON text, unredacted, against
    theirs): the one whose lists it extends the most is its base, and only the items after those are
    redacted and stored. The comparison is of the exact JSON text, so a ``1`` never passes for a
    ``true``; a list the new request does not extend whole (an edited history) is stored whole."""

    __slots__ = ("_recent",)

    def __init__(self) -> None:
        self._recent: deque[StoredRequest] = deque(maxlen=RECENT_BASES)

    def encode(
        self,
        boundary: str,
        sections: dict[str, Any],
        redact: RequestRedactor,
        redaction: Hashable,
        part_of: Callable[[Any], Any],
    ) -> StoredRequest:
        """``sections`` (unredacted) as a row stores them, against the best base.
        ``part_of`` gives the deterministic part of one redacted list item."""
        texts: dict[str, bytes] = {}
        for key, items in shared_lists(boundary, sections):
            try:
                texts[key] = orjson.dumps(items)
            except TypeError:  # not JSON (the row cannot be written either): stored whole
                continue
        best: StoredRequest | None = None
        best_kept: dict[str, int] = {}
        best_items = 0
        for stored in reversed(self._recent):  # latest first: a session's last call wins
            if stored.boundary != boundary or stored.redaction != redaction:
                continue
            if sum(len(kept.items) for kept in stored.lists.values()) <= best_items:
                continue  # cannot beat the best found
            kept = _kept_items(texts, stored)
            total = sum(kept.values())
            if total > best_items:
                best, best_kept, best_items = stored, kept, total
        section = shared_section(boundary)
        if best is None:
            redacted = redact(sections)
        else:
            holder = dict(sections[section])
            for key, count in best_kept.items():
                holder[key] = holder[key][count:]
            redacted = redact({**sections, section: holder})
            redacted_holder = redacted.get(section)
            if type(redacted_holder) is not dict or any(
                type(redacted_holder.get(key)) is not list for key in best_kept
            ):  # redaction renamed a list's key: nothing is kept
                best, best_kept = None, {}
                redacted = redact(sections)
        lists: dict[str, StoredList] = {}
        for key, items in shared_lists(boundary, redacted):
            text = texts.get(key)
            if text is None:
                continue
            tail_parts = [part_of(item) for item in items]
            kept_count = best_kept.get(key)
            if best is None or kept_count is None:
                lists[key] = StoredList(ListText.of(text), items, tail_parts)
            else:
                start = best.lists[key]
                lists[key] = StoredList(
                    ListText.of(text),
                    start.items[:kept_count] + items,
                    start.parts[:kept_count] + tail_parts,
                )
        base = None if best is None else {"call_index": best.call_index, section: best_kept}
        return StoredRequest(boundary, redaction, redacted, base, lists)

    def remember(self, stored: StoredRequest, call_index: int) -> None:
        """``stored`` was just written as call ``call_index``: a base for the next."""
        stored.call_index = call_index
        if stored.lists:
            self._recent.append(stored)


def _kept_items(texts: dict[str, bytes], stored: StoredRequest) -> dict[str, int]:
    """How many items of each list of ``stored`` the new lists (their JSON ``texts``) start
    with: all of them, when the new list's text extends the stored one's, else none."""
    kept: dict[str, int] = {}
    for key, old in stored.lists.items():
        new_text = texts.get(key)
        if new_text is not None and old.items and old.text.extended_by(new_text):
            kept[key] = len(old.items)
    return kept
