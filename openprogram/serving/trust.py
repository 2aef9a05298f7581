"""Whom ``openprogram serve`` answers: its own clients, told apart from everyone else who
reaches loopback.

Loopback is not a trusted place: other users of the machine, containers on the host's
network and the pages a browser shows all reach it. So every request passes these checks,
in this order, before the server reads its body:

=====  ======================================================================================
421    its ``Host`` is not the address the server listens on (with its port) or ``localhost``
       with that port: a page whose name an attacker rebound to 127.0.0.1 (DNS rebinding)
       still sends its own name
403    it carries an ``Origin`` (a browser page sent it) that no ``--allow-origin`` names; an
       allowed origin is answered with CORS headers, its preflights too
401    it names a recording or a session — a control path (``/__openprogram/…``, health
       aside), a session's path (``/__openprogram/s/<id>/…``) or the header
       ``x-openprogram-recording`` — without the server's token in ``x-openprogram-token``
415    it is a control request with a body that is not ``application/json`` (a form or
       ``text/plain`` is what a page may send without asking first)
=====  ======================================================================================

A request that names nothing (a program given only the base URL) uses the server's own
recording, and needs no token: it is the recording the user started the server for. It is
answered as it always was, but for one thing: a replay mismatch reported to a client without
the token says where the request differed, never what the recording holds there (that is
in the server's log, and in the answer to a client that sends the token).

The token is made at the server's start (:func:`new_token`), printed beside its URL, handed
to the command ``exec`` runs in ``OPENPROGRAM_SERVE_TOKEN`` and written, ``0600``, to
``--token-file`` when given (:func:`write_token_file`)."""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import secrets
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from openprogram.errors import ReplayMismatch, ServeSetupError
from openprogram.private_files import PRIVATE_FILE_MODE, replace_file
from openprogram.serving.routes import CONTROL_PREFIX

__all__ = [
    "HEALTH_PATH",
    "RECORDING_HEADER",
    "TOKEN_HEADER",
    "TOKEN_VARIABLE",
    "Refusal",
    "TrustRules",
    "host_in_url",
    "mismatch_for_stranger",
    "new_token",
    "parse_origin",
    "remove_token_file",
    "write_token_file",
]

TOKEN_HEADER = "x-openprogram-token"
TOKEN_VARIABLE = "OPENPROGRAM_SERVE_TOKEN"
"""Where ``exec`` hands the token to its command, and the setup files read it."""
HEALTH_PATH = f"{CONTROL_PREFIX}/health"
"""The one control path that names nothing: whether the server is up, and its version."""
RECORDING_HEADER = "x-openprogram-recording"
"""The request header naming the recording a request goes to (its session's)."""
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_CORS_METHODS = "GET, POST, PUT, PATCH, DELETE"
_CORS_MAX_AGE = "600"


def new_token() -> str:
    """A new server token: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered: its status, the error kind and a one-line message."""

    status: int
    kind: str
    message: str


@dataclass(frozen=True)
class TrustRules:
    """What one server accepts: its ``token``, the ``Host`` values that name it, the
    origins the user allowed."""

    token: str = field(repr=False)
    hosts: frozenset[str] = frozenset()
    """Lower-cased ``host:port`` values (an IPv6 address in brackets)."""
    origins: frozenset[str] = frozenset()

    @classmethod
    def listening(
        cls, token: str, addresses: Iterable[str], port: int, origins: Iterable[str] = ()
    ) -> TrustRules:
        """The rules of a server listening on ``addresses`` at ``port``."""
        names = {*(host_in_url(address) for address in addresses), "localhost"}
        hosts = {f"{name}:{port}".lower() for name in names}
        if port == 80:  # a client leaves the default port out of its Host
            hosts.update(name.lower() for name in names)
        return cls(token, frozenset(hosts), frozenset(origins))

    @classmethod
    def closed(cls, token: str) -> TrustRules:
        """The rules before the server knows its addresses: every request is refused."""
        return cls(token)

    def holds_token(self, headers: Mapping[str, str]) -> bool:
        """Whether ``headers`` carry this server's token (compared in constant time)."""
        given = headers.get(TOKEN_HEADER)
        if given is None:
            return False
        return hmac.compare_digest(
            given.encode("utf-8", "surrogateescape"), self.token.encode("utf-8")
        )

    def allowed_origin(self, headers: Mapping[str, str]) -> str | None:
        """The request's ``Origin`` when the user allowed it (None: none, or not allowed)."""
        origin = headers.get("Origin")
        if origin is not None and origin.strip().lower() in self.origins:
            return origin.strip()
        return None

    def refusal(
        self, method: str, paths: tuple[str, ...], headers: Mapping[str, str], *, has_body: bool
    ) -> Refusal | None:
        """Why a request for ``paths`` (as it came and as decoded: the router sees the
        latter) with ``headers`` is refused, or None. A preflight of an allowed origin is
        not refused: :meth:`preflight_headers` answers it."""
        host = headers.get("Host")
        if host is None or host.strip().lower() not in self.hosts:
            known = ", ".join(sorted(self.hosts)) or "none yet"
            return Refusal(
                421,
                "openprogram_wrong_host",
                f"Host {host!r} is not this server ({known}): a name that resolves to "
                "loopback is not enough; use the URL the server printed",
            )
        origin = headers.get("Origin")
        if origin is not None and self.allowed_origin(headers) is None:
            return Refusal(
                403,
                "openprogram_origin_refused",
                f"requests from the page at {origin!r} are refused: start the server with "
                f"--allow-origin {origin} if you trust that page",
            )
        if self.preflight_headers(method, headers) is not None:
            return None  # a preflight carries no token: it asks what may be sent
        control = any(_under_control(path) for path in paths)
        names_one = control or RECORDING_HEADER in headers
        if names_one and not self.holds_token(headers):
            return Refusal(
                401,
                "openprogram_token_required",
                "this request names a recording or a session: send the server's token in the "
                f"header {TOKEN_HEADER} (the server printed it as {TOKEN_VARIABLE}; exec hands "
                "it to its command in that variable)",
            )
        on_session = any(path.startswith(f"{CONTROL_PREFIX}/s/") for path in paths)
        if control and not on_session and (has_body or method in _BODY_METHODS):
            content_type = headers.get("Content-Type", "")
            if content_type.split(";")[0].strip().lower() != "application/json":
                return Refusal(
                    415,
                    "openprogram_not_json",
                    f"a control request's body must be application/json, not "
                    f"{content_type or 'undeclared'!r}: send content-type: application/json",
                )
        return None

    def preflight_headers(self, method: str, headers: Mapping[str, str]) -> dict[str, str] | None:
        """The answer's headers to a CORS preflight from an allowed origin (None: the
        request is not one)."""
        origin = self.allowed_origin(headers)
        if method != "OPTIONS" or origin is None:
            return None
        if "Access-Control-Request-Method" not in headers:
            return None
        return {
            **self.cors_headers(origin),
            "Vary": "Origin",
            "Access-Control-Allow-Methods": _CORS_METHODS,
            "Access-Control-Allow-Headers": headers.get("Access-Control-Request-Headers", ""),
            "Access-Control-Max-Age": _CORS_MAX_AGE,
        }

    @staticmethod
    def cors_headers(origin: str) -> dict[str, str]:
        """What lets the allowed page at ``origin`` read an answer (an answer that depends
        on the ``Origin`` says so in ``Vary`` too)."""
        return {
            "Access-Control-Allow-Origin": origin,
            "Access-Control-Expose-Headers": "x-openprogram-error",
        }


def _under_control(path: str) -> bool:
    """Whether ``path`` is the control API's (or a session's), health aside."""
    under = path == CONTROL_PREFIX or path.startswith(CONTROL_PREFIX + "/")
    return under and path != HEALTH_PATH


def host_in_url(address: str) -> str:
    """``address`` as a URL's host writes it: an IPv6 address in brackets."""
    try:
        if ipaddress.ip_address(address).version == 6:
            return f"[{address}]"
    except ValueError:
        pass
    return address


def parse_origin(value: str) -> str:
    """An ``--allow-origin`` value as browsers send it (``http://localhost:3000``,
    lower-cased, no trailing slash); ``ValueError`` saying what is wrong with it."""
    parts = urlsplit(value.strip())
    if (
        parts.scheme not in ("http", "https")
        or not parts.netloc
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise ValueError(
            f"--allow-origin {value!r}: give an origin as a browser sends it, "
            "scheme://host[:port] (http://localhost:3000), with no path"
        )
    return f"{parts.scheme}://{parts.netloc}".lower()


def mismatch_for_stranger(mismatch: ReplayMismatch) -> str:
    """A replay mismatch as a client without the token is told it: where the request
    differed, never what the recording holds."""
    where = str(mismatch).split("\n", 1)[0].rstrip(":")
    return (
        f"{where}: the recorded value is in the server's log, and in the answer to a "
        f"client that sends the server's token ({TOKEN_HEADER})"
    )


def write_token_file(path: Path, token: str) -> None:
    """Write ``token`` to ``path``, ``0600``, atomically: a new file renamed over the old,
    so a link at ``path`` is replaced, never followed. ``ServeSetupError`` when ``path`` is
    something other than a regular file, or its folder cannot take it."""
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        found = None
    except OSError as error:
        raise ServeSetupError(f"--token-file {path}: {error.strerror or error}") from None
    if found is not None and not stat.S_ISREG(found.st_mode):
        kind = "a link" if stat.S_ISLNK(found.st_mode) else "not a regular file"
        raise ServeSetupError(
            f"--token-file {path} is {kind}: the token is written to a regular file only "
            "(remove it, or give another path)"
        )
    if not path.parent.is_dir():
        raise ServeSetupError(f"--token-file {path}: no folder {path.parent}; create it first")
    try:
        replace_file(path, f"{token}\n".encode(), mode=PRIVATE_FILE_MODE)
    except OSError as error:
        raise ServeSetupError(f"--token-file {path}: {error.strerror or error}") from None


def remove_token_file(path: Path, token: str) -> None:
    """Remove the token file at ``path`` if it still holds ``token`` (a server started
    since with the same ``--token-file`` keeps its own)."""
    with contextlib.suppress(OSError):
        found = os.lstat(path)
        if stat.S_ISREG(found.st_mode) and path.read_text().strip() == token:
            path.unlink()
