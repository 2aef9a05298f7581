"""Whether a URL points at this machine: a server on loopback is a local model server.

A model whose ``base_url`` is on loopback (Ollama, vLLM, llama.cpp on this machine) needs no
API key. This module imports nothing of openprogram, so the built-in providers can ask it
without reaching the registry (which starts the runtime, which registers them).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

__all__ = ["is_loopback_url"]


def is_loopback_url(url: str) -> bool:
    """True when ``url``'s host is this machine: ``localhost``, 127.0.0.0/8 or ``::1``."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
