"""The loopback :class:`~tests.support.sdk_server.SdkServer`, plus what a plain HTTP client and
an invalid request meet at the vendor: ``GET /v1/models`` answered with OpenAI's model list,
and a chat request whose ``temperature`` is above 2 refused with OpenAI's 400, as the API
refuses it — so an inner test can provoke an error without the outer test queueing a fault
in the order the inner tests happen to run.

    with ModelsSdkServer() as server:
        requests.get(server.openai_url + "/models")            # the model list
        client.chat.completions.create(..., temperature=3)     # openai.BadRequestError
"""

from __future__ import annotations

from typing import Any, ClassVar

from tests.support.loopback_server import LoopbackHandler, Received
from tests.support.sdk_server import ErrorReply, SdkServer

__all__ = ["MODELS", "ModelsSdkServer"]

MODELS = ("gpt-4o-mini", "gpt-4o", "o3-mini")
"""The model ids ``GET /v1/models`` lists."""

MAX_TEMPERATURE = 2


class _GetAndPostHandler(LoopbackHandler):
    """A connection that reads a ``GET`` as it reads a ``POST`` (a request without a body)."""

    def do_GET(self) -> None:
        self.do_POST()


class ModelsSdkServer(SdkServer):
    """:class:`SdkServer` answering ``GET /v1/models`` too, and a temperature above 2 with
    OpenAI's 400; a context manager (started on creation)."""

    handler: ClassVar[type[LoopbackHandler]] = _GetAndPostHandler

    def answer(self, http: LoopbackHandler, received: Received) -> None:
        if received.method == "GET":
            status, value = (
                (200, _model_list())
                if received.path == "/v1/models"
                else (404, _no_route(received))
            )
            self._send_json(http, "openai", status, value, received, {})
            return
        body = received.json() if received.body else {}
        temperature = body.get("temperature") if isinstance(body, dict) else None
        if isinstance(temperature, int | float) and temperature > MAX_TEMPERATURE:
            with self.lock:
                self.faults.appendleft(ErrorReply(400))
        super().answer(http, received)


def _model_list() -> dict[str, Any]:
    models = [
        {"id": model, "object": "model", "created": 1715367049, "owned_by": "system"}
        for model in MODELS
    ]
    return {"object": "list", "data": models}


def _no_route(received: Received) -> dict[str, Any]:
    message = f"Invalid URL ({received.method} {received.path})"
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }
