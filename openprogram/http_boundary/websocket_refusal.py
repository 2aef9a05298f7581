"""WebSocket connections, which a recording cannot hold: sent uncaptured when recording,
refused under replay and when blocked.

WebSocket APIs (OpenAI Realtime) do not pass through an HTTP exchange the boundary can record: the
``openai`` SDK opens them with the ``websockets`` package, and ``httpx2.websockets`` sends an
``Upgrade: websocket`` handshake through the client and then talks over the raw connection. While a
boundary is active, each attempt to open one goes through :func:`check_websocket`:

* record — it is opened as usual, uncaptured, and a warning is logged (a replay of the
  recording will refuse it);
* replay — it is refused before any socket is opened, as a mismatch at field ``boundary``
  (kept in the session's ``mismatches``), carried by ``RecordReplayEscape``;
* blocked — it is refused like every request.

Hooks: the ``Upgrade: websocket`` request in the capturing transport, the
``websockets.sync.client.connect`` function and the ``create_connection`` method of
``websockets.asyncio.client.connect`` (patched when the ``websockets`` package is imported,
as httpx and httpx2 are). A passthrough host is left alone."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from openprogram.errors import RecordReplayBlockedError, ReplayMismatch
from openprogram.http_boundary.boundary import ACTIVATIONS, HttpBoundary
from openprogram.recording.mismatch import RecordReplayEscape
from openprogram.recording.redaction import SecretRedactor

__all__ = ["check_websocket", "patch_async_websockets", "patch_sync_websockets"]

logger = logging.getLogger("openprogram")

_PATCH_MARK = "_openprogram_websocket_check"


def check_websocket(boundary: HttpBoundary, url: str) -> None:
    """Refuse opening a WebSocket to ``url`` under replay or a blocked boundary (raises
    ``RecordReplayEscape``); when recording, log that it is not recorded."""
    if _is_passthrough(boundary, url):
        return
    if boundary.mode == "blocked":
        raise RecordReplayEscape(RecordReplayBlockedError(boundary.blocked_reason or ""))
    shown = SecretRedactor().redact_text(url)
    if boundary.mode == "replay" and boundary.session is not None:
        session = boundary.session
        raise RecordReplayEscape(
            session.keep(
                ReplayMismatch(
                    session.calls_consumed,
                    "boundary",
                    "http",
                    "websocket",
                    detail=(
                        f"incoming a WebSocket connection ({shown}): WebSocket APIs such as "
                        "OpenAI Realtime are not recorded, so replay cannot serve them"
                    ),
                )
            )
        )
    logger.warning(
        "openprogram: the WebSocket connection to %s is not recorded (WebSocket APIs are "
        "not captured); replaying this session will refuse it",
        shown,
    )


def _is_passthrough(boundary: HttpBoundary, url: str) -> bool:
    hosts = boundary.passthrough_hosts
    if not hosts:
        return False
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    return host in hosts or f"{host}:{parts.port}" in hosts


def patch_sync_websockets(module: ModuleType) -> None:
    """Check ``websockets.sync.client.connect`` before it opens anything."""
    connect = getattr(module, "connect", None)
    if not callable(connect) or getattr(connect, _PATCH_MARK, False):
        return

    @functools.wraps(connect)
    def checked_connect(uri: str, *args: Any, **kwargs: Any) -> Any:
        boundary = ACTIVATIONS.current
        if boundary is not None:
            check_websocket(boundary, str(uri))
        return connect(uri, *args, **kwargs)

    setattr(checked_connect, _PATCH_MARK, True)
    module.connect = checked_connect  # type: ignore[attr-defined]


def patch_async_websockets(module: ModuleType) -> None:
    """Check each connection ``websockets.asyncio.client.connect`` (and any subclass of it,
    such as the ``openai`` SDK's) creates, before it is created."""
    cls = getattr(module, "connect", None)
    if not isinstance(cls, type) or _PATCH_MARK in cls.__dict__:
        return
    create: Callable[..., Any] | None = cls.__dict__.get("create_connection")
    if create is None:
        return

    @functools.wraps(create)
    async def create_connection(self: Any, *args: Any, **kwargs: Any) -> Any:
        boundary = ACTIVATIONS.current
        if boundary is not None:
            check_websocket(boundary, str(self.uri))
        return await create(self, *args, **kwargs)

    cls.create_connection = create_connection  # type: ignore[attr-defined]
    setattr(cls, _PATCH_MARK, True)
