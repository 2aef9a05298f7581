"""The index content matching looks requests up in: recorded calls by the digest of their
comparable request.

A request's *comparable form* is what the comparison rules look at: its sections in
comparison order (an absent one as null), each without the ignored fields (names at any
depth, paths where they match), without dict entries holding null (an absent key equals
null), with ``-0.0`` as ``0.0`` and tuples as lists. Its *digest* is a BLAKE2b hash of that
form as canonical JSON (keys sorted). Two requests equal under the rules of
:func:`~openprogram.recording.difference.find_first_difference` have the same digest; two
different ones may share one only by a hash collision, or where the JSON text cannot tell
them apart (a NaN beside a null), so a call found by its digest is still confirmed by the
exact comparison.

:class:`RequestIndex` holds the calls of one boundary by digest, each digest's calls in
recorded order; it is built once, and a lookup costs one hash of the incoming request
whatever the size of the recording.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

import orjson

from openprogram.recording.difference import IgnoreRules, join_field_path
from openprogram.recording.format import RecordedCall, request_sections
from openprogram.recording.request_delta import shared_section

__all__ = ["RequestDigester", "RequestIndex", "comparable_form", "request_digest"]

_IGNORED: Final = object()
"""A list item left out by an ignore path: any value there compares equal."""
_IGNORED_TEXT: Final = "\x00ignored"
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})


def request_digest(request: dict[str, Any], boundary: str, rules: IgnoreRules) -> bytes:
    """The digest of ``request`` (the sections of a call at ``boundary``, redacted)."""
    forms = [
        None if rules.skips(section) else comparable_form(request.get(section), rules, section)
        for section in request_sections(boundary)
    ]
    return _digest_of_forms(forms)


class RequestDigester:
    """Digests of requests under one set of rules, for :class:`RequestIndex` and the
    requests replay looks up in it; the items of shared lists (a conversation's messages,
    which the requests of one session share: see :mod:`~openprogram.recording.request_delta`)
    each digested once.

    Its digest is :func:`request_digest`'s but for the shared lists, each digested as the
    sequence of its items' digests (a request holding none has :func:`request_digest`'s
    own): equal requests have equal digests all the same. The item digests of the latest
    lists seen are kept, and those of every recorded request's lists (:meth:`keep`), so a
    list that starts with the items of one of them (the same objects: the reader rebuilds a
    session's requests sharing them, and replay builds an incoming request from the items of
    the call it matched before) costs only its new items. Without
    ignored field paths only: with them, an item's form depends on its place, and each
    request is digested by :func:`request_digest`.
    """

    __slots__ = ("_kept", "_lists", "rules")

    def __init__(self, rules: IgnoreRules) -> None:
        self.rules = rules
        self._lists: deque[tuple[list[Any], list[int], list[bytes]]] = deque(maxlen=_RECENT_LISTS)
        self._kept: dict[int, tuple[list[Any], list[bytes]]] = {}
        """The item digests of the recorded requests' lists (:meth:`keep`), by the list's id
        (the list held, so the id stays its own)."""

    def keep(self, request: dict[str, Any], boundary: str) -> bytes:
        """:meth:`digest` of a recorded request, keeping its lists' item digests, so that a
        request whose list starts with one of those lists is digested from them."""
        return self.digest(request, boundary, keep=True)

    def digest(
        self,
        request: dict[str, Any],
        boundary: str,
        starts: dict[str, list[Any]] | None = None,
        *,
        keep: bool = False,
    ) -> bytes:
        """The digest of ``request`` (the sections of a call at ``boundary``, redacted).
        ``starts``: for some of its shared lists (by key), a recorded list digested by
        :meth:`keep` whose items it starts with (the same objects)."""
        rules = self.rules
        if rules.paths is not None:
            return request_digest(request, boundary, rules)
        names = rules.names
        shared = shared_section(boundary)
        forms: list[Any] = []
        lists: list[bytes] = []
        for section in request_sections(boundary):
            value = request.get(section)
            if section != shared or type(value) is not dict:
                forms.append(_without_names(value, names))
                continue
            form: dict[str, Any] = {}
            for key, item in value.items():
                if item is None or key in names:
                    continue
                if type(item) is list:
                    form[key] = len(item)
                    digests = self._item_digests(item, None if starts is None else starts.get(key))
                    if keep:
                        self._kept[id(item)] = (item, digests)
                    lists.append(orjson.dumps(key) + b"".join(digests))
                else:
                    form[key] = _without_names(item, names)
            forms.append(form)
        if not lists:
            return _digest_of_forms(forms)
        digest = hashlib.blake2b(_digest_of_forms(forms), digest_size=16)
        for text in sorted(lists):
            digest.update(text)
        return digest.digest()

    def _item_digests(self, items: list[Any], begins: list[Any] | None) -> list[bytes]:
        if begins is not None:
            kept = self._kept.get(id(begins))
            if kept is not None and kept[0] is begins and len(begins) <= len(items):
                return kept[1] + [self._item_digest(item) for item in items[len(begins) :]]
        # By identity (the objects' ids, while the lists hold them), never by ==, which
        # finds 1 equal to True.
        ids = list(map(id, items))
        start: list[bytes] = []
        # A snapshot (taken at once): another thread may be digesting too.
        for _held, known_ids, known_digests in reversed(tuple(self._lists)):  # held: ids stay
            count = len(known_ids)
            if len(start) < count <= len(ids) and ids[:count] == known_ids:
                start = known_digests
        digests = start + [self._item_digest(item) for item in items[len(start) :]]
        self._lists.append((items, ids, digests))
        return digests

    def _item_digest(self, item: Any) -> bytes:
        return _digest_of_forms(_without_names(item, self.rules.names))


_RECENT_LISTS = 16
"""How many of the latest lists a :class:`RequestDigester` keeps the item digests of."""


def _digest_of_forms(forms: Any) -> bytes:
    try:
        text = orjson.dumps(forms, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits
        text = json.dumps(forms, sort_keys=True, default=repr).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def comparable_form(value: Any, rules: IgnoreRules, path: str) -> Any:
    """``value`` (at ``path``) as the comparison sees it (see the module's docstring)."""
    if rules.paths is None:
        return _without_names(value, rules.names)
    return _without_fields(value, rules, path)


def _without_names(value: Any, names: frozenset[str]) -> Any:
    """:func:`comparable_form` when no field path is ignored: the common case, kept lean
    (it runs on every replayed request)."""
    kind = type(value)
    if kind is dict:
        return {
            key: _without_names(item, names)
            for key, item in value.items()
            if item is not None and key not in names
        }
    if kind is list or kind is tuple:
        return [_without_names(item, names) for item in value]
    if kind is float and value == 0.0:
        return 0.0
    if kind in _SCALARS:
        return value
    if isinstance(value, dict):
        return _without_names(dict(value), names)
    if isinstance(value, list | tuple):
        return _without_names(list(value), names)
    return value


def _without_fields(value: Any, rules: IgnoreRules, path: str) -> Any:
    """:func:`comparable_form` with field paths to leave out: every child's path is built."""
    if isinstance(value, dict):
        names = rules.names
        paths = rules.paths
        assert paths is not None
        form: dict[str, Any] = {}
        for key, item in value.items():
            if item is None or key in names:
                continue
            child = join_field_path(path, key)
            if paths.fullmatch(child) is None:
                form[key] = _without_fields(item, rules, child)
        return form
    if isinstance(value, list | tuple):
        items = [
            _IGNORED
            if rules.skips(child := f"{path}[{index}]")
            else _without_fields(item, rules, child)
            for index, item in enumerate(value)
        ]
        while items and items[-1] is _IGNORED:
            items.pop()  # a shorter list is equal when only ignored items are missing
        return [_IGNORED_TEXT if item is _IGNORED else item for item in items]
    if type(value) is float and value == 0.0:
        return 0.0
    return value


class RequestIndex:
    """The calls of one boundary by the digest of their comparable request."""

    __slots__ = ("_buckets",)

    def __init__(
        self,
        calls: Iterable[RecordedCall],
        boundary: str,
        rules: IgnoreRules,
        redactor: Callable[[dict[str, Any]], dict[str, Any]],
        digester: RequestDigester | None = None,
        *,
        keep: bool = False,
    ) -> None:
        """Index the ``calls`` made at ``boundary``, each request redacted by ``redactor``
        (the current rules, as the comparison re-redacts a recorded request) and digested
        by ``digester`` (one for ``rules``: the session's, which digests the incoming
        requests too). ``keep``: the digester keeps each request's item digests, for the
        requests that start with its lists (only for requests compared as stored: the
        digester then holds no copy of a request, only the recording's own lists)."""
        buckets: dict[bytes, deque[int]] = {}
        digester = digester or RequestDigester(rules)
        for call in calls:
            if call.boundary == boundary:
                request = redactor(call.request)
                digest = (
                    digester.keep(request, boundary) if keep else digester.digest(request, boundary)
                )
                buckets.setdefault(digest, deque()).append(call.call_index)
        self._buckets = buckets

    def candidates(self, digest: bytes, served: bytearray) -> Iterator[int]:
        """The unserved calls whose request has ``digest``, in recorded order. Served calls
        met at the front are dropped for good (a call is never unserved again)."""
        bucket = self._buckets.get(digest)
        if bucket is None:
            return
        while bucket and served[bucket[0]]:
            bucket.popleft()
        for call_index in bucket:
            if not served[call_index]:
                yield call_index
