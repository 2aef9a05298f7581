"""The loopback server the activation tests talk to, and a check that no test leaves a
process-wide registry scope or an HTTP boundary active."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openprogram.http_boundary.boundary import active_http_boundary
from openprogram.providers import registry as scopes
from tests.support.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _nothing_left_active() -> Iterator[None]:
    assert active_http_boundary() is None
    assert scopes.current_scope() is scopes.PROCESS_SCOPE
    yield
    assert active_http_boundary() is None, "a test left an HTTP boundary active"
    assert scopes.current_scope() is scopes.PROCESS_SCOPE, "a test left a scope active"
