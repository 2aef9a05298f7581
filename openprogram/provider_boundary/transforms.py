"""The three registry transforms that switch record, replay or a refusal on at the provider
registry, whoever installs them on a scope: the configured mode at the runtime's start,
``record_replay()``, the pytest fixture, ``openprogram exec``.

* :func:`record_transform` wraps every registered api in a ``RecordingProvider`` writing to
  one recording (all of them share its one writer, so the process forms one call sequence);
* :func:`replay_transform` answers every api, registered or not, with one ``ReplayProvider``;
* :func:`blocked_transform` answers every api with one :class:`BlockedProvider`, which refuses
  every stream call with the same :class:`~openprogram.errors.RecordReplayBlockedError`:
  record/replay was asked for but could not start, and nothing falls through to a live
  provider."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

from openprogram.errors import RecordReplayBlockedError
from openprogram.provider_boundary.recorder import RecordingProvider
from openprogram.providers.types import StreamingProvider, StreamMethod

if TYPE_CHECKING:
    from openprogram.provider_boundary.replay import ReplayProvider
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.providers.registry import ApiProvider, RegistryTransform
    from openprogram.providers.types import Context, Model, StreamOptions

__all__ = ["BlockedProvider", "blocked_transform", "record_transform", "replay_transform"]


class BlockedProvider(StreamingProvider):
    """Answers every stream call with the same :class:`RecordReplayBlockedError`."""

    requires_credentials = False
    api_key_env: str | None = None

    def __init__(self, cause: str) -> None:
        self.cause = cause

    async def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        raise RecordReplayBlockedError(self.cause)
        yield  # pragma: no cover - makes this an async generator


def blocked_transform(cause: str) -> RegistryTransform:
    """Every api, registered or not, answered by one :class:`BlockedProvider`."""
    provider = BlockedProvider(cause)

    def answer_for_every_api(api: str, registered: ApiProvider | None) -> ApiProvider:
        return provider

    return answer_for_every_api


def record_transform(path: Path) -> RegistryTransform:
    """Every registered api wrapped in a ``RecordingProvider`` writing to ``path`` (all of
    them share the path's one writer, so they form one call sequence)."""

    def record_every_api(api: str, registered: ApiProvider | None) -> ApiProvider | None:
        # The registry keeps one wrapper per entry; every wrapper shares the path's writer.
        return None if registered is None else RecordingProvider(registered, path)

    return record_every_api


def replay_transform(provider: ReplayProvider) -> RegistryTransform:
    """Every api, registered in this process or not, answered by ``provider``."""

    def replay_every_api(api: str, registered: ApiProvider | None) -> ApiProvider:
        return provider

    return replay_every_api
