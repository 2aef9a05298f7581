"""What replay pairs a request with a recorded call by, and replay by content.

Both matchings (by content here, by order beside the session in
:mod:`~openprogram.recording.replay_session`, the door to replay) work on the three values
defined here — :class:`IncomingRequest`, :class:`ComparisonRules`, :class:`ServedCalls` —
and are given the session's exact comparison of a request with one call (:data:`Match`).

Under ``content`` matching (the default) a replay session serves each request the earliest
unconsumed call *of the request's boundary* whose request equals it, wherever it stands in
the recording. :class:`ContentMatching` is that strategy (what it is, and how the session
serves what it finds: :class:`~openprogram.recording.replay_session.PairingStrategy`).

**By digest.** A request's *comparable form* is what the comparison looks at: its sections in
comparison order (an absent one as null), each without the ignored fields, without dict
entries holding null, with ``-0.0`` as ``0.0`` and tuples as lists. Its *digest* is a BLAKE2b
hash of that form as canonical JSON. Requests equal under the rules of
:func:`~openprogram.recording.difference.find_first_difference` have the same digest; two
different ones may share one only by a hash collision, or where the JSON text cannot tell
them apart (a NaN beside a null), so a call found by digest is confirmed by the exact
comparison. :class:`RequestIndex` holds the calls of one boundary by digest, in recorded
order, built at the first request of the boundary: a lookup costs one hash of the request
whatever the size of the recording, and the items of a conversation the requests share are
digested once (:class:`RequestDigester`).

**Else the nearest.** With no equal request, the report names the *nearest* unconsumed call
of the boundary: the fewest leaf paths apart under the comparison rules
(:func:`~openprogram.recording.difference.count_differences`), ties to the earliest, among
the :data:`NEAREST_CANDIDATES` unconsumed calls with the lowest indexes (so a report costs
the same however long the recording). A request one field away from the next call of its
boundary is therefore reported against that call, exactly as by order. With no unconsumed
call of the boundary left, the earliest unconsumed call of the other boundary is a mismatch
at field ``boundary``; with none at all, at field ``call_index``. ``recordings diff`` pairs
the calls found in one recording only by the same search (:func:`nearest_request`).

**The URL** of an HTTP call is compared in the form its rule gives it
(:class:`~openprogram.recording.url_comparison.UrlComparison`: a loopback server's port left
out by default, as parts when an ignored field names one), in the digest as in the comparison."""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Final, NamedTuple

import orjson

from openprogram.errors import ReplayMismatch
from openprogram.recording.call_digest import request_ignore_fields
from openprogram.recording.difference import (
    IgnoreRules,
    count_differences,
    ignore_rules,
    join_field_path,
)
from openprogram.recording.format import RecordedCall, request_sections
from openprogram.recording.mismatch import more_calls_than_recorded
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.shared_lists import (
    DumpableRequest,
    ListTexts,
    ServedConversations,
    dumped,
    shared_section,
)
from openprogram.recording.url_comparison import (
    DEFAULT_URL_COMPARISON,
    UrlComparison,
    http_ignore_fields,
    url_comparison,
)
from openprogram.recording.user_redaction import UserRedaction

if TYPE_CHECKING:
    from openprogram.recording.redaction import RequestRedactor

__all__ = [
    "NEAREST_CANDIDATES",
    "ComparisonRules",
    "ContentMatching",
    "IncomingRequest",
    "Match",
    "NearestRequest",
    "RequestDigester",
    "RequestIndex",
    "ServedCalls",
    "nearest_request",
    "request_differences",
    "request_digest",
]

NEAREST_CANDIDATES = 64
"""The most candidates :func:`nearest_request` looks at."""


Match = Callable[[RecordedCall, "IncomingRequest"], ReplayMismatch | None]
"""The exact comparison of a request with one recorded call (the session's ``match``): why
the request is not the call, or None when it is."""


class ComparisonRules:
    """How the requests of ``boundary`` are compared, leaving out the fields ``ignored`` (the
    boundary's non-deterministic fields and the caller's ``ignore_fields``): the sections in
    comparison order, the compiled ignore rules, how an HTTP call's URL is compared (``url``; None
    at any other boundary), and the conversations served under them (none with an ignored field
    path: a list may then be shorter and still equal, so no served list is reused)."""

    __slots__ = ("boundary", "conversations", "ignore_rules", "ignored", "sections", "url")

    def __init__(
        self, boundary: str, ignored: frozenset[str], *, compare_loopback_ports: bool = False
    ) -> None:
        self.boundary = boundary
        self.url: UrlComparison | None = None
        if boundary == "http":
            ignored = http_ignore_fields(ignored)
            self.url = url_comparison(ignored, compare_loopback_ports=compare_loopback_ports)
        self.ignored = ignored
        self.ignore_rules = ignore_rules(ignored)
        self.sections = self.ignore_rules.compared_sections(request_sections(boundary))
        self.conversations = ServedConversations() if self.ignore_rules.paths is None else None


class IncomingRequest:
    """One request replay pairs with a recorded call: ``redacted``, its sections as its
    boundary redacts them, compared under ``rules`` (the session's for its boundary).

    Given ``redaction`` (what tells redactors apart; the session passes it only when it
    compares recorded requests as stored) and rules that keep served conversations, it is
    redacted through them and ``as_stored``: its shared lists may hold the items of a call
    served before (``starts`` maps each list so built to the recorded list it starts with),
    and recorded requests are compared with it as stored. :meth:`whole` is the same request
    redacted whole, compared with recorded requests redacted again: what a report compares."""

    __slots__ = (
        "_remember",
        "_source",
        "as_stored",
        "boundary",
        "redacted",
        "redactor",
        "rules",
        "starts",
    )

    def __init__(
        self,
        rules: ComparisonRules,
        source: dict[str, Any] | DumpableRequest,
        redactor: RequestRedactor,
        redaction: Hashable = None,
    ) -> None:
        self.rules = rules
        self.boundary = rules.boundary
        self.redactor = redactor
        self._source = source
        self._remember: tuple[Hashable, ListTexts] | None = None
        self.starts: dict[str, list[Any]] | None = None
        self.as_stored = redaction is not None and rules.conversations is not None
        if rules.conversations is None or redaction is None:
            self.redacted = redactor(dumped(source))
            return
        self.redacted, texts, self.starts = rules.conversations.redacted(
            rules.boundary, source, redactor, redaction
        )
        self._remember = (redaction, texts)

    def whole(self) -> IncomingRequest:
        """This request redacted whole (the same object if it is)."""
        if not self.as_stored:
            return self
        return IncomingRequest(self.rules, self._source, self.redactor)

    def served(self, call: RecordedCall) -> None:
        """It was served ``call``, equal to it: remembered, for the requests that extend it."""
        if self._remember is not None and self.rules.conversations is not None:
            redaction, texts = self._remember
            self.rules.conversations.remember(self.rules.boundary, redaction, texts, call.request)


class ServedCalls:
    """Which of a recording's calls (``calls``, in index order) one replay has served.

    A flag per call, how many are served, the first call not served yet (every call before
    it is served), and per boundary where its first unserved call stands, so that finding
    the open calls of a boundary never walks the calls served long ago again. Not
    thread-safe: the session calls it under its lock."""

    __slots__ = ("_first_open", "_of_boundary", "count", "flags", "next_call")

    def __init__(self, calls: Sequence[RecordedCall]) -> None:
        self.flags = bytearray(len(calls))
        """1 at the index of each call served, 0 elsewhere."""
        self.count = 0
        """How many calls are served."""
        self.next_call = 0
        """No call before it is unserved (under ``order`` matching: the next call)."""
        self._of_boundary: dict[str, list[int]] = {}
        for call in calls:
            self._of_boundary.setdefault(call.boundary, []).append(call.call_index)
        self._first_open: dict[str, int] = dict.fromkeys(self._of_boundary, 0)

    def serve(self, index: int) -> None:
        """Count the call at ``index`` as served."""
        self.flags[index] = 1
        self.count += 1
        served = self.flags
        while self.next_call < len(served) and served[self.next_call]:
            self.next_call += 1

    def indexes(self) -> list[int]:
        """The calls served so far, by index."""
        return [index for index, served in enumerate(self.flags) if served]

    def open_calls(self, boundary: str, limit: int) -> list[int]:
        """The first ``limit`` unserved calls of ``boundary``, by index."""
        of_boundary = self._of_boundary.get(boundary, [])
        position = self._first_open.get(boundary, 0)
        served = self.flags
        while position < len(of_boundary) and served[of_boundary[position]]:
            position += 1
        if boundary in self._first_open:
            self._first_open[boundary] = position
        found: list[int] = []
        for index in of_boundary[position:]:
            if not served[index]:
                found.append(index)
                if len(found) == limit:
                    break
        return found


class ContentMatching:
    """``content`` matching: the earliest unserved of ``calls`` of the request's boundary equal to
    it (by ``match``, the session's exact comparison), found by digest (one :class:`RequestIndex`
    per :class:`ComparisonRules`); else the mismatch with the nearest one. ``as_stored``: the
    session compares recorded requests as stored; else the indexes redact them again, ``user``'s
    redaction after the built-in rules."""

    def __init__(
        self,
        calls: Sequence[RecordedCall],
        served: ServedCalls,
        match: Match,
        *,
        as_stored: bool,
        user: UserRedaction | None,
    ) -> None:
        self._calls, self._served, self._match = calls, served, match
        self._as_stored, self._user = as_stored, user
        self._indexes: dict[ComparisonRules, RequestIndex] = {}
        self._building = threading.Lock()

    def digest(self, request: IncomingRequest) -> bytes:
        """The request's digest, by the digester of its index (built at the first request
        of its boundary and rules)."""
        rules = request.rules
        index = self._indexes.get(rules)
        if index is None:
            with self._building:
                index = self._indexes.get(rules) or self._indexes.setdefault(
                    rules,
                    RequestIndex(
                        self._calls,
                        rules.boundary,
                        rules.ignore_rules,
                        self._index_redactor(rules.boundary),
                        keep=self._as_stored,
                        url=rules.url,
                    ),
                )
        return index.digester.digest(request.redacted, request.starts)

    # --- under the session's lock ----------------------------------------------------------

    def find(
        self, request: IncomingRequest, digest: bytes | None, *, report: bool
    ) -> tuple[int, IncomingRequest, ReplayMismatch | None]:
        assert digest is not None
        for call_index in self._indexes[request.rules].candidates(digest, self._served.flags):
            if self._match(self._calls[call_index], request) is None:
                return call_index, request, None
        if report:
            request = request.whole()  # compared as before: the report is the same
        found, mismatch = self._nearest(request)
        return found, request, mismatch

    def _nearest(self, request: IncomingRequest) -> tuple[int, ReplayMismatch | None]:
        """The nearest unserved call of the request's boundary and why the request is not it
        (None: it is after all, its recorded request holding a credential only this call's
        redactor knows); with none left, -1 and the mismatch of :meth:`_nothing_left`."""
        candidates = self._served.open_calls(request.boundary, NEAREST_CANDIDATES)
        if not candidates:
            return -1, self._nothing_left(request)
        calls, redactor = self._calls, request.redactor
        nearest = nearest_request(
            request.redacted,
            [redactor(calls[index].request) for index in candidates],
            boundary=request.boundary,
            ignore_fields=request.rules.ignored,
            url=request.rules.url,
        )
        assert nearest is not None
        chosen = candidates[nearest.position]
        return chosen, self._match(calls[chosen], request)

    def _nothing_left(self, request: IncomingRequest) -> ReplayMismatch:
        """The mismatch for a request with no unserved call of its boundary left."""
        calls, served = self._calls, self._served
        if served.next_call >= len(calls):
            return more_calls_than_recorded(served.count, len(calls))
        head = calls[served.next_call]  # of the other boundary: a mismatch at ``boundary``
        mismatch = self._match(head, request)
        assert mismatch is not None
        return mismatch

    def _index_redactor(self, boundary: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
        """How the indexes see a recorded request: as stored when the session compares it so
        (redacting it again would only remove a credential this process knows and the
        recording process did not), else redacted again by the rules in force."""
        if self._as_stored:
            return _as_stored
        redactor = SecretRedactor(user=self._user)
        return redactor.redact_http_request if boundary == "http" else redactor.redact_request


def _as_stored(request: dict[str, Any]) -> dict[str, Any]:
    return request


class RequestIndex:
    """The calls of one boundary by the digest of their comparable request."""

    __slots__ = ("_buckets", "digester")

    def __init__(
        self,
        calls: Iterable[RecordedCall],
        boundary: str,
        rules: IgnoreRules,
        redactor: Callable[[dict[str, Any]], dict[str, Any]],
        digester: RequestDigester | None = None,
        *,
        keep: bool = False,
        url: UrlComparison | None = None,
    ) -> None:
        """Index the ``calls`` made at ``boundary``, each request redacted by ``redactor``
        (as the comparison sees a recorded request) and digested by ``digester`` (a new one
        for ``boundary``, ``rules`` and ``url`` by default). ``keep``: the digester keeps each
        request's item digests (only for requests compared as stored: it then holds no copy
        of a request, only the recording's own lists)."""
        buckets: dict[bytes, deque[int]] = {}
        self.digester = digester = digester or RequestDigester(boundary, rules, url)
        """What digests the requests looked up in it, as it digested the recorded ones."""
        for call in calls:
            if call.boundary == boundary:
                request = redactor(call.request)
                digest = digester.digest(request, keep=keep)
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


_IGNORED: Final = object()
"""A list item left out by an ignore path: any value there compares equal."""
_IGNORED_TEXT: Final = "\x00ignored"
_SCALARS: Final = frozenset({str, int, float, bool, type(None)})
_RECENT_LISTS = 16
"""How many of the latest lists a :class:`RequestDigester` keeps the item digests of."""


def request_digest(
    request: dict[str, Any], boundary: str, rules: IgnoreRules, url: UrlComparison | None = None
) -> bytes:
    """The digest of ``request`` (the sections of a call at ``boundary``, redacted), its
    URL compared by ``url`` (None: :data:`DEFAULT_URL_COMPARISON` at the HTTP boundary)."""
    compared = rules.compared_sections(request_sections(boundary))
    url = _url_rule(boundary, url)
    forms = [
        _comparable_form(_section(request, section, url), rules, section)
        if section in compared
        else None
        for section in request_sections(boundary)
    ]
    return _digest_of_forms(forms)


def _url_rule(boundary: str, url: UrlComparison | None) -> UrlComparison | None:
    """How a request of ``boundary`` has its URL compared: by ``url``, at the HTTP boundary
    by :data:`DEFAULT_URL_COMPARISON` when None; None elsewhere (no URL)."""
    if boundary != "http":
        return None
    return DEFAULT_URL_COMPARISON if url is None else url


def _section(request: dict[str, Any], section: str, url: UrlComparison | None) -> Any:
    """The value of ``section`` in ``request`` as compared: the URL in the form of ``url``."""
    value = request.get(section)
    return url.form(value) if url is not None and section == "url" else value


class RequestDigester:
    """Digests of the requests of ``boundary`` under ``rules``: the recorded ones an index
    holds and the incoming ones looked up in it, alike.

    Its digest is :func:`request_digest`'s but for the shared lists (a conversation's
    messages: :mod:`~openprogram.recording.shared_lists`), each digested as the sequence of
    its items' digests; equal requests have equal digests all the same. The item digests of
    the latest lists seen are kept, and those of the recorded requests' lists (``keep``), so
    a list that starts with the items of one of them (the same objects: the reader rebuilds
    a session's requests sharing them, replay builds a request from the items of a call it
    served) costs only its new items. Without ignored field paths only: with them, an item's
    form depends on its place, and each request is digested by :func:`request_digest`."""

    __slots__ = ("_kept", "_lists", "boundary", "compared", "rules", "sections", "shared", "url")

    def __init__(self, boundary: str, rules: IgnoreRules, url: UrlComparison | None = None) -> None:
        self.boundary = boundary
        self.rules = rules
        self.url = _url_rule(boundary, url)
        self.sections = request_sections(boundary)
        self.compared = rules.compared_sections(self.sections)
        self.shared = shared_section(boundary)
        self._lists: deque[tuple[list[Any], list[int], list[bytes]]] = deque(maxlen=_RECENT_LISTS)
        self._kept: dict[int, tuple[list[Any], list[bytes]]] = {}
        """The item digests of the recorded requests' lists (``keep``), by the list's id
        (the list held, so the id stays its own)."""

    def digest(
        self,
        request: dict[str, Any],
        starts: dict[str, list[Any]] | None = None,
        *,
        keep: bool = False,
    ) -> bytes:
        """The digest of ``request`` (its sections, redacted). ``starts``: for some of its
        shared lists (by key), a recorded list digested with ``keep`` whose items it starts
        with (the same objects). ``keep``: keep its lists' item digests, so that a request
        whose list starts with one of those lists is digested from them."""
        rules = self.rules
        if rules.paths is not None:
            return request_digest(request, self.boundary, rules, self.url)
        names = rules.names
        shared = self.shared
        forms: list[Any] = []
        lists: list[bytes] = []
        compared = self.compared
        for section in self.sections:
            if section not in compared:
                forms.append(None)  # left out whole, as request_digest leaves it
                continue
            value = _section(request, section, self.url)
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


def _digest_of_forms(forms: Any) -> bytes:
    try:
        text = orjson.dumps(forms, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # a lone surrogate, an integer beyond 64 bits
        text = json.dumps(forms, sort_keys=True, default=repr).encode()
    return hashlib.blake2b(text, digest_size=16).digest()


def _comparable_form(value: Any, rules: IgnoreRules, path: str) -> Any:
    """``value`` (at ``path``) as the comparison sees it (see the module's docstring)."""
    if rules.paths is None:
        return _without_names(value, rules.names)
    return _without_fields(value, rules, path)


def _without_names(value: Any, names: frozenset[str]) -> Any:
    """:func:`_comparable_form` when no field path is ignored: the common case, kept lean
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
    """:func:`_comparable_form` with field paths to leave out: every child's path is built."""
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


class NearestRequest(NamedTuple):
    """The nearest candidate: its position among the candidates given, and how many leaf
    paths it differs at (0: it equals the incoming request)."""

    position: int
    differences: int


def nearest_request(
    incoming: dict[str, Any],
    candidates: Sequence[dict[str, Any]],
    *,
    boundary: str,
    ignore_fields: Iterable[str] | None = None,
    cap: int = NEAREST_CANDIDATES,
    url: UrlComparison | None = None,
) -> NearestRequest | None:
    """The candidate request nearest ``incoming`` (see the module's docstring), among the
    first ``cap`` of ``candidates``; None when there is none. ``url``: how an HTTP call's URL
    is compared (None: :data:`DEFAULT_URL_COMPARISON`)."""
    ignored = request_ignore_fields(boundary) if ignore_fields is None else frozenset(ignore_fields)
    best: NearestRequest | None = None
    for position, recorded in enumerate(candidates[:cap]):
        limit = None if best is None else best.differences - 1  # a tie does not win
        differences = request_differences(
            recorded, incoming, boundary=boundary, ignore_fields=ignored, limit=limit, url=url
        )
        if best is None or differences < best.differences:
            best = NearestRequest(position, differences)
            if differences == 0:
                break
    return best


def request_differences(
    recorded: dict[str, Any],
    incoming: dict[str, Any],
    *,
    boundary: str,
    ignore_fields: Iterable[str] | None = None,
    limit: int | None = None,
    url: UrlComparison | None = None,
) -> int:
    """How many leaf paths two requests of ``boundary`` (their sections, both redacted)
    differ at, summed over the sections. ``ignore_fields``: what the comparison leaves out
    (None: the boundary's non-deterministic fields only). Counting stops as soon as the sum
    passes ``limit`` (the result is then above it). ``url``: how an HTTP call's URL is
    compared (None: :data:`DEFAULT_URL_COMPARISON`)."""
    ignored = request_ignore_fields(boundary) if ignore_fields is None else frozenset(ignore_fields)
    url = _url_rule(boundary, url)
    total = 0
    for section in ignore_rules(ignored).compared_sections(request_sections(boundary)):
        remaining = None if limit is None else limit - total
        total += count_differences(
            _section(recorded, section, url),
            _section(incoming, section, url),
            ignore_fields=ignored,
            path=section,
            limit=remaining,
        )
        if limit is not None and total > limit:
            break
    return total
