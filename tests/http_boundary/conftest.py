"""The loopback server the HTTP boundary's tests talk to, a count of the requests aiohttp is
asked to send, and a check that every test leaves no HTTP boundary active."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from openprogram.http_boundary.boundary import active_http_boundary
from openprogram.http_boundary.patching import install_http_capture
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


@pytest.fixture
def aiohttp_sends(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The method of every request an aiohttp ``ClientSession`` is asked to send in the test
    (counted around the capture, which is installed first, so it stays in force)."""
    import aiohttp

    install_http_capture()
    sent: list[str] = []
    request = aiohttp.ClientSession._request

    def counted(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        sent.append(method)
        return request(self, method, *args, **kwargs)

    monkeypatch.setattr(aiohttp.ClientSession, "_request", counted)
    return sent
