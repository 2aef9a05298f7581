"""The loopback server the activation tests talk to, a recording of no call to replay, and a
check that no test leaves a process-wide registry scope or an HTTP boundary active."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import openprogram
from openprogram.http_boundary.boundary import active_http_boundary
from openprogram.providers import registry as scopes
from tests.support.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@pytest.fixture
def empty(tmp_path: Path) -> Path:
    """A recording that holds no call (replaying it asks for none)."""
    path = tmp_path / "empty.jsonl"
    with openprogram.record_replay(path, mode="record"):
        pass
    return path


@pytest.fixture(autouse=True)
def _nothing_left_active() -> Iterator[None]:
    assert active_http_boundary() is None
    assert scopes.current_scope() is scopes.PROCESS_SCOPE
    yield
    assert active_http_boundary() is None, "a test left an HTTP boundary active"
    assert scopes.current_scope() is scopes.PROCESS_SCOPE, "a test left a scope active"
