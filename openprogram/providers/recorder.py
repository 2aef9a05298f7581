"""Recording: a provider that writes each request and event to disk, then passes it on.

:class:`RecordingProvider` wraps the provider it replaces and is otherwise transparent: it
writes each event as one whole line, *then* yields it, so a crash loses at most the call in
flight. Every ``RecordingProvider`` writing to the same path in one process shares one
:class:`~openprogram.providers.recording_writer.RecordingWriter`, so all apis form one call
sequence; how writers in several threads and processes share a file, survive a crashed
writer and follow a replaced file is told in ``recording_writer``.

A request or event a recording cannot hold (a non-finite number, nesting deeper than the
reader accepts) raises :class:`~openprogram.providers.recordable.UnrecordableValueError`: a
request before the call goes out, with nothing written; an event as it arrives, and the call
then ends with outcome ``error`` holding that error.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal

from openprogram.providers.api_registry import ApiProvider
from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)
from openprogram.providers.recordable import UnrecordableValueError, check_recordable
from openprogram.providers.recording import Outcome, dump_request
from openprogram.providers.recording_writer import OpenRecording, RecordingWriter
from openprogram.providers.redaction import SecretRedactor
from openprogram.providers.types import (
    Context,
    Model,
    SimpleStreamOptions,
    StreamOptions,
)

__all__ = [
    "RecordingProvider",
    "RecordingWriter",
    "UnrecordableValueError",
    "close_recording_writers",
    "forget_writer",
    "writer_for",
]

_writers: dict[str, RecordingWriter] = {}
_writers_lock = threading.Lock()


def writer_for(path: str | os.PathLike[str]) -> RecordingWriter:
    """The one writer this process uses for ``path``."""
    resolved = Path(path).resolve()
    with _writers_lock:
        writer = _writers.get(str(resolved))
        if writer is None:
            writer = _writers[str(resolved)] = RecordingWriter(resolved)
        return writer


def forget_writer(path: str | os.PathLike[str]) -> None:
    """Close and drop the writer for ``path`` (a harness done with one recording)."""
    resolved = str(Path(path).resolve())
    with _writers_lock:
        writer = _writers.pop(resolved, None)
    if writer is not None:
        writer.close()


def close_recording_writers() -> None:
    """Close every writer (tests; a process that exits needs not call it)."""
    with _writers_lock:
        for writer in _writers.values():
            writer.close()
        _writers.clear()


def exception_type_name(error: BaseException) -> str:
    cls = type(error)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )


class RecordingProvider:
    """Records every call to ``real_provider`` into the recording at ``path``."""

    def __init__(self, real_provider: ApiProvider, path: str | os.PathLike[str]) -> None:
        self.real_provider = real_provider
        self.path = Path(path)
        self.writer = writer_for(path)

    @property
    def requires_credentials(self) -> bool:
        return self.real_provider.requires_credentials

    @property
    def api_key_env(self) -> str | None:
        env = getattr(self.real_provider, "api_key_env", None)
        return env if isinstance(env, str) else None

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._record("stream", model, context, options or StreamOptions())

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._record("stream_simple", model, context, options or SimpleStreamOptions())

    async def _record(
        self,
        method: Literal["stream", "stream_simple"],
        model: Model,
        context: Context,
        options: StreamOptions,
    ) -> AsyncIterator[AssistantMessageEvent]:
        # Before the dump, which would turn a NaN in a free-form field into None unseen.
        check_recordable(str(self.path), {"model": model, "context": context, "options": options})
        redactor = SecretRedactor.for_request(options.api_key)
        request = redactor.redact_request(dump_request(model, context, options))
        call_index, file = self.writer.begin_call(request, checked=True)
        log = _CallLog(self.writer, file, call_index, redactor)
        try:
            source = getattr(self.real_provider, method)(model, context, options)
            events = source.__aiter__()
        except Exception as exc:  # a provider that fails before streaming anything
            log.end("error", error=exc)
            raise
        exhausted = False
        try:
            while True:
                try:
                    event = await events.__anext__()
                except StopAsyncIteration:
                    exhausted = True
                    log.end("complete")
                    return
                except asyncio.CancelledError:
                    log.end("cancelled")
                    raise
                except Exception as exc:
                    exhausted = True
                    log.end("error", error=exc)
                    raise
                try:
                    log.event(event)
                except UnrecordableValueError as exc:
                    log.end("error", error=exc)
                    raise
                terminal = isinstance(event, DoneEvent | ErrorEvent)
                if terminal:
                    # The call is complete as soon as its last event is on disk, whether or
                    # not the consumer reads on to the end of the stream.
                    log.end("complete")
                yield event
                if terminal:
                    return
        except asyncio.CancelledError:
            log.end("cancelled")
            raise
        finally:
            log.end("abandoned")  # no-op when the call already ended
            # Only close what can be closed: a plain async iterator has no aclose().
            close = getattr(source, "aclose", None)
            if not exhausted and close is not None:
                await close()


class _CallLog:
    """The rows of one recorded call: its events, then exactly one ``call_end``."""

    def __init__(
        self,
        writer: RecordingWriter,
        file: OpenRecording,
        call_index: int,
        redactor: SecretRedactor,
    ) -> None:
        self.writer = writer
        self.file: OpenRecording | None = file
        self.call_index = call_index
        self.redactor = redactor
        self.count = 0
        self.ended = False

    def event(self, event: AssistantMessageEvent) -> None:
        self.writer.write_row(
            {
                "type": "event",
                "call_index": self.call_index,
                "event_index": self.count,
                "event": self.event_payload(event),
            },
            self.file,
            checked=True,  # a delta holds one string; other events were checked as objects
        )
        self.count += 1

    def event_payload(self, event: AssistantMessageEvent) -> dict[str, Any]:
        """The event's JSON form, redacted as model output. Deltas — most of a stream — take
        a short path: their only free text is ``delta``."""
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
            return {
                "type": event.type,
                "content_index": event.content_index,
                "delta": self.redactor.redact_text(event.delta),
            }
        check_recordable(str(self.writer.path), {"event": event}, call_index=self.call_index)
        payload: dict[str, Any] = self.redactor.redact_model_output(event.model_dump(mode="json"))
        return payload

    def end(self, outcome: Outcome, *, error: BaseException | None = None) -> None:
        if self.ended:
            return
        self.ended = True
        row: dict[str, Any] = {
            "type": "call_end",
            "call_index": self.call_index,
            "event_count": self.count,
            "outcome": outcome,
        }
        if error is not None:
            row["error"] = {
                "type": exception_type_name(error),
                "message": self.redactor.redact_text(str(error)),
            }
        self.writer.write_row(row, self.file)
        self.file = None  # the call's rows are all written: let go of its file
