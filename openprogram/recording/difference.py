"""Find the first difference between a recorded request and an incoming one.

The data compared is JSON-like: dicts with string keys, lists (tuples count as lists), str,
int, float, bool and None. The rules:

- dicts are walked by sorted key and lists by index, so one pair always reports one path;
- ``True``, ``1`` and ``1.0`` are three different values, but NaN equals NaN;
- an absent key equals an explicit ``None``, so an optional field added later does not break
  old recordings; a key present on one side only reports the other side as :data:`MISSING`,
  and so does the first extra item of a longer list;
- any other change of type is reported where it happens, with both whole values.

Two HTTP bodies stored whole (``body_text``, ``body_base64``) are not JSON the walk can go into:
their difference is named by the part of a multipart body that differs (``body[part "model"]``,
:mod:`~openprogram.recording.multipart_bodies`), and a ``body_base64`` is shown decoded.

Field paths read ``context.messages[2].content[0].text``: ``.key`` for keys made of ASCII
letters, digits, ``_`` and ``-``, ``["key"]`` (JSON-quoted) for any other key, ``[3]`` for a
list index, and no leading dot on a plain key at the root. A difference at the root itself
has the starting path, ``""`` by default.

``ignore_fields`` holds field names (by default :data:`NON_DETERMINISTIC_FIELD_NAMES`, the
fields that change from run to run), skipped at any depth, and field paths (entries with a
``.`` or a ``[``), skipped where the path matches exactly; in a path ``[*]`` matches any list
index and a ``*`` segment any key: ``context.messages[*].timestamp``, ``options.metadata.*``.

:func:`count_differences` counts, under the same rules, the leaf paths two values differ at:
how far apart two requests are, where :func:`find_first_difference` says where they part.

The module also holds how a value or a path is shown on a report line (:func:`format_report_value`,
:func:`format_report_path`), and the names of the two ways replay pairs a request with a recorded
call (:data:`MATCHINGS`: ``content``, ``order``; see :mod:`~openprogram.recording.replay_session`),
which the configuration checks without loading replay."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from itertools import compress, count
from operator import is_not
from typing import Any, Final, Literal, NamedTuple

from openprogram.recording.multipart_bodies import BODY_SECTIONS, body_difference
from openprogram.recording.report import MISSING

__all__ = [
    "DEFAULT_MATCHING",
    "MATCHINGS",
    "NON_DETERMINISTIC_FIELD_NAMES",
    "Difference",
    "IgnoreRules",
    "Matching",
    "check_matching",
    "count_differences",
    "find_first_difference",
    "ignore_rules",
    "join_field_path",
]


NON_DETERMINISTIC_FIELD_NAMES: frozenset[str] = frozenset({"timestamp"})
"""Field names skipped at any depth in a provider call's request and events (a message's
creation time): what a comparison leaves out unless told otherwise."""


class Difference(NamedTuple):
    """Where two requests first differ, and the value each side has there."""

    field_path: str
    recorded: Any
    incoming: Any


_PLAIN_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_TYPES: Final = frozenset({str, int, float, bool, type(None)})


@lru_cache(maxsize=4096)
def _key_suffix(key: str) -> str:
    """``.key`` for a plain key, ``["key"]`` for any other; cached, keys repeat a lot."""
    if _PLAIN_KEY.fullmatch(key) is not None:
        return f".{key}"
    return f"[{json.dumps(key, ensure_ascii=False)}]"


def _key_segment(key: str, *, at_root: bool) -> str:
    suffix = _key_suffix(key)
    return suffix.removeprefix(".") if at_root else suffix


def join_field_path(base: str, key: str | int) -> str:
    """Append a dict key or a list index to a field path, in the report's path syntax."""
    if isinstance(key, str):
        return base + _key_segment(key, at_root=not base)
    return f"{base}[{key:d}]"


def find_first_difference(
    recorded: Any,
    incoming: Any,
    *,
    ignore_fields: Iterable[str] = NON_DETERMINISTIC_FIELD_NAMES,
    path: str = "",
) -> Difference | None:
    """Return the first :class:`Difference` between two JSON-like values, or None.

    ``path`` is the field path of the two values themselves; reported paths start with it.
    Raises ValueError for an ignore path that cannot be read."""
    if isinstance(ignore_fields, str):
        raise TypeError("ignore_fields must be a collection of strings, not one string")
    names, paths = _compile_ignore_fields(frozenset(ignore_fields))
    if recorded is incoming or (paths is not None and paths.fullmatch(path) is not None):
        return None
    difference = _Walker(names, paths).compare(recorded, incoming, path)
    if difference is not None and difference.field_path in BODY_SECTIONS:
        return Difference(*body_difference(*difference))
    return difference


class _Walker:
    """One comparison: the ignore rules, and the recursive walk that applies them.

    The loops test equal scalars inline, before any child path is built: this runs on every
    replayed request, and most of a request is equal leaves."""

    __slots__ = ("_names", "_paths")

    def __init__(self, names: frozenset[str], paths: re.Pattern[str] | None) -> None:
        self._names = names
        self._paths = paths

    def compare(self, recorded: Any, incoming: Any, path: str) -> Difference | None:
        if isinstance(recorded, dict):
            if isinstance(incoming, dict):
                return self._compare_dicts(recorded, incoming, path)
        elif isinstance(recorded, list | tuple):
            if isinstance(incoming, list | tuple):
                return self._compare_sequences(recorded, incoming, path)
        elif _same_scalar(recorded, incoming):
            return None
        return Difference(path, recorded, incoming)

    def _compare_dicts(
        self, recorded: dict[str, Any], incoming: dict[str, Any], path: str
    ) -> Difference | None:
        names = self._names
        paths = self._paths
        for key in sorted(recorded.keys() | incoming.keys()):
            old = recorded.get(key)
            new = incoming.get(key)
            # The same object twice; or None beside None or an absent key.
            if old is new or key in names:
                continue
            kind = type(old)
            # Only a float NaN is unequal to itself (see _same_scalar).
            if (
                kind is type(new)
                and kind in _SCALAR_TYPES
                and (old == new or (old != old and new != new))
            ):
                continue
            suffix = _key_suffix(key)
            child = path + suffix if path else suffix.removeprefix(".")
            if paths is not None and paths.fullmatch(child) is not None:
                continue
            if old is None and key not in recorded:
                old = MISSING
            if new is None and key not in incoming:
                new = MISSING
            difference = self.compare(old, new, child)
            if difference is not None:
                return difference
        return None

    def _compare_sequences(
        self,
        recorded: list[Any] | tuple[Any, ...],
        incoming: list[Any] | tuple[Any, ...],
        path: str,
    ) -> Difference | None:
        paths = self._paths
        # The items both hold as the same objects first, found without a Python loop: the
        # conversation a replayed request repeats is the recorded call's own items.
        shorter = min(len(recorded), len(incoming))
        first = next(compress(count(), map(is_not, recorded, incoming)), shorter)
        for index in range(first, shorter):
            old, new = recorded[index], incoming[index]
            if old is new:
                continue
            kind = type(old)
            if (
                kind is type(new)
                and kind in _SCALAR_TYPES
                and (old == new or (old != old and new != new))
            ):
                continue
            child = f"{path}[{index}]"
            if paths is not None and paths.fullmatch(child) is not None:
                continue
            difference = self.compare(old, new, child)
            if difference is not None:
                return difference
        if len(recorded) == len(incoming):
            return None
        for index in range(min(len(recorded), len(incoming)), max(len(recorded), len(incoming))):
            child = f"{path}[{index}]"
            if paths is not None and paths.fullmatch(child) is not None:
                continue
            old = recorded[index] if index < len(recorded) else MISSING
            new = incoming[index] if index < len(incoming) else MISSING
            return Difference(child, old, new)
        return None


def _same_scalar(recorded: Any, incoming: Any) -> bool:
    """Equal values of one type; two float NaNs count as equal (x != x only for NaN)."""
    return type(recorded) is type(incoming) and (
        recorded == incoming or (recorded != recorded and incoming != incoming)
    )


def count_differences(
    recorded: Any,
    incoming: Any,
    *,
    ignore_fields: Iterable[str] = NON_DETERMINISTIC_FIELD_NAMES,
    path: str = "",
    limit: int | None = None,
) -> int:
    """How many leaf paths two JSON-like values differ at, under the rules of
    :func:`find_first_difference` (0 exactly when it finds none).

    Each differing scalar counts once; so does a key or a list item one side lacks, and a change of
    type, whatever the subtree under it holds. Counting stops as soon as it passes ``limit``: the
    result is then ``limit + 1``. Raises ValueError for an ignore path that cannot be read."""
    if isinstance(ignore_fields, str):
        raise TypeError("ignore_fields must be a collection of strings, not one string")
    rules = ignore_rules(ignore_fields)
    if recorded is incoming or rules.skips(path):
        return 0
    counter = _Counter(rules, -1 if limit is None else limit)
    with contextlib.suppress(_LimitPassed):
        counter.count(recorded, incoming, path)
    return counter.found


class _LimitPassed(Exception):
    """Raised by a :class:`_Counter` whose count passed its limit, to stop the walk."""


class _Counter:
    """One count: the walk of :class:`_Walker`, carrying on past each difference."""

    __slots__ = ("_limit", "_names", "_paths", "found")

    def __init__(self, rules: IgnoreRules, limit: int) -> None:
        self._names = rules.names
        self._paths = rules.paths
        self._limit = limit
        self.found = 0

    def _add(self) -> None:
        self.found += 1
        if self.found == self._limit + 1:
            raise _LimitPassed

    def count(self, recorded: Any, incoming: Any, path: str) -> None:
        if isinstance(recorded, dict):
            if isinstance(incoming, dict):
                self._count_dicts(recorded, incoming, path)
                return
        elif isinstance(recorded, list | tuple):
            if isinstance(incoming, list | tuple):
                self._count_sequences(recorded, incoming, path)
                return
        elif _same_scalar(recorded, incoming):
            return
        self._add()

    def _count_dicts(self, recorded: dict[str, Any], incoming: dict[str, Any], path: str) -> None:
        names = self._names
        paths = self._paths
        for key in recorded.keys() | incoming.keys():
            old = recorded.get(key)
            new = incoming.get(key)
            if old is new or key in names:
                continue
            kind = type(old)
            if (
                kind is type(new)
                and kind in _SCALAR_TYPES
                and (old == new or (old != old and new != new))
            ):
                continue
            child = join_field_path(path, key)
            if paths is not None and paths.fullmatch(child) is not None:
                continue
            if old is None or new is None:
                self._add()  # present on one side only: one missing subtree
            else:
                self.count(old, new, child)

    def _count_sequences(
        self,
        recorded: list[Any] | tuple[Any, ...],
        incoming: list[Any] | tuple[Any, ...],
        path: str,
    ) -> None:
        paths = self._paths
        common = min(len(recorded), len(incoming))
        for index in range(max(len(recorded), len(incoming))):
            if index < common:
                old = recorded[index]
                new = incoming[index]
                kind = type(old)
                if old is new or (
                    kind is type(new)
                    and kind in _SCALAR_TYPES
                    and (old == new or (old != old and new != new))
                ):
                    continue
            child = f"{path}[{index}]"
            if paths is not None and paths.fullmatch(child) is not None:
                continue
            if index < common:
                self.count(old, new, child)
            else:
                self._add()  # an item one side lacks: one missing subtree


# --- ignore_fields -------------------------------------------------------------------------

_QUOTED: Final = r'"(?:[^"\\]|\\.)*"'
_ANY_KEY_AT_ROOT: Final = rf"(?:[A-Za-z0-9_-]+|\[{_QUOTED}\])"
_ANY_KEY: Final = rf"(?:\.[A-Za-z0-9_-]+|\[{_QUOTED}\])"
_ANY_INDEX: Final = r"\[[0-9]+\]"
_IGNORE_PATH_TOKEN: Final = re.compile(
    rf"""
      (?P<any_index>\[\*\])
    | \[(?P<index>[0-9]+)\]
    | \[(?P<quoted>{_QUOTED})\]
    | (?P<dot>\.)?(?P<name>[^.\[]+)
    """,
    re.VERBOSE | re.DOTALL,
)


class IgnoreRules(NamedTuple):
    """``ignore_fields`` compiled: the names skipped at any depth, and one pattern matching
    every ignored field path (None when there is none)."""

    names: frozenset[str]
    paths: re.Pattern[str] | None

    def skips(self, field_path: str) -> bool:
        """Whether the value at ``field_path`` is left out (by path; names are checked on
        the key itself)."""
        return self.paths is not None and self.paths.fullmatch(field_path) is not None

    def compared_sections(self, sections: Iterable[str]) -> tuple[str, ...]:
        """The request ``sections`` compared: a section is a key like any other, so a name
        (``url``, ``headers``) or a path naming it leaves it out whole."""
        return tuple(
            section for section in sections if section not in self.names and not self.skips(section)
        )


def ignore_rules(ignore_fields: Iterable[str]) -> IgnoreRules:
    """``ignore_fields`` compiled (cached); ValueError for a path that cannot be read."""
    return IgnoreRules(*_compile_ignore_fields(frozenset(ignore_fields)))


@lru_cache(maxsize=64)
def _compile_ignore_fields(
    entries: frozenset[str],
) -> tuple[frozenset[str], re.Pattern[str] | None]:
    """Split entries into field names and one pattern matching all the field paths."""
    names = frozenset(entry for entry in entries if "." not in entry and "[" not in entry)
    sources = sorted(_ignore_path_source(entry) for entry in entries - names)
    if not sources:
        return names, None
    return names, re.compile("|".join(f"(?:{source})" for source in sources), re.DOTALL)


def _ignore_path_source(entry: str) -> str:
    """Translate one ignore path into a regular expression over report field paths."""
    pieces: list[str] = []
    position = 0
    while position < len(entry):
        at_root = position == 0
        token = _IGNORE_PATH_TOKEN.match(entry, position)
        if token is None or (token["name"] is not None and (token["dot"] is None) != at_root):
            raise ValueError(
                f"cannot read ignore path {entry!r} at character {position + 1}: "
                'write it like context.messages[*].timestamp or options["a key"].*'
            )
        if token["any_index"] is not None:
            pieces.append(_ANY_INDEX)
        elif token["index"] is not None:
            pieces.append(re.escape(f"[{int(token['index'])}]"))
        elif token["name"] == "*":
            pieces.append(_ANY_KEY_AT_ROOT if at_root else _ANY_KEY)
        else:
            key = token["name"] if token["quoted"] is None else json.loads(token["quoted"])
            pieces.append(re.escape(_key_segment(key, at_root=at_root)))
        position = token.end()
    return "".join(pieces)


Matching = Literal["content", "order"]
MATCHINGS: tuple[Matching, ...] = ("content", "order")
DEFAULT_MATCHING: Matching = "content"


def check_matching(match: str | None) -> Matching:
    """``match`` if it names a matching (None: :data:`DEFAULT_MATCHING`); else ValueError."""
    if match is None:
        return DEFAULT_MATCHING
    if match == "content":
        return "content"
    if match == "order":
        return "order"
    raise ValueError(f"unknown matching {match!r}: replay matches calls by 'content' or 'order'")
