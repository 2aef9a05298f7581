"""How a provider's answers drifted: typed shapes per JSON path, compared with a severity.

A response is compared with the one recorded by its *shape*, not its text, because a model
answers in other words each run. :class:`ShapeSummary` gathers the shape of any number of
JSON values — the body of a response, or every event of a stream — path by path:

* list items are merged into one item shape (``choices[*].delta.content``), so the number of
  choices, deltas or chunks does not matter;
* each path keeps the JSON types it held (``string``, ``number``, ``boolean``, ``object``,
  ``array``); ``null`` is not a type but optional (``delta.content`` is a string or null);
* each key keeps how many of its parent objects held it, so that "the recording always had
  it" is known (``usage`` that comes only in the last chunk was never always there);
* a field that names a kind (:data:`ENUM_FIELDS`: ``finish_reason``, ``type``, ``status``…)
  keeps the values it took;
* a tool call's arguments (:data:`ARGUMENT_FIELDS`: ``input``, ``args``, ``arguments``) are one
  value, not a shape: which tool the model chose, and so which keys its arguments hold, is
  the model's answer, not the provider's format (their keys are checked against the tool's
  schema instead, by :mod:`openprogram.drift.comparison`).

A stream is summarized per event type (:func:`stream_summary`): the shapes of ``message_delta``
events are compared with the recorded ``message_delta`` events, whatever their number.

:func:`shape_drift` compares a recorded summary with a live one and lists each drifted path
once, with its class:

* ``breaking`` — a field the recording always had is missing; a type outside the union the
  recording shows; a kind's value outside the set it shows; an event type no longer sent;
* ``additive`` — a new field, a new event type;
* ``content`` — the same shape holding other values (other text, other counts), never a
  field that changes from run to run anyway (:data:`PER_RUN_FIELDS`: ids, creation times)."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson

from openprogram.vendors import VENDOR_APIS

__all__ = [
    "ARGUMENT_FIELDS",
    "DRIFT_CLASSES",
    "ENUM_FIELDS",
    "PER_RUN_FIELDS",
    "DriftClass",
    "PathDrift",
    "ShapeSummary",
    "by_severity",
    "shape_drift",
    "stream_summary",
]

DriftClass = Literal["breaking", "additive", "content"]

DRIFT_CLASSES: Final[tuple[DriftClass, ...]] = ("breaking", "additive", "content")
"""The classes of drift, worst first."""

ENUM_FIELDS: Final = frozenset(
    {"reason", "type", "object", "status", "role"}.union(*(api.kind_fields for api in VENDOR_APIS))
)
"""Keys whose string value names a kind: a value the recording never shows is breaking."""

PER_RUN_FIELDS: Final = frozenset(
    {
        "id",
        "created",
        "created_at",
        "completed_at",
        "createTime",
        "timestamp",
        "responseId",
        "system_fingerprint",
        "latencyMs",
    }
)
"""Keys whose value differs on every run: never content drift (their type still counts)."""

ARGUMENT_FIELDS: Final = frozenset({"input", "args", "arguments"})
"""Keys whose object value is a tool call's arguments (Anthropic's and Bedrock's ``input``,
Gemini's ``args``): summarized as one value, never walked into."""

_VALUES_KEPT: Final = 64
"""The distinct values a path keeps for the content comparison; past it, values are not
compared (a path of free text differs anyway)."""

_ROOT: Final = "$"


def _json_type(value: Any) -> str | None:
    """The JSON type of ``value``; None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


@dataclass
class _PathShape:
    types: set[str] = field(default_factory=set)
    seen: int = 0
    """How many times a value (null included) stood at the path."""
    objects: int = 0
    """How many of those values were objects (the parents of the path's keys)."""
    values: set[Any] = field(default_factory=set)
    too_many_values: bool = False


@dataclass
class ShapeSummary:
    """The shape of the JSON values :meth:`add` was given, path by path."""

    paths: dict[str, _PathShape] = field(default_factory=dict)

    def add(self, value: Any, path: str = _ROOT, key: object = None) -> None:
        """Add the shape of ``value``, found at ``path`` (under the object key ``key``)."""
        shape = self.paths.get(path)
        if shape is None:
            shape = self.paths[path] = _PathShape()
        shape.seen += 1
        if value is None:  # null is optional, not a type or a value
            return
        if isinstance(value, dict):
            shape.types.add("object")
            if key in ARGUMENT_FIELDS:
                self._keep(shape, _json_text(value))
                return
            shape.objects += 1
            for name, item in value.items():
                self.add(item, _child(path, str(name)), name)
        elif isinstance(value, list):
            shape.types.add("array")
            if key in ARGUMENT_FIELDS:
                self._keep(shape, _json_text(value))
                return
            items = f"{path}[*]"
            for item in value:
                self.add(item, items)
        else:
            shape.types.add(_json_type(value) or "null")
            self._keep(shape, value)

    @staticmethod
    def _keep(shape: _PathShape, value: Any) -> None:
        if not shape.too_many_values:
            shape.values.add(value)
            if len(shape.values) > _VALUES_KEPT:
                shape.values.clear()
                shape.too_many_values = True


def _json_text(value: Any) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an integer beyond 64 bits: the reader keeps what JSON holds
        return repr(value)


@functools.lru_cache(maxsize=8192)
def _child(path: str, key: str) -> str:
    """The path of ``key`` under the object at ``path`` (asked again and again, per event)."""
    simple = key.replace("_", "").replace("-", "").isalnum()
    return f"{path}.{key}" if simple else f'{path}["{key}"]'


def _parent_and_key(path: str) -> tuple[str, str] | None:
    """The object path a key path belongs to, and the key; None for a list item or the root."""
    if path.endswith("[*]") or path == _ROOT:
        return None
    if path.endswith('"]'):
        start = path.rindex('["')
        return path[:start], path[start + 2 : -2]
    start = path.rindex(".")
    return path[:start], path[start + 1 :]


def stream_summary(events: Iterable[tuple[str | None, Any]]) -> dict[str, ShapeSummary]:
    """A summary per event type of a stream's events, each given as its SSE event name (or
    None) and its parsed data: the event name, else the data's ``type`` or ``object``, names
    its type (``-`` when nothing does)."""
    summaries: dict[str, ShapeSummary] = {}
    for name, data in events:
        kind = name
        if kind is None and isinstance(data, dict):
            named = data.get("type", data.get("object"))
            kind = named if isinstance(named, str) else None
        summaries.setdefault(kind or "-", ShapeSummary()).add(data)
    return summaries


@dataclass(frozen=True)
class PathDrift:
    """One drifted path: its class, what happened, and the recorded and live sides."""

    kind: DriftClass
    path: str
    what: str
    recorded: str
    live: str

    def line(self) -> str:
        return f"{self.kind}: {self.path} {self.what}: {self.recorded} → {self.live}"


def shape_drift(
    recorded: ShapeSummary | Mapping[str, ShapeSummary],
    live: ShapeSummary | Mapping[str, ShapeSummary],
) -> list[PathDrift]:
    """How ``live`` drifted from ``recorded``: two summaries, or two streams' summaries per
    event type. Breaking drift first, then additive, then content; each in path order."""
    if isinstance(recorded, ShapeSummary) and isinstance(live, ShapeSummary):
        found = _summary_drift(recorded, live, prefix="")
    else:
        if isinstance(recorded, ShapeSummary) or isinstance(live, ShapeSummary):
            raise TypeError("compare two summaries, or two streams' summaries per event type")
        found = []
        for kind in sorted(recorded.keys() | live.keys()):
            if kind not in live:
                found.append(PathDrift("breaking", kind, "event type no longer sent", kind, "—"))
            elif kind not in recorded:
                found.append(PathDrift("additive", kind, "new event type", "—", kind))
            else:
                found += _summary_drift(recorded[kind], live[kind], prefix=f"{kind}: ")
    return by_severity(found)


def by_severity(found: Iterable[PathDrift]) -> list[PathDrift]:
    """``found`` breaking first, then additive, then content (each kept in its order)."""
    return sorted(found, key=lambda drift: DRIFT_CLASSES.index(drift.kind))


def _summary_drift(recorded: ShapeSummary, live: ShapeSummary, *, prefix: str) -> list[PathDrift]:
    found: list[PathDrift] = []
    for path in sorted(recorded.paths.keys() | live.paths.keys()):
        before, after = recorded.paths.get(path), live.paths.get(path)
        parent, key = _parent_and_key(path) or (None, "")
        shown = prefix + _shown_path(path)
        if before is None:
            assert after is not None
            if parent in recorded.paths:  # a new key (the keys under it are not named again)
                found.append(PathDrift("additive", shown, "new field", "—", _types(after)))
            continue
        always = _always_there(recorded, path, parent)
        holder = None if parent is None else live.paths.get(parent)
        if after is None:
            if always and holder is not None and holder.objects:
                found.append(PathDrift("breaking", shown, "missing", _types(before), "—"))
            continue
        if always and holder is not None and after.seen < holder.objects:
            found.append(PathDrift("breaking", shown, "sometimes missing", "always", "sometimes"))
        if before.types and after.types - before.types:
            found.append(
                PathDrift("breaking", shown, "type changed", _types(before), _types(after))
            )
            continue
        if key in ENUM_FIELDS and not before.too_many_values:
            unseen = {value for value in after.values - before.values if isinstance(value, str)}
            if unseen:
                found.append(
                    PathDrift(
                        "breaking",
                        shown,
                        "value outside the recorded set",
                        _values(before.values),
                        _values(unseen),
                    )
                )
            continue  # a kind among the recorded ones is no drift
        if (
            key not in PER_RUN_FIELDS
            and not (before.too_many_values or after.too_many_values)
            and before.values != after.values
        ):
            found.append(
                PathDrift(
                    "content", shown, "other values", _values(before.values), _values(after.values)
                )
            )
    return found


def _shown_path(path: str) -> str:
    """A path as a report names it: from the value's top (``choices[*].finish_reason``),
    ``$`` for the value itself."""
    return path.removeprefix(f"{_ROOT}.") if path.startswith(f"{_ROOT}.") else path


def _always_there(summary: ShapeSummary, path: str, parent: str | None) -> bool:
    """Whether every object at ``parent`` held the key ``path`` ends in."""
    if parent is None:
        return False
    holder, shape = summary.paths.get(parent), summary.paths.get(path)
    return (
        holder is not None
        and shape is not None
        and holder.objects > 0
        and (shape.seen == holder.objects)
    )


def _types(shape: _PathShape) -> str:
    return " | ".join(sorted(shape.types)) or "null"


def _values(values: set[Any]) -> str:
    shown = sorted((repr(value) for value in values), key=str)
    return ", ".join(shown[:5]) + (", …" if len(shown) > 5 else "") if shown else "—"
