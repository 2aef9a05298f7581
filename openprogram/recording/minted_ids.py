"""Ids compared up to consistent renaming: how two runs of one session against a server that
mints fresh ids each time compare equal, while a session that links a result to the wrong
call does not.

A server makes up ids for what it answers — a response's own id, the Responses stream's
``item_id``\\ s, the tool-call ids (``call_…``, ``toolu_…``), Gemini's ``responseId`` — and a
session carries some of them on: the next request sends the tool-call id back beside the
tool's result, or names the previous response. Their values change from run to run; which
call each one links to does not.

**What is an id.** In an HTTP call, a string under a key named ``id``, ending in ``_id``
(``tool_call_id``, ``item_id``, ``previous_response_id``) or ending in ``Id`` (``responseId``,
``toolUseId``), at any depth of the request or of a response event's JSON; and the signed
tokens a server makes up the same way and has sent back — a thinking block's ``signature``,
a reasoning item's ``encrypted_content``, Gemini's ``thoughtSignature``.

**Within one call** (:class:`CallIds`) each id is replaced by a name given by the order it is
first seen in (each object walked in the order of its keys, as its canonical JSON is
written): the request's ids are ``#q0``, ``#q1``, … and a response's ids the request did
not send are ``#r0``, ``#r1``, …; an id seen again gets the name it got first. So a request
whose tool results answer the tool calls it carries in another order still differs, and a
response whose ids are all fresh compares equal to one whose ids were other fresh values.

**Across calls** (:func:`linked_digests`): what a name stood for is kept, as the first 16
hex digits of the SHA-256 of its value, in the call's digest (``ids``: ``refs``, the
request's ids in order, ``minted``, the response's). A request id that an earlier call's
response made up links to that call and the position the id had there; any other request id
— one the program made up, a user id — stands for its value. A call whose request carries
ids is hashed with where each of them comes from, so two recordings hash equal only when
their sessions link the same calls in the same way, and name the same ids of their own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any, NamedTuple

__all__ = [
    "CallIds",
    "Link",
    "LinkedCall",
    "call_links",
    "id_hash",
    "is_id_key",
    "linked_digests",
    "may_hold_ids",
]

REQUEST_NAME = "#q%d"
RESPONSE_NAME = "#r%d"


SIGNATURE_KEYS = frozenset({"signature", "encrypted_content"})
"""Keys of the opaque tokens a server signs anew each run and the session sends back: an
Anthropic thinking block's ``signature``, an OpenAI reasoning item's ``encrypted_content``
(and, by the suffix, Gemini's ``thoughtSignature``)."""


def is_id_key(key: str) -> bool:
    """Whether a JSON key names an id (``id``, ``…_id``, ``…Id``) or a signed token the
    server makes up (:data:`SIGNATURE_KEYS`, ``…Signature``)."""
    return key == "id" or key.endswith(("_id", "Id", "Signature")) or key in SIGNATURE_KEYS


def may_hold_ids(encoded: bytes) -> bool:
    """Whether JSON text may hold an id key (cheap: a key ending in ``id`` or ``ature``, or
    ``encrypted_content``, is in it)."""
    return (
        b'id":' in encoded
        or b'Id":' in encoded
        or b'ature":' in encoded
        or b'encrypted_content":' in encoded
    )


def id_hash(value: str) -> str:
    """What the digest keeps of an id: 16 hex digits of its SHA-256."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


class CallIds:
    """The names of one call's ids, given as its request and then its events are walked."""

    __slots__ = ("minted", "paths", "refs")

    def __init__(self) -> None:
        self.refs: dict[str, int] = {}
        """The request's ids, each with its position."""
        self.minted: dict[str, int] = {}
        """The ids the responses made up (not sent in the request), each with its position."""
        self.paths: list[str] = []
        """Where in the request each of ``refs`` was first seen (a field path)."""

    def request(self, value: Any, path: str | None = None) -> Any:
        """``value`` (a part of the request) with each id replaced by its name; with a
        ``path`` (where ``value`` sits), :attr:`paths` says where each id was seen."""
        return self._renamed(value, path, self._request_name)

    def event(self, value: Any) -> Any:
        """``value`` (a part of a response event) with each id replaced by its name."""
        return self._renamed(value, None, self._response_name)

    def event_part(self, value: Any) -> Any:
        """:meth:`event` of ``value``'s deterministic part, in one walk: without its
        null-valued entries, ``-0.0`` as ``0.0``, each id replaced by its name."""
        if type(value) is dict:
            part: dict[str, Any] = {}
            for key, item in sorted(value.items()):
                if item is None:
                    continue
                if type(item) is str:
                    part[key] = self._response_name(item, None) if item and is_id_key(key) else item
                elif type(item) is dict or type(item) is list:
                    part[key] = self.event_part(item)
                else:
                    part[key] = 0.0 if type(item) is float and item == 0.0 else item
            return part
        if type(value) is list:
            return [self.event_part(item) for item in value]
        return 0.0 if type(value) is float and value == 0.0 else value

    def value_of(self, name: object) -> object:
        """The id a request's name (``#q…``) stands for; anything else as it is."""
        if type(name) is str and name.startswith("#q") and name[2:].isdigit():
            position = int(name[2:])
            for value, at in self.refs.items():
                if at == position:
                    return value
        return name

    def digest_field(self, request_line: bytes) -> dict[str, Any] | None:
        """What the call's digest keeps of its ids (``refs`` and ``minted``), or None; with
        ids made up, also ``request``, the hash of the call's compared request
        (``request_line``), which names the call the ids link to."""
        if not self.refs and not self.minted:
            return None
        field: dict[str, Any] = {
            "refs": [id_hash(value) for value in self.refs],
            "minted": [id_hash(value) for value in self.minted],
        }
        if self.minted:
            field["request"] = hashlib.sha256(request_line).hexdigest()[:16]
        return field

    def _request_name(self, value: str, path: str | None) -> str:
        position = self.refs.get(value)
        if position is None:
            position = self.refs[value] = len(self.refs)
            self.paths.append(path or "")
        return REQUEST_NAME % position

    def _response_name(self, value: str, path: str | None) -> str:
        position = self.refs.get(value)
        if position is not None:
            return REQUEST_NAME % position
        position = self.minted.get(value)
        if position is None:
            position = self.minted[value] = len(self.minted)
        return RESPONSE_NAME % position

    def _renamed(self, value: Any, path: str | None, name: Any) -> Any:
        if type(value) is dict:
            renamed: dict[str, Any] | None = None
            # In key order, as the compared JSON is written: the same names for the same
            # value, however its keys were ordered.
            for key, item in sorted(value.items()):
                at = None if path is None else f"{path}.{key}" if path else key
                if type(item) is str and is_id_key(key) and item:
                    new = name(item, at)
                else:
                    new = self._renamed(item, at, name)
                if new is not item:
                    if renamed is None:
                        renamed = dict(value)
                    renamed[key] = new
            return value if renamed is None else renamed
        if type(value) is list:
            items = [
                self._renamed(item, None if path is None else f"{path}[{i}]", name)
                for i, item in enumerate(value)
            ]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items
        return value


class LinkedCall(NamedTuple):
    """A call as :func:`linked_digests` takes it: its digest and its ``ids`` digest field."""

    digest: str
    ids: dict[str, Any] | None


class Link(NamedTuple):
    """Where one id of a call's request comes from: the call (its position among the calls
    and the hash of its request) and position whose response made it up, or, with
    ``source`` None, the id's own hash (``made``)."""

    source: int | None
    source_request: str | None
    made: int | str

    def same_as(self, other: Link) -> bool:
        """Whether two links, each in its own recording, say the same."""
        return (self.source_request, self.made) == (other.source_request, other.made)


def call_links(calls: Iterable[LinkedCall]) -> tuple[list[str], list[list[Link]]]:
    """The digests the transcript hash takes over ``calls`` (in recorded order), and where
    each id of each call's request comes from.

    A call's linked digest is its own digest when its request carries no id, else the
    SHA-256 of its digest and, for each of its request's ids, the call (the hash of its
    request) and position an earlier response made it up at — the latest such — or the id's
    hash when none did. The call is named by its request, not its whole digest, so a reply
    that changed is one difference, not one more in every call that follows up on it."""
    made_at: dict[str, tuple[int, str, int]] = {}
    linked: list[str] = []
    links: list[list[Link]] = []
    for position, (digest, ids) in enumerate(calls):
        refs = ids.get("refs", []) if ids else []
        minted = ids.get("minted", []) if ids else []
        found: list[Link] = []
        effective = digest
        if refs:
            combined = hashlib.sha256(b"L " + digest.encode())
            for ref in refs:
                source = made_at.get(ref)
                if source is None:
                    found.append(Link(None, None, ref))
                    combined.update(b" l " + ref.encode())
                else:
                    found.append(Link(source[0], source[1], source[2]))
                    combined.update(b" m %s %d" % (source[1].encode(), source[2]))
            effective = combined.hexdigest()
        request = str(ids.get("request", "")) if ids else ""
        for made, value in enumerate(minted):
            made_at[value] = (position, request, made)
        linked.append(effective)
        links.append(found)
    return linked, links


def linked_digests(calls: Iterable[LinkedCall]) -> list[str]:
    """The digests the transcript hash takes over ``calls`` (see :func:`call_links`)."""
    return call_links(calls)[0]
