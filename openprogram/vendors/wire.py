"""What goes to a vendor's API besides its bodies: its hosts, its key and where the key goes,
the headers that change what a request means, the path prefix ``openprogram serve`` gives it.

Each vendor module of :mod:`openprogram.vendors` holds one :class:`Wire` (the two OpenAI APIs
share :data:`~openprogram.vendors.openai_chat.OPENAI_WIRE`), and
:data:`~openprogram.vendors.VENDOR_WIRES` lists them. Every layer asks them instead of
spelling a host, a header or a variable: drift (which key goes with which official origin),
the replay's placeholder keys, the headers the HTTP boundary stores and drift compares, the
routes of ``openprogram serve``, the built-in providers' default key variables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ServedApi", "Wire"]


@dataclass(frozen=True)
class ServedApi:
    """One vendor API ``openprogram serve`` forwards."""

    name: str
    """Its path prefix too: ``/openai``."""
    upstream: str
    """Its public API's origin."""
    base_path: str
    """The path of the official SDKs' default base URL (OpenAI's holds ``/v1``)."""
    base_url_variables: tuple[str, ...]
    """The variables clients read their base URL from, the official SDKs' first."""
    error_style: str
    """How its error bodies are written: ``openai``, ``anthropic`` or ``google``."""
    versioned: str = ""
    """The version every path of the API starts with, put in front of a path without it:
    clients disagree whether a base URL holds it (the official Anthropic SDKs add ``/v1``
    to ``ANTHROPIC_BASE_URL``, the Vercel AI SDK expects it there)."""

    def error_body(self, status: int, kind: str, message: str) -> dict[str, Any]:
        """An error body as this vendor writes one, holding ``message``: the SDKs show it as
        the error's message (``412 replay mismatch at call 1, …``)."""
        if self.error_style == "anthropic":
            return {"type": "error", "error": {"type": kind, "message": message}}
        if self.error_style == "google":
            return {"error": {"code": status, "message": message, "status": kind.upper()}}
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


@dataclass(frozen=True)
class Wire:
    """One vendor's API as seen from the wire, apart from its bodies. Headers are lower-case;
    a pattern is a regular expression."""

    vendor: str
    """Its name where a user names it (``--base-url openai=…``) and a model's ``provider``."""
    hosts: tuple[str, ...]
    """The endings of the hosts its API is served from: a request to one was made to it."""
    official_hosts: str
    """Pattern of its official API's hosts (https, default port): where its key may go."""
    key_variables: tuple[str, ...] = ()
    """Where its SDK reads its key, the first taken first; for a vendor that signs
    (:attr:`signing_service`): the access key id, the secret, the session token."""
    key_header: str = ""
    """The header that carries its key, after :attr:`key_prefix` (``Bearer ``)."""
    key_prefix: str = ""
    key_query: str = ""
    """The query parameter that carries its key instead, when the recorded URL has one."""
    placeholder_if_unset: tuple[str, ...] = ()
    """When all of these are unset, replay sets :attr:`placeholder_variables` to a
    placeholder key (its SDK refuses to start without one)."""
    placeholder_variables: tuple[str, ...] = ()
    stored_headers: tuple[str, ...] = ()
    """The request headers that change what a request means, always stored."""
    version_headers: tuple[tuple[str, str], ...] = ()
    """The headers (name, value) every request carries to name the API's version."""
    compared_headers: tuple[str, ...] = ()
    """The response headers whose drift is reported (the API's version)."""
    model_path: str = ""
    """Pattern finding the model a request's path names (its group 1)."""
    signing_service: str = ""
    """The service a SigV4 signature names, for a vendor whose requests are signed; the
    headers of the signature, never stored; the pattern finding the region a host names
    (its group 1), and where its SDK reads the region from when the host names none."""
    signing_headers: tuple[str, ...] = ()
    region_in_host: str = ""
    region_variables: tuple[str, ...] = ()
    served: ServedApi | None = None
    """How ``openprogram serve`` forwards to it (None: it does not)."""
