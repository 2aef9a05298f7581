"""What the HTTP vendor providers share: where to send a request, with which key and headers.

:class:`HttpVendorProvider` is the base of ``openai-completions`` and ``anthropic-messages``.
A subclass says how to build the vendor's request and how to read its event stream; this
class picks the server (``model.base_url``, else the configured ``base_url``, else the
vendor's), resolves the key, and hands both to :mod:`http_streaming`, which is imported only
when a request is made (so registering the built-ins does not import httpx).

The key: ``options.api_key``, else the environment variable named by ``api_key_env`` (the
configured one, else the vendor's default). A server on this machine (``localhost``,
``127.0.0.0/8``, ``::1``) may need no key, so ``requires_credentials`` is False for one and
the ``Authorization`` / ``x-api-key`` header is sent only when there is a key. A provider
tells the redactor about its ``api_key_env`` when it is made, so the key read from it never
reaches a recording or a message, whatever the variable's name."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Self

from openprogram.errors import MissingApiKeyError
from openprogram.providers.builtins.reply_assembly import ReplyAssembler
from openprogram.providers.types import (
    Context,
    Model,
    ReasoningLevel,
    SimpleStreamOptions,
    StreamingProvider,
    StreamMethod,
    StreamOptions,
)
from openprogram.providers.types import is_loopback_url as is_loopback_url
from openprogram.recording.redaction import SecretRedactor, remember_secret_variable

if TYPE_CHECKING:
    import httpx

    from openprogram.config.models import ProviderSettings
    from openprogram.providers.events import AssistantMessageEvent
    from openprogram.vendors.reply import StreamReader


DEFAULT_TIMEOUT = 600.0
"""Seconds a request may wait for the next bytes of the reply, unless configured."""
CONNECT_TIMEOUT = 10.0
"""Seconds to establish the connection (or the configured timeout, if shorter)."""


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One vendor request, ready to send."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]
    timeout: float
    api_key: str | None = field(default=None, repr=False)
    """Only so that no message can ever quote it."""
    key_source: str | None = None
    """Where the key came from (``options.api_key`` or a variable name), for error hints."""
    api_key_env: str | None = None


@dataclass(frozen=True, slots=True)
class VendorRequest:
    """What a subclass builds: the url path below the base url, headers and JSON body."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]


def merge_headers(*sources: Mapping[str, str] | None) -> dict[str, str]:
    """Headers from several sources, later ones replacing earlier ones whatever the case."""
    merged: dict[str, str] = {}
    for source in sources:
        for name, value in (source or {}).items():
            for existing in [key for key in merged if key.lower() == name.lower()]:
                del merged[existing]
            merged[name] = value
    return merged


class HttpVendorProvider(StreamingProvider):
    """A provider that POSTs a JSON request and reads a server-sent event stream back."""

    api: ClassVar[str]
    default_base_url: ClassVar[str]
    default_api_key_env: ClassVar[str]

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key_env: str | None = None,
        timeout: float | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = (base_url or self.default_base_url).rstrip("/")
        self.api_key_env: str = api_key_env or self.default_api_key_env
        """The environment variable the key is read from (``stream()`` reads it too)."""
        self.timeout = timeout or DEFAULT_TIMEOUT
        self.transport = transport
        """The httpx transport requests go through (None: the network); a test hands it an
        ``httpx.MockTransport`` to answer in-process."""
        remember_secret_variable(self.api_key_env)

    @classmethod
    def from_settings(cls, settings: ProviderSettings | None) -> Self:
        """The provider a ``[providers.<api>]`` table describes (defaults without one)."""
        if settings is None:
            return cls()
        return cls(
            base_url=settings.base_url, api_key_env=settings.api_key_env, timeout=settings.timeout
        )

    @property
    def requires_credentials(self) -> bool:
        """False for a server on this machine, which may need no key."""
        return not is_loopback_url(self.base_url)

    def __repr__(self) -> str:
        base_url = SecretRedactor().redact_text(self.base_url)
        return (
            f"{type(self).__name__}(base_url={base_url!r}, "
            f"api_key_env={self.api_key_env!r}, timeout={self.timeout!r})"
        )

    def respond(
        self, method: StreamMethod, model: Model, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        # The portable reasoning level applies to stream_simple calls only.
        reasoning = None
        if method == "stream_simple" and isinstance(options, SimpleStreamOptions):
            reasoning = options.reasoning
        return self._open(model, context, options, reasoning=reasoning)

    # -- what a vendor supplies -------------------------------------------------------------

    def build_request(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        base_url: str,
        api_key: str | None,
        reasoning: ReasoningLevel | None,
    ) -> VendorRequest:
        raise NotImplementedError

    def new_stream(self) -> StreamReader:
        """The vendor's reader of one reply's events (:mod:`openprogram.vendors`)."""
        raise NotImplementedError

    # -- shared -----------------------------------------------------------------------------

    def _open(
        self,
        model: Model,
        context: Context,
        options: StreamOptions,
        *,
        reasoning: ReasoningLevel | None,
    ) -> AsyncIterator[AssistantMessageEvent]:
        from openprogram.providers.builtins.http_streaming import stream_reply

        def prepare() -> HttpRequest:
            base_url = (model.base_url or self.base_url).rstrip("/")
            api_key, key_source = self._api_key(model, base_url, options)
            vendor = self.build_request(
                model, context, options, base_url=base_url, api_key=api_key, reasoning=reasoning
            )
            return HttpRequest(
                url=vendor.url,
                headers=merge_headers(vendor.headers, model.headers, options.headers),
                body=vendor.body,
                timeout=self.timeout,
                api_key=api_key,
                key_source=key_source,
                api_key_env=self.api_key_env,
            )

        on_payload: Callable[[dict[str, Any]], None] | None = options.on_payload
        return stream_reply(
            prepare,
            ReplyAssembler(model, self.new_stream()),
            signal=options.signal,
            on_payload=on_payload,
            transport=self.transport,
        )

    def _api_key(
        self, model: Model, base_url: str, options: StreamOptions
    ) -> tuple[str | None, str | None]:
        key = os.environ.get(self.api_key_env)
        if options.api_key:
            # ``stream()`` fills options.api_key from the variable: name the variable then.
            return options.api_key, (
                self.api_key_env if options.api_key == key else "options.api_key"
            )
        if key:
            return key, self.api_key_env
        if is_loopback_url(base_url):
            return None, None
        raise MissingApiKeyError(model.api, self.api_key_env)
