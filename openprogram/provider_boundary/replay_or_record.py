"""A provider that replays a call its recording holds and records any other, live.

:class:`ReplayOrRecordProvider` stands in for one registered provider while a
:class:`~openprogram.recording.rewriting.RecordingMerge` is active (the pytest plugin's
``new_episodes`` mode): each request the recording holds an equal unconsumed call for is
answered from it, exactly as :class:`~openprogram.provider_boundary.replay.ReplayProvider` answers;
any other goes to the real provider through a
:class:`~openprogram.provider_boundary.recorder.RecordingProvider` writing to the merge's new file.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING

from openprogram.provider_boundary.codec import dump_request
from openprogram.provider_boundary.recorder import RecordingProvider
from openprogram.provider_boundary.replay import ReplayProvider
from openprogram.providers.types import (
    Context,
    Model,
    StreamingProvider,
    StreamMethod,
    StreamOptions,
)
from openprogram.recording.redaction import SecretRedactor

if TYPE_CHECKING:
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.registry import ApiProvider, RegistryTransform
    from openprogram.recording.rewriting import RecordingMerge

__all__ = ["ReplayOrRecordProvider", "replay_or_record_transform"]


class ReplayOrRecordProvider(StreamingProvider):
    """Replays from ``merge``'s recording what it holds; records the rest of the calls to
    ``real_provider`` into ``merge``'s writer."""

    def __init__(
        self, real_provider: ApiProvider, merge: RecordingMerge, replay: ReplayProvider
    ) -> None:
        self.merge = merge
        self.replay = replay
        self.recorder = RecordingProvider(real_provider, merge.writer.path)

    @property
    def requires_credentials(self) -> bool:
        return self.recorder.requires_credentials

    @property
    def api_key_env(self) -> str | None:
        return self.recorder.api_key_env

    async def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        __tracebackhide__ = True
        # Both sides are compared redacted as replay redacts them, the user's own rules
        # included: a recorded request holds the placeholder where the live one holds the
        # secret.
        redactor = SecretRedactor.for_request(
            options.api_key, user=self.merge.session.user_redaction
        )
        call = self.merge.take_recorded(
            "provider", dump_request(model, context, options), redactor=redactor.redact_request
        )
        if call is not None:
            async with aclosing(self.replay.serve(call)) as replayed:
                async for event in replayed:
                    yield event
            return
        live: AsyncIterator[AssistantMessageEvent] = getattr(self.recorder, method)(
            model, context, options
        )
        try:
            async for event in live:
                yield event
        finally:
            close = getattr(live, "aclose", None)  # ends the recorded call when cut short
            if close is not None:
                await close()


def replay_or_record_transform(merge: RecordingMerge) -> RegistryTransform:
    """Every registered api answered by a :class:`ReplayOrRecordProvider` on ``merge`` (an api
    registered nowhere stays unknown: it could neither have been recorded nor be recorded now)."""
    replay = ReplayProvider(merge.session.path, session=merge.session)

    def replay_or_record_every_api(api: str, registered: ApiProvider | None) -> ApiProvider | None:
        return None if registered is None else ReplayOrRecordProvider(registered, merge, replay)

    return replay_or_record_every_api
