"""Replay: a provider that answers from a recording, offline.

:class:`ReplayProvider` wraps nothing and holds no HTTP client, so an agent loop driven by it
cannot reach the network. It serves provider calls from a
:class:`~openprogram.recording.replay_session.ReplaySession`: each incoming request is
redacted with the same rules as the recording (the recorded request redacted again when the
recording's rules are older), then paired with a recorded call — by default the earliest unconsumed
provider call whose request equals it (``match="content"``), or strictly the call of the
next ``call_index`` (``match="order"``) — comparing model, then context, then options. With
no equal request it raises :class:`ReplayMismatch` naming the first difference from the
nearest unconsumed call; a mismatch consumes no call. A matched call yields the recorded
events; a recorded provider error is raised again after them, as an equivalent exception.

A session may be shared with the HTTP boundary (``ReplayProvider(path, session=session)``):
both then take their calls from one recording.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from pathlib import Path

from openprogram.errors import (
    RecordedProviderError,
    RecordingTruncatedError,
    ReplayMismatch,
)
from openprogram.provider_boundary.codec import read_recording
from openprogram.provider_boundary.pending_request import PendingProviderRequest
from openprogram.providers.events import AssistantMessageEvent
from openprogram.providers.types import Context, Model, SimpleStreamOptions, StreamOptions
from openprogram.recording.difference import DEFAULT_MATCHING
from openprogram.recording.format import RecordedCall, RecordedError, Recording
from openprogram.recording.redaction import SecretRedactor
from openprogram.recording.replay_session import ReplaySession
from openprogram.recording.user_redaction import UserRedaction


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
    """Serves the provider calls of the recording at ``path``.

    ``ignore_fields`` adds field names (skipped at any depth) or dotted paths (``[*]`` for
    any index) to the non-deterministic fields left out of the comparison. ``match``:
    ``"content"`` (default) serves each request the earliest unconsumed call whose request
    equals it; ``"order"`` the next recorded call.
    """

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        ignore_fields: Iterable[str] = (),
        match: str = DEFAULT_MATCHING,
        recording: Recording | None = None,
        session: ReplaySession | None = None,
        redaction: UserRedaction | None = None,
        tools: Mapping[str, str] | None = None,
    ) -> None:
        """``recording``: the file as the caller already read it with ``read_recording(path)``
        (events validated), so it is not read twice. ``session``: a replay session to share
        with other boundaries (its recording read with the provider events decoded; ``path``,
        ``recording``, ``ignore_fields``, ``match``, ``redaction`` and ``tools`` are then the
        session's). ``redaction``: the user redaction applied to both sides of every
        comparison, as the recording was redacted with it. ``tools``: how the session's
        tapes treat each agent tool, by name or ``"*"`` (see
        :mod:`openprogram.recording.tape_replay`)."""
        if session is None:
            if path is None:
                raise TypeError("ReplayProvider needs the path of a recording, or a session")
            if recording is None:
                recording = read_recording(path)
            session = ReplaySession(
                recording,
                ignore_fields=ignore_fields,
                match=match,
                tools=tools,
                user_redaction=redaction,
            )
        elif not session.recording.events_decoded:
            raise ValueError(
                "ReplayProvider needs a session whose recording was read with its provider "
                "events decoded: openprogram.provider_boundary.codec.read_recording(path)"
            )
        self.session = session
        self.path = Path(path) if path is not None else session.path

    @property
    def recording(self) -> Recording:
        return self.session.recording

    @property
    def ignore_fields(self) -> frozenset[str]:
        """What a provider request is compared without."""
        return self.session.ignore_fields_for("provider")

    @property
    def match(self) -> str:
        """How requests are paired with recorded calls: ``content`` or ``order``."""
        return self.session.matching

    @property
    def mismatches(self) -> list[ReplayMismatch]:
        """Every mismatch raised, kept so a harness can fail a test that swallowed one."""
        return self.session.mismatches

    @property
    def calls_consumed(self) -> int:
        return self.session.calls_consumed

    @property
    def unconsumed_calls(self) -> list[int]:
        return self.session.unconsumed_calls

    def assert_consumed(self) -> None:
        """Raise :class:`UnconsumedCallsError` if recorded calls were never requested."""
        self.session.assert_consumed()

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
        redactor = SecretRedactor.for_request(options.api_key, user=self.session.user_redaction)
        call = self.session.take(
            "provider",
            PendingProviderRequest(model, context, options),
            redactor=redactor.redact_request,
            redaction=redactor.rules,
        )
        async for event in self.serve(call):
            yield event

    async def serve(self, call: RecordedCall) -> AsyncGenerator[AssistantMessageEvent, None]:
        """The recorded events of ``call`` (a provider call of this provider's session, already
        taken), then its recorded ending: an error raised again, a cancellation, or a
        mismatch for reading past where the recorded consumer stopped."""
        __tracebackhide__ = True
        for event in call.events:
            yield event
        if call.outcome is None:
            raise self.session.keep(
                RecordingTruncatedError(str(self.path), call.call_index, len(call.events))
            )
        if call.outcome == "error" and call.error is not None:
            raise rebuild_error(call.error)
        if call.outcome == "cancelled":
            raise asyncio.CancelledError()
        if call.outcome == "abandoned":
            # The recorded consumer stopped here; this one wants more than was recorded.
            raise self.session.keep(
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
