"""Replay: a provider that answers from a recording, offline.

:class:`ReplayProvider` wraps nothing and holds no HTTP client, so an agent loop driven by it
cannot reach the network. Each incoming request is redacted with the same rules as the
recording (and the recorded request re-redacted with the current rules), then compared with
the recorded request of the same ``call_index``: model, then context, then options. The
first difference raises :class:`ReplayMismatch`; a mismatch does not consume the call.
A matched call yields the recorded events; a recorded provider error is raised again after
them, as an equivalent exception.
"""

from __future__ import annotations

import asyncio
import builtins
import os
import threading
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

from openprogram.errors import OpenProgramError
from openprogram.plural import plural
from openprogram.providers.difference import NON_DETERMINISTIC_FIELD_NAMES, find_first_difference
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.mismatch import (
    RecordingTruncatedError,
    ReplayMismatch,
    UnconsumedCallsError,
    removed_secret_note,
)
from openprogram.providers.recording import (
    REQUEST_SECTIONS,
    RecordedCall,
    RecordedError,
    Recording,
    dump_request,
    read_recording,
)
from openprogram.providers.redaction import SecretRedactor
from openprogram.providers.types import Context, Model, SimpleStreamOptions, StreamOptions


class RecordedProviderError(OpenProgramError):
    """Replay of a recorded provider error whose type is not a Python built-in.

    ``original_type`` is the recorded type name; the message is the recorded message.
    """

    def __init__(self, original_type: str, message: str) -> None:
        self.original_type = original_type
        super().__init__(message)


def rebuild_error(recorded: RecordedError) -> BaseException:
    """An exception equivalent to the recorded one: the same built-in type, or a
    :class:`RecordedProviderError` carrying the recorded type name."""
    cls = getattr(builtins, recorded.type, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(recorded.message)
        except Exception:  # a built-in whose constructor wants other arguments
            pass
    return RecordedProviderError(recorded.type, recorded.message)


class ReplayProvider:
    """Serves the calls of the recording at ``path`` in order, from call 0.

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields left out of the comparison.
    """

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        ignore_fields: Iterable[str] = (),
        recording: Recording | None = None,
    ) -> None:
        """``recording``: the file as the caller already read it with ``read_recording(path)``
        (events validated), so it is not read twice."""
        self.path = Path(path)
        self.recording = recording if recording is not None else read_recording(self.path)
        self.ignore_fields = frozenset(NON_DETERMINISTIC_FIELD_NAMES) | frozenset(ignore_fields)
        self.mismatches: list[ReplayMismatch] = []
        """Every mismatch raised, kept so a harness can fail a test that swallowed one."""
        self._next_call = 0
        self._lock = threading.Lock()

    @property
    def calls_consumed(self) -> int:
        return self._next_call

    @property
    def unconsumed_calls(self) -> list[int]:
        return list(range(self._next_call, len(self.recording.calls)))

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested."""
        unconsumed = self.unconsumed_calls
        if unconsumed:
            raise UnconsumedCallsError(str(self.path), unconsumed, len(self.recording.calls))

    def stream(
        self, model: Model, context: Context, options: StreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._replay(model, context, options or StreamOptions())

    def stream_simple(
        self, model: Model, context: Context, options: SimpleStreamOptions | None = None
    ) -> AsyncIterator[AssistantMessageEvent]:
        return self._replay(model, context, options or SimpleStreamOptions())

    async def _replay(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        __tracebackhide__ = True  # pytest: show the test's line, not replay's internals
        call = self._take_call(model, context, options)
        for event in call.events:
            yield event
        if call.outcome is None:
            raise self._kept(
                RecordingTruncatedError(str(self.path), call.call_index, len(call.events))
            )
        if call.outcome == "error" and call.error is not None:
            raise rebuild_error(call.error)
        if call.outcome == "cancelled":
            raise asyncio.CancelledError()
        if call.outcome == "abandoned":
            # The recorded consumer stopped here; this one wants more than was recorded.
            raise self._kept(
                ReplayMismatch(
                    call.call_index,
                    "event_index",
                    len(call.events),
                    len(call.events) + 1,
                    event_index=len(call.events),
                    detail=(
                        f"the recorded consumer stopped reading after {len(call.events)} "
                        "events; this run reads further"
                    ),
                )
            )

    def _take_call(self, model: Model, context: Context, options: StreamOptions) -> RecordedCall:
        __tracebackhide__ = True
        redactor = SecretRedactor.for_request(options.api_key)
        incoming = redactor.redact_request(dump_request(model, context, options))
        with self._lock:
            index = self._next_call
            calls = self.recording.calls
            if index >= len(calls):
                raise self._kept(
                    ReplayMismatch(
                        index,
                        "call_index",
                        len(calls),
                        index,
                        detail=(
                            f"recorded {plural(len(calls), 'call')} (0..{len(calls) - 1}), "
                            f"incoming call {index}: the run makes more calls than the "
                            "recording holds"
                            if calls
                            else f"the recording holds no calls, incoming call {index}"
                        ),
                    )
                )
            call = calls[index]
            recorded = redactor.redact_request(call.request)  # re-redacted: the current rules
            for section in REQUEST_SECTIONS:
                difference = find_first_difference(
                    recorded[section],
                    incoming[section],
                    ignore_fields=self.ignore_fields,
                    path=section,
                )
                if difference is not None:
                    raise self._kept(
                        ReplayMismatch(
                            index,
                            difference.field_path,
                            difference.recorded,
                            difference.incoming,
                            note=removed_secret_note(incoming, calls[:index]),
                        )
                    )
            self._next_call = index + 1
            return call

    def _kept(self, mismatch: ReplayMismatch) -> ReplayMismatch:
        self.mismatches.append(mismatch)
        return mismatch
