"""Recording: a provider that writes each request and event to disk, then passes it on.

:class:`RecordingProvider` wraps the provider it replaces and is otherwise transparent: it writes
each event as one whole line, *then* yields it, so a crash loses at most the call in flight. Every
recorder writing to the same path in one process — this one, and the HTTP boundary's — shares one
:class:`~openprogram.recording.writer.RecordingWriter` (:func:`writer_for`), so all apis and both
boundaries form one call sequence; how writers in several threads and processes share a file and
survive a crashed writer is told in :mod:`openprogram.recording.open_recording`, how they follow a
replaced file in :mod:`openprogram.recording.writer`.

A request or event a recording cannot hold (a non-finite number, nesting deeper than the
reader accepts) raises :class:`~openprogram.recording.format.UnrecordableValueError`: a
request before the call goes out, with nothing written; an event as it arrives, and the call
then ends with outcome ``error`` holding that error."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.errors import UnrecordableValueError
from openprogram.provider_boundary.codec import check_recordable, dump_request
from openprogram.providers.events import (
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    TextDeltaEvent,
    ThinkingDeltaEvent,
    ToolCallDeltaEvent,
)
from openprogram.providers.types import (
    Context,
    Model,
    StreamingProvider,
    StreamMethod,
    StreamOptions,
)
from openprogram.recording.format import Outcome
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.writer import CallWriter, recorded_error, writer_for

if TYPE_CHECKING:
    from openprogram.providers.registry import ApiProvider
    from openprogram.recording.user_redaction import UserRedaction

__all__ = ["RecordingProvider"]


class RecordingProvider(StreamingProvider):
    """Records every call to ``real_provider`` into the recording at ``path``.

    Every value is redacted by the built-in rules and by the user redaction of the path's
    writer (``writer.user_redaction``); ``redaction`` sets it (see
    :func:`~openprogram.recording.user_redaction.user_redaction_in_effect`)."""

    def __init__(
        self,
        real_provider: ApiProvider,
        path: str | os.PathLike[str],
        *,
        redaction: UserRedaction | None = None,
    ) -> None:
        self.real_provider = real_provider
        self.path = Path(path)
        self.writer = writer_for(path)
        if redaction is not None:
            self.writer.user_redaction = redaction
        self._checked_messages: dict[int, object] = {}
        """The messages of the last request checked, by id (held, so the ids stay theirs)."""

    def _check(self, model: Model, context: Context, options: StreamOptions) -> None:
        """Refuse a request a recording cannot hold, before it goes out. The messages the
        previous request of this recorder held (the same objects: an agent resends its
        history) were checked then and are not walked again, so a call costs what it adds."""
        checked = self._checked_messages
        messages = context.messages
        fresh = {
            index: message
            for index, message in enumerate(messages)
            if checked.get(id(message)) is not message
        }
        others = {name: value for name, value in context.__dict__.items() if name != "messages"}
        check_recordable(
            str(self.path),
            {"model": model, "context": {**others, "messages": fresh}, "options": options},
        )
        self._checked_messages = {id(message): message for message in messages}

    @property
    def requires_credentials(self) -> bool:
        return self.real_provider.requires_credentials

    @property
    def api_key_env(self) -> str | None:
        env = getattr(self.real_provider, "api_key_env", None)
        return env if isinstance(env, str) else None

    async def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        # Before the dump, which would turn a NaN in a free-form field into None unseen.
        self._check(model, context, options)
        redactor = SecretRedactor.for_request(options.api_key, user=self.writer.user_redaction)
        call = self.writer.open_call(
            dump_request(model, context, options),
            checked=True,
            redact=redactor.redact_request,
            redaction=redactor.rules,
        )
        log = _CallLog(call, redactor)
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
    """The rows of one recorded provider call: its events, redacted as model output, then
    exactly one ``call_end``."""

    def __init__(self, call: CallWriter, redactor: SecretRedactor) -> None:
        self.call = call
        self.redactor = redactor

    def event(self, event: AssistantMessageEvent) -> None:
        # A delta holds one string; other events were checked as objects.
        self.call.write_event(self.event_payload(event), checked=True)

    def event_payload(self, event: AssistantMessageEvent) -> dict[str, Any]:
        """The event's JSON form, redacted as model output. Deltas — most of a stream — take
        a short path: their only free text is ``delta``."""
        if isinstance(event, TextDeltaEvent | ThinkingDeltaEvent | ToolCallDeltaEvent):
            return {
                "type": event.type,
                "content_index": event.content_index,
                "delta": self.redactor.redact_text(event.delta),
            }
        check_recordable(
            str(self.call.writer.path), {"event": event}, call_index=self.call.call_index
        )
        payload: dict[str, Any] = self.redactor.redact_model_output(event.model_dump(mode="json"))
        return payload

    def end(self, outcome: Outcome, *, error: BaseException | None = None) -> None:
        """End the call (once: later ends are ignored)."""
        if self.call.ended:
            return
        recorded = None if error is None else recorded_error(error, self.redactor)
        self.call.end_call(outcome, error=recorded)
