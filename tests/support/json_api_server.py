"""A loopback JSON API that is not a model: a tool's HTTP API, a package index, a local
model server's native API — whatever a test sends there, by ``GET`` or ``POST``, is answered
``{"ok": true, "method": …, "path": …}`` and kept in ``received``.

    with JsonApiServer() as server:
        requests.get(f"{server.base_url}/v1/weather?city=Paris").json()["ok"]
        assert server.received[0].method == "GET"
"""

from __future__ import annotations

import json

from tests.support.loopback_server import LoopbackHandler, LoopbackServer, Received

__all__ = ["JsonApiServer", "Received"]


class _Handler(LoopbackHandler):
    do_GET = LoopbackHandler.do_POST
    do_PUT = LoopbackHandler.do_POST


class JsonApiServer(LoopbackServer):
    """Answers every request with a small JSON object naming its method and path."""

    handler = _Handler

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        body = json.dumps({"ok": True, "method": received.method, "path": received.path})
        raw = body.encode()
        http.send_head(200, {"content-type": "application/json", "content-length": str(len(raw))})
        http.send_body(raw)
