"""The provider boundary's side of the recording format: a provider call as rows, and back.

A provider call's request row holds ``model``, ``context`` and ``options``: the redacted
``model_dump(mode="json")`` of the call's arguments (:func:`dump_request`); its events are
``AssistantMessageEvent`` models. :func:`read_recording` is the strict reader of the core
(:mod:`openprogram.recording.reader`) that also decodes each provider call's events into
those models (``validate_events``), as replay needs them.

The format itself — rows, header, version, features, the parsed ``Recording`` — lives in
:mod:`openprogram.recording`; ``docs/recording-format.md`` is the full description.

What a provider call's request and events can hold is checked before they are recorded:
the checks live in :mod:`openprogram.recording.format` (kept importable from here);
:func:`check_recordable` here also walks into pydantic models — the ``Model``, ``Context``
and ``StreamOptions`` of a call, its events — field by field, as they appear in their JSON
dump, so a ``NaN`` is found before pydantic's dump can turn it into ``None`` unseen.

What replay compares of a call's arguments is dumped only as far as needed
(:class:`~openprogram.provider_boundary.replay.PendingProviderRequest`, whose module tells how)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from pydantic import BaseModel

from openprogram.recording import format as _core
from openprogram.recording.format import PROVIDER_EVENT_TYPES, PROVIDER_REQUEST_SECTIONS, Recording
from openprogram.recording.reader import EventFieldError, read_recording_bytes
from openprogram.recording.reader import parse_recording as parse_any_recording
from openprogram.recording.reader import read_recording as read_any_recording

if TYPE_CHECKING:
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.types import Context, Model, StreamOptions

__all__ = [
    "EVENT_TYPES",
    "REQUEST_SECTIONS",
    "check_recordable",
    "decode_provider_event",
    "dump_request",
    "model_fields",
    "parse_recording",
    "provider_event_decoder",
    "read_recording",
]


REQUEST_SECTIONS = PROVIDER_REQUEST_SECTIONS
"""A provider call's request sections, in the order replay compares them."""


EVENT_TYPES = PROVIDER_EVENT_TYPES
"""The event types a provider call may hold; ``events.AssistantMessageEvent`` is their union."""


def dump_request(model: Model, context: Context, options: StreamOptions) -> dict[str, Any]:
    """A call's arguments as a request row stores them (before redaction). Runtime-only
    options (the API key, the cancel signal, callbacks) are excluded by the model itself."""
    return {
        "model": model.model_dump(mode="json"),
        "context": context.model_dump(mode="json"),
        "options": options.model_dump(mode="json"),
    }


def decode_provider_event(payload: dict[str, Any]) -> AssistantMessageEvent:
    """A provider event's JSON form as its model; raises
    :class:`~openprogram.recording.reader.EventFieldError` naming the first bad field."""
    return provider_event_decoder()(payload)


def provider_event_decoder() -> Callable[[dict[str, Any]], AssistantMessageEvent]:
    """:func:`decode_provider_event` with its imports done once: the decoder the reader
    calls for every provider event of a recording."""
    # Imported here: the event models are costly to build, and summaries (list, status)
    # read recordings without them.
    from pydantic import ValidationError

    from openprogram.providers.events import EVENT_ADAPTER

    validate = EVENT_ADAPTER.validator.validate_python  # the core's, without the wrapper

    def decode(payload: dict[str, Any]) -> AssistantMessageEvent:
        try:
            return cast("AssistantMessageEvent", validate(payload))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"][1:]) or "event"
            raise EventFieldError(where, first["msg"]) from None

    return decode


def read_recording(path: str | os.PathLike[str], *, validate_events: bool = True) -> Recording:
    """Parse and check a whole recording; raises :class:`RecordingFileError` on any problem.

    With ``validate_events`` each provider call's events are also decoded into
    ``AssistantMessageEvent`` models (``RecordedCall.events``), as replay needs them.
    Accepts ``\\r\\n`` line ends and files of any permission mode. An incomplete last line
    (a write cut short) is ignored: the call it belonged to reads as truncated."""
    return parse_recording(path, read_recording_bytes(path), validate_events=validate_events)


def read_for_replay(path: Path) -> Recording:
    """The recording read strictly, as replay reads it; its provider calls' events decoded
    into the provider's event models only if it has provider calls (those models cost ~80 ms
    to import, which a process replaying only SDK calls need not pay at start-up)."""
    recording = read_any_recording(path)
    if "provider" not in recording.boundaries:
        recording.events_decoded = True  # every provider call's events (there are none)
        return recording
    return read_recording(path)


def parse_recording(
    path: str | os.PathLike[str], data: bytes, *, validate_events: bool = True
) -> Recording:
    """:func:`read_recording` on bytes already read from ``path`` (named in errors)."""
    decoder = provider_event_decoder() if validate_events else None
    return parse_any_recording(path, data, provider_events=decoder)


def model_fields(value: object) -> Iterable[tuple[str, Any]] | None:
    """A pydantic model's fields (None for anything else)."""
    return value.__dict__.items() if isinstance(value, BaseModel) else None


def check_recordable(path: str, value: Any, *, call_index: int | None = None) -> None:
    """:func:`openprogram.recording.format.check_recordable`, walking into pydantic
    models (``{"model": model, "context": context, "options": options}``)."""
    _core.check_recordable(path, value, call_index=call_index, fields_of=model_fields)
