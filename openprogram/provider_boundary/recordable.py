"""What a provider call's request and events can hold, checked before they are recorded.

The checks live in :mod:`openprogram.recording.recordable` (kept importable from here);
:func:`check_recordable` here also walks into pydantic models — the ``Model``, ``Context``
and ``StreamOptions`` of a call, its events — field by field, as they appear in their JSON
dump, so a ``NaN`` is found before pydantic's dump can turn it into ``None`` unseen.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel

from openprogram.recording import recordable as _core

__all__ = ["check_recordable", "model_fields"]


def model_fields(value: object) -> Iterable[tuple[str, Any]] | None:
    """A pydantic model's fields (None for anything else)."""
    return value.__dict__.items() if isinstance(value, BaseModel) else None


def check_recordable(path: str, value: Any, *, call_index: int | None = None) -> None:
    """:func:`openprogram.recording.recordable.check_recordable`, walking into pydantic
    models (``{"model": model, "context": context, "options": options}``)."""
    _core.check_recordable(path, value, call_index=call_index, fields_of=model_fields)
