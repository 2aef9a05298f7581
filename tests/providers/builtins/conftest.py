"""The loopback server every vendor test talks to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.sse_server import ScriptedServer


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running
