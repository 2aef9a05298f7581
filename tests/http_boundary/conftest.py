"""The loopback server the HTTP boundary's tests talk to, and a check that every test
leaves no HTTP boundary active."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from openprogram.http_boundary.boundary import active_http_boundary
from tests.support.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _no_boundary_left_active() -> Iterator[None]:
    assert active_http_boundary() is None
    yield
    assert active_http_boundary() is None, "a test left an HTTP boundary active"
