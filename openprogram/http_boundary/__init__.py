"""The HTTP boundary: requests sent with httpx or httpx2 (the official ``openai`` and
``anthropic`` SDKs and whatever stands on them), urllib3 (``requests``, botocore), aiohttp or
``http.client`` recorded into, and replayed from, the same recordings as the provider
boundary — once each, when one of these libraries sends through another.

    boundary            ``HttpBoundary`` and ``activate_http_boundary``, the process-wide
                        switch the ways in (``exec``, the pytest fixture,
                        ``record_replay()``) build on; and one request, one call, however
                        the client libraries stack (the outermost captured one records it)
    patching            the lazy hook of the client libraries, once each is imported
    clients             the client libraries captured (httpx, httpx2, urllib3, aiohttp), each
                        behind the typed ``ClientLibrary`` seam, and the list they are
                        registered in
    exchange            which requests are captured, and one captured exchange recorded as
                        it happens, answered from the recording, or refused
    codec               an exchange as rows, and rows as response bytes
    sse                 the server-sent event parser and encoder
    eventstream         AWS's binary event stream, one row per message, byte for byte
    whole_answers       an answer read whole (drift's live one, a cassette's) made into the
                        rows the recorder writes
    websocket_refusal   WebSocket connections: sent uncaptured when recording, refused
                        under replay

Importing this package, or any module of it, imports none of httpx, httpx2, urllib3 and aiohttp."""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary

_EXPORTS = {
    "HttpBoundary": "openprogram.http_boundary.boundary",
    "activate_http_boundary": "openprogram.http_boundary.boundary",
}
__all__ = [*_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
