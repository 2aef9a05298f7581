"""Which HTTP requests are model traffic: what the configured mode records or replays, and
leaves every other request alone.

A request is model traffic, whatever host it is sent to (a vendor's API, a litellm proxy,
Ollama, vLLM, a company gateway), when any of these holds — each is asked in this order,
the cheapest first, and :func:`model_traffic_reason` says which one did:

1. **an official model SDK's client sent it**, known by the headers that SDK sends with
   every request (:data:`SDK_CLIENTS`): OpenAI, Anthropic, google-genai, Amazon Bedrock,
   Mistral, Cohere, Groq;
2. **its host is one the user listed** in ``record_replay.model_hosts`` (``host`` or
   ``host:port``, the syntax of ``allowed_hosts``: :mod:`openprogram.config.hosts`);
3. **it is a POST to a model API's path**: one a vendor view claims (:data:`VENDOR_APIS` —
   chat completions, responses, messages, ``generateContent``, Converse — asked exactly as
   ``show`` asks them), or another model endpoint of their vendors that the store does not
   read (each view's ``model_endpoint``: embeddings, legacy completions, Gemini's
   ``embedContent`` and ``countTokens``, Bedrock's InvokeModel);
4. **its JSON body holds** ``model`` (a string) **and one of** ``messages``, ``input``,
   ``prompt`` or ``contents``: read only when the body starts with ``{`` and is no larger
   than :data:`~openprogram.body_limit.MAX_BODY_SIZE`.

Everything else — a package index, a database, a tool's JSON API, telemetry — is not.
The function runs for every request a captured client sends: it never raises, compiles
nothing per call and parses a body only when the cheaper tests said no.

What went live because it was not model traffic is said in one line at the end of a
replay (:func:`not_model_traffic_message`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

import orjson

from openprogram.body_limit import MAX_BODY_SIZE
from openprogram.config.hosts import is_allowed, normalized_hosts
from openprogram.vendors import VENDOR_APIS
from openprogram.vendors.anthropic_messages import ANTHROPIC_VERSION
from openprogram.wording import plural

__all__ = ["BODY_INPUT_FIELDS", "SDK_CLIENTS", "model_traffic_reason", "not_model_traffic_message"]

BODY_INPUT_FIELDS = ("messages", "input", "prompt", "contents")
"""A JSON body holding ``model`` and one of these is a model request."""

SDK_CLIENTS = ("OpenAI", "Anthropic", "google-genai", "Amazon Bedrock", "Mistral", "Cohere", "Groq")
"""The official model SDKs whose requests are known by their own headers."""

_WANTED_HEADERS = frozenset(
    {"user-agent", ANTHROPIC_VERSION, "x-goog-api-client", "authorization", "x-fern-sdk-name"}
)
"""The request headers the SDK rule reads (the vendor views read ``anthropic-version``)."""

_STAINLESS_CLIENTS = (
    ("OpenAI", "an OpenAI SDK client"),
    ("Anthropic", "an Anthropic SDK client"),
    ("Groq", "a Groq SDK client"),
)
"""The SDKs that send ``User-Agent: <their client class>/Python <version>`` (``OpenAI``,
``AsyncAzureOpenAI``, ``AnthropicBedrock``, ``AsyncGroq``…): a word of the class name, and
the reason it gives."""

_OPENAI_MODULE_CLIENTS = frozenset({"_ModuleClient", "_AzureModuleClient", "_BedrockModuleClient"})
"""The client classes behind the ``openai`` module's own functions (``openai.chat…``)."""

_JSON_OBJECT_START = re.compile(rb"[ \t\r\n]*\{")
_MODEL_KEY = b'"model"'
_INPUT_KEYS = tuple(f'"{name}"'.encode() for name in BODY_INPUT_FIELDS)
"""Looked for before a body is parsed: a body without ``"model"`` and one of these holds no
model request (JSON writers do not escape plain letters)."""
_AWS_SIGNATURE = "aws4-hmac-sha256 "
_GOOGLE_GENAI_AGENT = "google-genai-sdk/"
"""How google-genai names itself in ``x-goog-api-client`` and ``User-Agent``
(``google-genai-sdk/<version> gl-python/<version>``)."""
_MISTRAL_AGENT = "mistral-client-python/"
"""The ``User-Agent`` the ``mistralai`` SDK sends (``mistral-client-python/<version>``)."""
_SPEAKEASY_AGENT = "speakeasy-sdk/python "
"""The ``User-Agent`` of a Speakeasy-built SDK, its package last: ``mistralai`` (its
cloud packages, ``mistralai-gcp``…, keep it)."""


def model_traffic_reason(
    method: str,
    url: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    body: bytes | None,
    *,
    model_hosts: Iterable[str] = (),
) -> str | None:
    """Why this request is model traffic, in a few words (``an OpenAI SDK client``, ``a
    model API path (openai-completions)``, ``a JSON body with model and messages``, ``a model
    host you listed``), or None when it is not.

    ``headers``: as sent, names in any case — a mapping, or ``(name, value)`` pairs as a
    captured request holds them; ``body``: the request's body as sent (None when it is
    streamed or not known); ``model_hosts``: ``record_replay.model_hosts`` — a
    frozenset from :func:`~openprogram.config.hosts.normalized_hosts` is used as it is, so a
    caller asking for many requests normalises the list once."""
    wanted = _wanted_headers(headers)
    reason = sdk_client_reason(wanted)
    if reason is not None:
        return reason
    try:
        parts = urlsplit(str(url))
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        parts, host, port = None, "", None
    hosts = model_hosts if isinstance(model_hosts, frozenset) else normalized_hosts(model_hosts)
    if hosts and host and _listed(hosts, host, port, parts.scheme if parts else ""):
        return "a model host you listed"
    if parts is not None and str(method).upper() == "POST":
        reason = model_path_reason(parts.path.rstrip("/"), host, wanted)
        if reason is not None:
            return reason
    return model_body_reason(body)


def sdk_client_reason(headers: Mapping[str, str]) -> str | None:
    """Which official model SDK's client sent a request with ``headers`` (names lower-case),
    as a reason; None for any other client."""
    agent = headers.get("user-agent", "")
    client_class, _, language = agent.partition(" ")[0].partition("/")
    if language == "Python" and client_class.isidentifier():
        if client_class in _OPENAI_MODULE_CLIENTS:
            return "an OpenAI SDK client"
        for word, reason in _STAINLESS_CLIENTS:
            if word in client_class:
                return reason
    if agent.startswith(_MISTRAL_AGENT) or (
        agent.startswith(_SPEAKEASY_AGENT) and agent.rpartition(" ")[2].startswith("mistralai")
    ):
        return "a Mistral SDK client"
    google_client = headers.get("x-goog-api-client", "")
    if google_client.startswith(_GOOGLE_GENAI_AGENT) or agent.startswith(_GOOGLE_GENAI_AGENT):
        return "a google-genai SDK client"
    if headers.get("x-fern-sdk-name", "").lower() == "cohere":
        return "a Cohere SDK client"
    if _signed_for_bedrock(headers.get("authorization", "")):
        return "an Amazon Bedrock client"
    if ANTHROPIC_VERSION in headers:
        return f"a request with Anthropic's {ANTHROPIC_VERSION} header"
    return None


def model_path_reason(path: str, host: str, headers: dict[str, str]) -> str | None:
    """Which model API a POST to ``path`` (no trailing slash) on ``host`` with ``headers``
    (names lower-case) goes to, as a reason: one a vendor view claims, as ``show`` asks them,
    or another model endpoint of their vendors; None for a path no model API has."""
    for api in VENDOR_APIS:
        if api.claims(path, host, headers):
            return f"a model API path ({api.name})"
    for api in VENDOR_APIS:
        endpoint = api.model_endpoint(path)
        if endpoint is not None:
            return f"a model API path ({endpoint})"
    return None


def model_body_reason(body: bytes | None) -> str | None:
    """``a JSON body with model and <field>`` when ``body`` is a JSON object holding a
    string ``model`` and one of :data:`BODY_INPUT_FIELDS`; None otherwise (no body, one
    that is not a JSON object, or one larger than the body limit)."""
    if (
        not body
        or len(body) > MAX_BODY_SIZE
        or not _JSON_OBJECT_START.match(body)
        or _MODEL_KEY not in body
        or not any(key in body for key in _INPUT_KEYS)
    ):
        return None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(document, dict) or not isinstance(document.get("model"), str):
        return None
    field = next((name for name in BODY_INPUT_FIELDS if name in document), None)
    return None if field is None else f"a JSON body with model and {field}"


def _wanted_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    """The headers the rules read, names lower-case, values as text."""
    found: dict[str, str] = {}
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for name, value in pairs:
        key = _text(name).lower()
        if key in _WANTED_HEADERS:
            found[key] = _text(value)
    return found


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("latin-1")
    return str(value)


def _signed_for_bedrock(authorization: str) -> bool:
    """Whether an ``Authorization`` header is an AWS signature (SigV4) whose credential
    scope names the ``bedrock`` service (``…/<region>/bedrock/aws4_request``): boto3's
    ``bedrock-runtime`` client and the other Bedrock clients sign so."""
    if authorization[: len(_AWS_SIGNATURE)].lower() != _AWS_SIGNATURE:
        return False
    credential = authorization.partition("Credential=")[2].partition(",")[0]
    return credential.split("/")[3:5] == ["bedrock", "aws4_request"]


def _listed(hosts: frozenset[str], host: str, port: int | None, scheme: str) -> bool:
    """Whether ``hosts`` names ``host`` on ``port`` (the scheme's default when the URL
    names none)."""
    if port is None:
        port = 443 if scheme in ("https", "wss") else 80
    return is_allowed(hosts, host, port)


def not_model_traffic_message(destinations: Iterable[str]) -> str | None:
    """``2 connections were not model traffic and went live: 127.0.0.1:5432,
    api.example.com:443 — …`` for ``destinations`` (each ``host:port`` as it should be
    shown, repeats named once); None when there are none."""
    listed = list(dict.fromkeys(destinations))
    if not listed:
        return None
    were = "was" if len(listed) == 1 else "were"
    return (
        f"{plural(len(listed), 'connection')} {were} not model traffic and went live: "
        f"{', '.join(listed)} — list a model host in record_replay.model_hosts, or use exec "
        "for a hermetic run"
    )
