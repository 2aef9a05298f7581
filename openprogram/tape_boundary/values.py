"""What a tape can hold: arguments and results as JSON values, and results rebuilt on replay.

A tape stores JSON values, so that replay hands back exactly what the recorded run saw:

* **Arguments** are stored by parameter name, as the call passed them (defaults it did not
  pass are not filled in). They may be JSON values — ``dict`` with ``str`` keys, ``list``,
  ``str``, ``int`` within 64 bits, finite ``float``, ``bool``, ``None`` — and, since they
  are only compared, never handed back, also tuples (stored as lists) and pydantic models
  (stored as their JSON dump). A first parameter called ``self`` or ``cls`` is left out.
* **Results** that are JSON values are stored as they are and replayed as they are. Any
  other result — a pydantic model, a list of them, a tuple, a ``datetime`` — is stored as
  its JSON form through the function's *return annotation* (pydantic's ``TypeAdapter``)
  and rebuilt through it on replay (the row says ``"typed": true``); a function returning
  one without a return annotation that describes it is refused.

Anything else — NaN or infinities (JSON has none), integers beyond 64 bits, sets, bytes,
other objects — raises :class:`TapeValueError` at record time, naming the tape and the field,
before anything is written.

An exception a taped function raised is recorded and raised again on replay: the tape stores
the exception's type (``ValueError`` for a built-in, ``module.QualName``
for another) and its message, redacted. Replay raises the same type with that message when
it can: a built-in, or a class of a module the replaying process has already imported (a
recording never makes replay import a module), whose constructor takes the message. Otherwise
it raises :class:`RecordedTapeError`, which carries the recorded type name."""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Callable
from typing import Any, Final

from pydantic import TypeAdapter

from openprogram.errors import RecordedTapeError, TapeValueError
from openprogram.recording.difference import join_field_path
from openprogram.recording.format import RecordedError

__all__ = ["json_arguments", "json_result", "plain_json_problem", "rebuilt_exception"]

_INT64: Final = range(-(2**63), 2**64)

_RESULT_ADVICE: Final = (
    "return JSON values (dict, list, str, int, float, bool, None), or annotate the "
    "function's return type so the result can be rebuilt (a pydantic model, a tuple, a date)"
)


def plain_json_problem(value: Any, path: str) -> tuple[str, str] | None:
    """Where and why ``value`` is not a JSON value a recording holds faithfully: ``(field
    path, problem)``, or None. Walked without recursion."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        kind = type(item)
        if item is None or kind is bool or kind is str:
            continue
        if kind is int:
            if item not in _INT64:
                return where, f"is the integer {item}, beyond the 64 bits JSON readers keep"
        elif kind is float:
            if not math.isfinite(item):
                return where, f"is {item!r}, which JSON cannot hold"
        elif kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    return where, f"has the key {key!r}, and JSON keys are strings"
                stack.append((child, join_field_path(where, key)))
        elif kind is list:
            stack.extend((child, join_field_path(where, i)) for i, child in enumerate(item))
        else:
            return where, f"is a {kind.__qualname__}, which is not a JSON value"
    return None


def json_arguments(tape: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """``arguments`` as JSON (tuples as lists, pydantic models as their dump); raises
    :class:`TapeValueError` for anything else."""
    converted = _comparable(arguments)
    problem = plain_json_problem(converted, "args")
    if problem is not None:
        raise TapeValueError(
            tape,
            problem[0],
            problem[1],
            "pass JSON values, tuples or pydantic models, or tape a function that takes them",
        )
    assert isinstance(converted, dict)
    return converted


def _comparable(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_comparable(item) for item in value]
    dump = getattr(type(value), "model_dump", None)
    if dump is not None and callable(dump):
        return value.model_dump(mode="json")
    return value


def json_result(tape: str, value: Any, annotation: Callable[[], Any | None]) -> tuple[Any, bool]:
    """``value`` as a tape stores it, and whether it went through the return annotation
    (``annotation()``, None when the function has none). Raises :class:`TapeValueError`."""
    problem = plain_json_problem(value, "result")
    if problem is None:
        return value, False
    target = annotation()
    if target is None:
        raise TapeValueError(tape, problem[0], problem[1], _RESULT_ADVICE)
    try:
        converted = _adapter(target).dump_python(value, mode="json")
    except Exception as exc:
        raise TapeValueError(
            tape,
            "result",
            f"cannot be written through the return annotation {_name(target)} ({_first_line(exc)})",
            _RESULT_ADVICE,
        ) from None
    problem = plain_json_problem(converted, "result")
    if problem is not None:
        raise TapeValueError(tape, problem[0], problem[1], _RESULT_ADVICE)
    return converted, True


def rebuilt_result(tape: str, label: str, stored: Any, annotation: Any | None) -> Any:
    """A ``typed`` result rebuilt through the function's return annotation; raises
    :class:`TapeValueError` when the type no longer accepts it."""
    if annotation is None:
        raise TapeValueError(
            tape,
            "result",
            f"of {label} was recorded through a return annotation the function no longer has",
            "annotate the return type again, or record again",
        )
    try:
        return _adapter(annotation).validate_python(stored)
    except Exception as exc:
        raise TapeValueError(
            tape,
            "result",
            f"of {label} cannot be rebuilt as {_name(annotation)} ({_first_line(exc)})",
            "the type changed since it was recorded: record again",
        ) from None


_adapters: dict[int, tuple[Any, Any]] = {}


def _adapter(annotation: Any) -> Any:
    """pydantic's ``TypeAdapter`` of ``annotation``, made once (pydantic is imported only
    by a tape whose results need it)."""
    cached = _adapters.get(id(annotation))
    if cached is not None and cached[0] is annotation:
        return cached[1]

    adapter = TypeAdapter(annotation)
    _adapters[id(annotation)] = (annotation, adapter)
    return adapter


def _name(annotation: Any) -> str:
    return getattr(annotation, "__qualname__", None) or repr(annotation)


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__


def rebuilt_exception(recorded: RecordedError) -> BaseException:
    """An exception equivalent to the recorded one (see the module's docstring)."""
    cls = _exception_class(recorded.type)
    if cls is not None:
        try:
            return cls(recorded.message)
        except Exception:  # a constructor that wants other arguments
            pass
    return RecordedTapeError(recorded.type, recorded.message)


def _exception_class(name: str) -> type[Exception] | None:
    found = getattr(builtins, name, None) if "." not in name else _imported(name.split("."))
    if isinstance(found, type) and issubclass(found, Exception):
        return found
    return None


def _imported(parts: list[str]) -> object:
    """The object ``a.b.Outer.Error`` names, found from the longest prefix that is a module
    already imported; None when there is none."""
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            found: object = module
            for attribute in parts[cut:]:
                found = getattr(found, attribute, None)
            return found
    return None
