"""The credentials a re-sent request carries: applied per vendor, from where its SDK reads
them, and never written anywhere.

A recording holds no credential (the recorder drops ``Authorization``, ``x-api-key`` and the
AWS signature, and redacts a ``key=`` in a URL), so drift puts the vendor's back:

=========  ==========================================================  =====================
vendor     taken from                                                  sent as
=========  ==========================================================  =====================
openai     ``OPENAI_API_KEY``                                          ``Authorization: Bearer``
anthropic  ``ANTHROPIC_API_KEY``                                       ``x-api-key``
google     ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY``                 ``x-goog-api-key``, or the
                                                                       ``key=`` query parameter
                                                                       when the recorded URL had one
aws        botocore's credential chain (``AWS_ACCESS_KEY_ID``…, the    a SigV4 signature
           shared files, a profile); the region from the host, else    (``Authorization``,
           ``AWS_REGION`` / ``AWS_DEFAULT_REGION``                     ``X-Amz-Date``…)
=========  ==========================================================  =====================

The vendor is known from the API the request was made to (its path, as ``show`` reads it),
else from the host. ``--header NAME: VALUE`` adds a header to every request (after the
vendor's, so it can replace it). A request for which neither gives a credential is not sent:
drift never sends a recorded request unauthenticated. Credentials are put only on a request
to an origin trusted for its vendor (:mod:`openprogram.drift.origins`): a request to any
other is not sent at all, and never reaches this module."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from openprogram.vendors import VENDOR_WIRES, vendor_api
from openprogram.vendors.wire import Wire

__all__ = ["Credentials", "MissingCredentials", "apply_credentials", "sent_key", "vendor_of"]

_WIRES: Final = {wire.vendor: wire for wire in VENDOR_WIRES}


class MissingCredentials(Exception):
    """No credential for a request: it is skipped, with this reason."""


@dataclass(frozen=True)
class Credentials:
    """Where credentials come from: the environment, and the ``--header`` values."""

    environ: Mapping[str, str]
    headers: tuple[tuple[str, str], ...] = ()
    other_way: str = ""
    """How else a credential may be given, as the reason a call is skipped adds it (the
    command line: `` (or pass --header)``)."""

    @classmethod
    def from_environment(
        cls, headers: tuple[tuple[str, str], ...] = (), *, other_way: str = ""
    ) -> Credentials:
        return cls(dict(os.environ), headers, other_way)


def vendor_of(request: Mapping[str, object]) -> str | None:
    """The vendor a recorded request was sent to (one of
    :func:`~openprogram.drift.origins.vendor_names`), or None."""
    api = vendor_api(dict(request), None)
    if api is not None:
        return api.wire.vendor
    host = (urlsplit(str(request.get("url"))).hostname or "").lower()
    return next((w.vendor for w in VENDOR_WIRES if host.endswith(w.hosts)), None)


def apply_credentials(
    vendor: str | None,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: Credentials,
) -> str:
    """Put ``vendor``'s credentials into ``headers`` (in place) and return the URL to send
    to; raises :class:`MissingCredentials` when there is none to put."""
    given = {name.lower() for name, _ in credentials.headers}
    wire = _WIRES.get(vendor or "")
    if wire is not None and wire.signing_service:
        if not given & {"authorization"}:
            headers.update(_aws_signature(wire, method, url, headers, body, credentials))
    elif wire is not None and wire.key_variables:
        variables = wire.key_variables
        key = next((credentials.environ[v] for v in variables if credentials.environ.get(v)), None)
        if key is not None:
            url = _with_key(wire, url, key, headers)
        elif not given:
            named = " or ".join(variables)
            raise MissingCredentials(f"no {vendor} key: set {named}{credentials.other_way}")
    elif not given:
        raise MissingCredentials(f"no credentials known for this API{credentials.other_way}")
    for name, value in credentials.headers:
        for existing in [key for key in headers if key.lower() == name.lower()]:
            del headers[existing]
        headers[name] = value
    return url


def sent_key(headers: Mapping[str, str]) -> str | None:
    """The key ``headers`` carry in the header of a vendor that always sends it in one (the
    key :func:`apply_credentials` put there, or a ``--header`` value), else None."""
    found = (
        headers.get(wire.key_header, "").removeprefix(wire.key_prefix)
        for wire in VENDOR_WIRES
        if wire.key_header and not wire.key_query
    )
    return next((key for key in found if key), None)


def _with_key(wire: Wire, url: str, key: str, headers: dict[str, str]) -> str:
    if wire.key_query:
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        if any(name == wire.key_query for name, _ in query):
            query = [(name, key if name == wire.key_query else value) for name, value in query]
            return urlunsplit(parts._replace(query=urlencode(query)))
    headers[wire.key_header] = wire.key_prefix + key
    return url


def _aws_signature(
    wire: Wire,
    method: str,
    url: str,
    headers: dict[str, str],
    body: bytes,
    credentials: Credentials,
) -> dict[str, str]:
    """The SigV4 headers of a Bedrock request, signed through botocore."""
    try:
        from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
        from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
        from botocore.session import Session  # type: ignore[import-untyped]
    except ImportError:
        raise MissingCredentials(
            "signing a Bedrock request needs botocore: pip install 'openprogram[bedrock]'"
            f"{credentials.other_way}"
        ) from None
    session = Session()
    environ = credentials.environ
    key_id, secret, token = wire.key_variables
    if environ.get(key_id) and environ.get(secret):
        session.set_credentials(environ[key_id], environ[secret], environ.get(token) or None)
    try:  # botocore's chain: variables, shared files, a profile, a container or instance role
        found = session.get_credentials()
    except Exception as error:  # botocore raises its own errors, and whatever a socket raises
        raise MissingCredentials(f"AWS credentials could not be read: {error}") from None
    if found is None:
        raise MissingCredentials(f"no AWS credentials: set {key_id} and {secret} (or a profile)")
    host = urlsplit(url).hostname or ""
    match = re.search(wire.region_in_host, host)
    region = (
        match.group(1)
        if match
        else next((environ[name] for name in wire.region_variables if environ.get(name)), None)
    )
    if not region:
        raise MissingCredentials(
            f"no AWS region: set {wire.region_variables[0]} (the host names none)"
        )
    signed = AWSRequest(method=method, url=url, data=body, headers=dict(headers))
    SigV4Auth(found.get_frozen_credentials(), wire.signing_service, region).add_auth(signed)
    return {name: str(value) for name, value in signed.headers.items()}
