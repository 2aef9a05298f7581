"""The HTTP boundary: requests sent with httpx or httpx2 (the official ``openai`` and
``anthropic`` SDKs and whatever stands on them) recorded into, and replayed from, the same
recordings as the provider boundary.

- ``boundary``: :class:`HttpBoundary` and :func:`activate_http_boundary`, the process-wide
  switch the ways in (``exec``, the pytest fixture, ``record_replay()``) build on.
- ``patching``: the lazy patch of the clients' ``_transport_for_url`` in httpx and httpx2.
- ``transport``: which requests are captured, and the transport that captures them.
- ``recording`` and ``replay``: one exchange recorded as it happens, or answered from the
  recording.
- ``codec``: an exchange as rows and rows as response bytes; ``sse``: the server-sent event
  parser and encoder; ``library``: what the boundary uses of httpx or httpx2.

Importing this package, or any module of it, imports neither httpx nor httpx2.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from openprogram.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from openprogram.http_boundary.boundary import HttpBoundary, activate_http_boundary

__all__ = ["HttpBoundary", "activate_http_boundary"]

_EXPORTS = {
    "HttpBoundary": "openprogram.http_boundary.boundary",
    "activate_http_boundary": "openprogram.http_boundary.boundary",
}
__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
