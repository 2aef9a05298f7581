"""One HTTP exchange through a real httpx or httpx2 client, sync or async, as the tests of
the HTTP boundary send it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from openprogram.http_boundary.sse import SseParser
from tests.http_boundary.boundaries import library

MODES = ("sync", "async")


@dataclass
class Exchange:
    status: int
    headers: dict[str, str]
    body: bytes

    def events(self) -> list[dict[str, Any]]:
        """The server-sent events of the body."""
        parser = SseParser()
        return [*parser.feed(self.body.decode()), *parser.finish()]


def send(lib: str, mode: str, method: str, url: str, **options: Any) -> Exchange:
    """Send one request with a new client of ``lib`` (``httpx``/``httpx2``) in ``mode``
    (``sync``/``async``), reading the whole body as the client decodes it."""
    module = library(lib)
    timeout = options.pop("timeout", 5.0)
    if mode == "async":

        async def send_async() -> Exchange:
            async with (
                module.AsyncClient(timeout=timeout) as client,
                client.stream(method, url, **options) as response,
            ):
                body = b"".join([chunk async for chunk in response.aiter_bytes()])
                return Exchange(response.status_code, dict(response.headers), body)

        return asyncio.run(send_async())
    with (
        module.Client(timeout=timeout) as client,
        client.stream(method, url, **options) as response,
    ):
        return Exchange(response.status_code, dict(response.headers), response.read())
