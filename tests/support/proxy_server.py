"""``openprogram serve``'s server, run in a thread of the test's process, for the tests that
need a real socket but not a process of their own.

    with running_proxy(record=str(path), upstreams={"openai": sdk.base_url}) as proxy:
        client = openai.OpenAI(base_url=proxy.openai_url, api_key="sk-test")
        ...                   # a request naming a recording or session: headers=proxy.auth
    assert proxy.outcome.exit_status == 0   # the server's accounts, once it stopped
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.serving.running import (
    BackgroundServer,
    ServeOptions,
    ServeOutcome,
    open_sessions,
    server_plan,
)

__all__ = ["RunningProxy", "running_proxy"]


@dataclass
class RunningProxy:
    """A server listening at ``url``; ``outcome`` once it has stopped."""

    url: str
    token: str
    server: BackgroundServer
    outcome: ServeOutcome | None = field(default=None)

    @property
    def auth(self) -> dict[str, str]:
        """The header that names this server's client (its token)."""
        return {"x-openprogram-token": self.token}

    @property
    def openai_url(self) -> str:
        return f"{self.url}/openai/v1"

    @property
    def anthropic_url(self) -> str:
        return f"{self.url}/anthropic"

    def stop(self) -> ServeOutcome:
        if self.outcome is None:
            self.outcome = self.server.stop()
        return self.outcome


@contextmanager
def running_proxy(
    *,
    record: str | None = None,
    replay: str | None = None,
    upstreams: Mapping[str, str] | None = None,
    folder: Path | None = None,
    once: bool = False,
    **options: Any,
) -> Iterator[RunningProxy]:
    """A server recording into ``record``, replaying ``replay`` (``once``: as ``serve
    --once`` does), or neither (sessions only), forwarding to ``upstreams``; stopped when the
    block ends (its ``outcome`` set)."""
    plan, settings = server_plan(record=record, replay=replay)
    table = open_sessions(plan, folder, settings, once=once)
    serve = ServeOptions(port=0, upstreams=dict(upstreams or {}), folder=folder, **options)
    server = BackgroundServer(table, serve)
    listening = server.start()
    proxy = RunningProxy(listening.url, listening.token, server)
    try:
        yield proxy
    finally:
        proxy.stop()
