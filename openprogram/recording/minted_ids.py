"""Ids compared up to consistent renaming: how two runs of one session against a server that mints
fresh ids each time compare equal, while a session that links a result to the wrong call does not.

A server makes up ids for what it answers — a response's own id, the Responses stream's
``item_id``\\ s, the tool-call ids (``call_…``, ``toolu_…``), Gemini's ``responseId`` — and a
session carries some of them on: the next request sends the tool-call id back beside the
tool's result, or names the previous response. Their values change from run to run; which
call each one links to does not.

**What is an id.** In an HTTP call, a string under a key named ``id``, ending in ``_id``
(``tool_call_id``, ``item_id``, ``previous_response_id``) or ending in ``Id`` (``responseId``,
``toolUseId``), at any depth of the request or of a response event's JSON; and the signed
tokens a server makes up the same way and has sent back — under a key ending in
``Signature`` (Gemini's ``thoughtSignature``) or one the vendor APIs name
(:attr:`~openprogram.recording.wire_rules.WireRules.signature_keys`: a thinking block's
``signature``, a reasoning item's ``encrypted_content``).

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

**Inside text** (:class:`MintedIds`): a session may also copy an id a server made up into
the *text* of a later request — smolagents writes ``Calling tools:\n[{'id': 'call_…', …}]``
into the next request's messages — where no key names it. So in an HTTP request's strings
(not its keys), a token that an earlier call's response made up is an id too: a maximal run
of letters, digits, ``_`` and ``-`` (:data:`TEXT_TOKEN`) of at least
:data:`TEXT_ID_LENGTH` characters, equal to the whole id — never a part of a longer run, nor
a prefix of an id — is named where it stands, as an id under a key is, and links to the call
that made it up. Everything else in the text stays as it is. Which ids earlier responses made
up is the one thing a call's digest needs of the calls before it: a recording is walked in
call order with one :class:`MintedIds`, and so is a file as it is written (the digest a
writer stores says how many it knew, ``minted_before``, so that ``list`` trusts it only when
that is all the file's earlier calls made up)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from openprogram.recording.wire_rules import WireRules, derived, wire_rules

__all__ = [
    "TEXT_ID_LENGTH",
    "TEXT_TOKEN",
    "CallIds",
    "Link",
    "LinkedCall",
    "MintedIds",
    "call_links",
    "id_hash",
    "is_id_key",
    "linked_digests",
    "may_hold_ids",
]

REQUEST_NAME = "#q%d"
RESPONSE_NAME = "#r%d"

TEXT_ID_LENGTH = 8
"""The fewest characters of an id renamed inside text: the ids servers make up are longer
(``call_`` and 24 characters, ``toolu_01`` and 22, Mistral's 9), while a short value under an
id key (``"id": "1"``) would otherwise rename every ``1`` of every later message."""

TEXT_TOKEN = re.compile(rf"[A-Za-z0-9_\-]{{{TEXT_ID_LENGTH},}}")
"""A token of text that may be an id: a maximal run of letters, digits, ``_`` and ``-`` (a
shorter run fails at its start and at every later position, so each match is a whole run)."""


class MintedIds:
    """The ids the responses of a recording's calls made up, each with the first call (its
    position in call order) whose response did: what a request's text is searched for.

    It also keeps the tokens (:data:`TEXT_TOKEN`) of each text it was asked about, and where
    they stand in a text that holds an id: a session's requests repeat its conversation, so
    each text is searched once, not once per call."""

    __slots__ = ("_first", "_spans", "_tokens")

    def __init__(self) -> None:
        self._first: dict[str, int] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._spans: dict[str, tuple[tuple[int, int, str], ...]] = {}

    def __len__(self) -> int:
        return len(self._first)

    def note(self, value: str, position: int) -> None:
        """Call ``position``'s response made up ``value``."""
        first = self._first.get(value)
        if first is None or position < first:
            self._first[value] = position

    def repeated_in(self, text: str, position: int) -> frozenset[str]:
        """The tokens of ``text`` a call before ``position`` made up (often none)."""
        tokens = self._tokens.get(text)
        if tokens is None:
            tokens = self._tokens[text] = frozenset(TEXT_TOKEN.findall(text))
        first = self._first
        hits = [token for token in tokens if first.get(token, position) < position]
        return frozenset(hits) if hits else _NONE

    def spans(self, text: str) -> tuple[tuple[int, int, str], ...]:
        """Where each token of ``text`` stands: its start, its end and the token."""
        spans = self._spans.get(text)
        if spans is None:
            found = TEXT_TOKEN.finditer(text)
            spans = self._spans[text] = tuple((m.start(), m.end(), m[0]) for m in found)
        return spans


_NONE: frozenset[str] = frozenset()


_ID_ENDINGS = ("_id", "Id", "Signature")


def is_id_key(key: str) -> bool:
    """Whether a JSON key names an id (``id``, ``…_id``, ``…Id``) or a signed token the
    server makes up (``…Signature``, or a signature key of the wire rules)."""
    return key == "id" or key.endswith(_ID_ENDINGS) or key in wire_rules().signature_keys


@derived
def _key_needles(rules: WireRules) -> tuple[bytes, ...]:
    """What JSON text holding an id key holds: a key ending in ``id`` or ``ature``, or a
    signature key of the wire rules that ends otherwise."""
    others = (
        key for key in sorted(rules.signature_keys) if not key.endswith(("id", "Id", "ature"))
    )
    return (b'id":', b'Id":', b'ature":', *(key.encode() + b'":' for key in others))


def may_hold_ids(encoded: bytes) -> bool:
    """Whether JSON text may hold an id key (cheap: see :func:`_key_needles`)."""
    return any(needle in encoded for needle in _key_needles())


def id_hash(value: str) -> str:
    """What the digest keeps of an id: 16 hex digits of its SHA-256."""
    return hashlib.sha256(value.encode()).hexdigest()[:16]


class CallIds:
    """The names of one call's ids, given as its request and then its events are walked.

    ``session``: the ids the responses of the recording's calls made up, of which those of
    calls before ``position`` (this call's) are ids inside its request's text too; the ids
    this call's response makes up are added to it."""

    __slots__ = ("_position", "_session", "minted", "paths", "refs")

    def __init__(self, session: MintedIds | None = None, position: int = 0) -> None:
        self.refs: dict[str, int] = {}
        """The request's ids, each with its position."""
        self.minted: dict[str, int] = {}
        """The ids the responses made up (not sent in the request), each with its position."""
        self.paths: list[str] = []
        """Where in the request each of ``refs`` was first seen (a field path)."""
        self._session = session
        self._position = position

    def request(self, value: Any, path: str | None = None) -> Any:
        """``value`` (a part of the request) with each id replaced by its name — inside its
        strings too, an id an earlier call's response made up; with a ``path`` (where
        ``value`` sits), :attr:`paths` says where each id was seen."""
        in_text = self._session is not None and len(self._session) > 0
        return self._renamed(value, path, self._request_name, in_text)

    @property
    def after_minted(self) -> bool:
        """Whether a call before this one made up ids, which its request's text may repeat
        (then :meth:`request` must walk it even when no key names an id)."""
        session = self._session
        return session is not None and len(session) > 0

    def event(self, value: Any) -> Any:
        """``value`` (a part of a response event) with each id replaced by its name."""
        return self._renamed(value, None, self._response_name, False)

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
            if self._session is not None:
                self._session.note(value, self._position)
        return RESPONSE_NAME % position

    def _renamed(self, value: Any, path: str | None, name: Any, in_text: bool) -> Any:
        if type(value) is dict:
            renamed: dict[str, Any] | None = None
            # In key order, as the compared JSON is written: the same names for the same
            # value, however its keys were ordered.
            for key, item in sorted(value.items()):
                at = None if path is None else f"{path}.{key}" if path else key
                if type(item) is str and is_id_key(key) and item:
                    new = name(item, at)
                else:
                    new = self._renamed(item, at, name, in_text)
                if new is not item:
                    if renamed is None:
                        renamed = dict(value)
                    renamed[key] = new
            return value if renamed is None else renamed
        if type(value) is list:
            items = [
                self._renamed(item, None if path is None else f"{path}[{i}]", name, in_text)
                for i, item in enumerate(value)
            ]
            if all(new is old for new, old in zip(items, value, strict=True)):
                return value
            return items
        if in_text and type(value) is str and len(value) >= TEXT_ID_LENGTH:
            session = self._session
            assert session is not None
            hits = session.repeated_in(value, self._position)
            if hits:
                return self._text_renamed(value, path, session, hits)
        return value

    def _text_renamed(
        self, text: str, path: str | None, session: MintedIds, hits: frozenset[str]
    ) -> str:
        """``text`` with each of its tokens ``hits`` (ids an earlier call's response made
        up) named as the request's id it is."""
        pieces: list[str] = []
        end = 0
        for start, stop, token in session.spans(text):
            if token in hits:
                pieces.append(text[end:start])
                pieces.append(self._request_name(token, path))
                end = stop
        pieces.append(text[end:])
        return "".join(pieces)


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
