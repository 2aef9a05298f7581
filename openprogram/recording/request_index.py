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

__all__ = ["RequestIndex", "comparable_form", "request_digest"]

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
    ) -> None:
        """Index the ``calls`` made at ``boundary``, each request redacted by ``redactor``
        (the current rules, as the comparison re-redacts a recorded request)."""
        buckets: dict[bytes, deque[int]] = {}
        for call in calls:
            if call.boundary == boundary:
                digest = request_digest(redactor(call.request), boundary, rules)
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
