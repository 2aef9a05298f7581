"""The rule for model traffic (``model_traffic_reason``): the requests the real SDKs send to
loopback stand-ins of their APIs are model traffic by their headers and by their path, each
on its own; a request to any host whose JSON body holds a model and its input is too; a
host listed in ``record_replay.model_hosts`` is; a tool's JSON API, a package index, a
telemetry export, a body that is not JSON or is too large are not; and the function never
raises, whatever it is given."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.body_limit import MAX_BODY_SIZE, MAX_BODY_SIZE_MB
from openprogram.config.hosts import normalized_hosts
from openprogram.config.models import RecordReplaySettings
from openprogram.vendors.model_traffic import (
    BODY_INPUT_FIELDS,
    SDK_CLIENTS,
    model_body_reason,
    model_path_reason,
    model_traffic_reason,
    not_model_traffic_message,
    sdk_client_reason,
)
from tests.support.bedrock_server import MODEL_ID, BedrockServer, bedrock_client
from tests.support.gemini_server import MODEL, GeminiServer
from tests.support.json_api_server import JsonApiServer
from tests.support.json_values import JSON_LIKE
from tests.support.loopback_server import LoopbackServer, Received
from tests.support.sdk_server import SdkServer

ASK = [{"role": "user", "content": "hi"}]


def reason_for(server: LoopbackServer, received: Received, **options: Any) -> str | None:
    """The rule's answer for a request as the server received it."""
    return model_traffic_reason(
        received.method,
        server.base_url + received.path,
        received.headers,
        received.body or None,
        **options,
    )


def path_reason(server: LoopbackServer, received: Received) -> str | None:
    """The path rule on its own (asked of a POST, as the rule asks it)."""
    url = urlsplit(server.base_url + received.path)
    return model_path_reason(url.path.rstrip("/"), url.hostname or "", received.headers)


def sent_by(server: LoopbackServer, send: Callable[[], object]) -> Received:
    """The one request ``send`` made to ``server`` (an error answer is fine)."""
    before = len(server.received)
    try:
        send()
    except Exception as error:  # the stand-in 404s what it does not serve: still sent
        if "404" not in str(error) and "Not Found" not in str(error):
            raise
    assert len(server.received) == before + 1
    return server.received[-1]


# The real SDKs, each by its headers and by its path.


def test_the_openai_sdk_is_model_traffic_by_its_headers_and_its_paths() -> None:
    openai = pytest.importorskip("openai")
    with SdkServer() as server:
        client = openai.OpenAI(api_key="sk-test", base_url=server.openai_url, max_retries=0)
        sent = [
            sent_by(server, lambda: client.chat.completions.create(model="m", messages=ASK)),
            sent_by(server, lambda: client.responses.create(model="m", input="hi")),
            sent_by(server, lambda: client.embeddings.create(model="e", input="hi")),
        ]
    assert [received.path for received in sent] == [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/embeddings",
    ]
    for received in sent:
        assert sdk_client_reason(received.headers) == "an OpenAI SDK client"
        assert reason_for(server, received) == "an OpenAI SDK client"
    assert [path_reason(server, received) for received in sent] == [
        "a model API path (openai-completions)",
        "a model API path (openai-responses)",
        "a model API path (embeddings)",
    ]


def test_the_async_and_the_module_level_openai_clients_are_known_too() -> None:
    openai = pytest.importorskip("openai")
    with SdkServer() as server:

        async def ask() -> object:
            async with openai.AsyncOpenAI(
                api_key="sk-test", base_url=server.openai_url, max_retries=0
            ) as client:
                return await client.chat.completions.create(model="m", messages=ASK)

        asynchronous = sent_by(server, lambda: asyncio.run(ask()))
        module_client = openai._ModuleClient(api_key="sk-test", base_url=server.openai_url)
        module_level = sent_by(
            server, lambda: module_client.chat.completions.create(model="m", messages=ASK)
        )
    assert asynchronous.headers["user-agent"].startswith("AsyncOpenAI/Python")
    assert module_level.headers["user-agent"].startswith("_ModuleClient/Python")
    for received in (asynchronous, module_level):
        assert sdk_client_reason(received.headers) == "an OpenAI SDK client"


def test_the_anthropic_sdk_is_model_traffic_by_its_headers_and_its_path() -> None:
    anthropic = pytest.importorskip("anthropic")
    with SdkServer() as server:
        client = anthropic.Anthropic(api_key="sk-ant-test", base_url=server.base_url)
        received = sent_by(
            server, lambda: client.messages.create(model="c", max_tokens=8, messages=ASK)
        )
    assert received.path == "/v1/messages"
    assert sdk_client_reason(received.headers) == "an Anthropic SDK client"
    # Without its user agent, Anthropic's version header still says what the request is.
    versioned = {"anthropic-version": received.headers["anthropic-version"]}
    assert sdk_client_reason(versioned) == "a request with Anthropic's anthropic-version header"
    assert path_reason(server, received) == "a model API path (anthropic-messages)"
    assert reason_for(server, received) == "an Anthropic SDK client"


def test_google_genai_is_model_traffic_by_its_headers_and_its_paths() -> None:
    genai = pytest.importorskip("google.genai")
    types = pytest.importorskip("google.genai.types")
    with GeminiServer() as server:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=server.base_url))
        whole = sent_by(
            server, lambda: client.models.generate_content(model=MODEL, contents="hello")
        )
        streamed = sent_by(
            server,
            lambda: list(client.models.generate_content_stream(model=MODEL, contents="hello")),
        )
    assert whole.path.endswith(f"/models/{MODEL}:generateContent")
    assert f"/models/{MODEL}:streamGenerateContent" in streamed.path
    for received in (whole, streamed):
        assert sdk_client_reason(received.headers) == "a google-genai SDK client"
        assert path_reason(server, received) == "a model API path (gemini-generate-content)"
        assert reason_for(server, received) == "a google-genai SDK client"
        # Gemini's body names no model (the path does): the body rule alone says no.
        assert model_body_reason(received.body) is None


def test_boto3_bedrock_converse_is_model_traffic_by_its_signature_and_its_path() -> None:
    pytest.importorskip("boto3")
    with BedrockServer() as server:
        client = bedrock_client(server.base_url)
        received = sent_by(
            server,
            lambda: client.converse(
                modelId=MODEL_ID, messages=[{"role": "user", "content": [{"text": "hi"}]}]
            ),
        )
    assert received.headers["user-agent"].startswith("Boto3/")
    assert "/bedrock/aws4_request" in received.headers["authorization"]
    assert sdk_client_reason(received.headers) == "an Amazon Bedrock client"
    assert path_reason(server, received) == "a model API path (bedrock-converse)"
    assert reason_for(server, received) == "an Amazon Bedrock client"


def test_headers_may_be_the_pairs_a_captured_request_holds() -> None:
    pairs = (("content-type", "application/json"), ("user-agent", "Anthropic/Python 2.17.0"))
    url = "http://127.0.0.1:9/v1/messages"
    assert model_traffic_reason("POST", url, pairs, b"{}") == "an Anthropic SDK client"
    assert model_traffic_reason("POST", url, [], b"{}") is None


def test_an_sdk_request_is_model_traffic_on_any_host_and_path() -> None:
    """A company gateway on an unusual path, the body not known (streamed): the headers
    alone decide."""
    gateway = "https://llm-gateway.internal.example:8443/team-a/proxy"
    openai_headers = {"User-Agent": "OpenAI/Python 2.54.0", "X-Stainless-Lang": "python"}
    assert model_traffic_reason("POST", gateway, openai_headers, None) == "an OpenAI SDK client"
    assert model_traffic_reason("POST", gateway, {}, None) is None


@pytest.mark.parametrize(
    ("headers", "reason"),
    [
        # As the SDKs' published sources set them.
        ({"User-Agent": "AzureOpenAI/Python 1.40.0"}, "an OpenAI SDK client"),
        ({"user-agent": "AnthropicBedrock/Python 0.40.0"}, "an Anthropic SDK client"),
        ({"User-Agent": "Groq/Python 0.31.0"}, "a Groq SDK client"),
        ({"user-agent": "AsyncGroq/Python 0.31.0"}, "a Groq SDK client"),
        ({"User-Agent": "mistral-client-python/1.9.3"}, "a Mistral SDK client"),
        (
            {"User-Agent": "speakeasy-sdk/python 1.2.3 2.486.1 0.0.2 mistralai-gcp"},
            "a Mistral SDK client",
        ),
        (
            {"X-Fern-Language": "Python", "X-Fern-SDK-Name": "cohere", "User-Agent": "cohere/5"},
            "a Cohere SDK client",
        ),
        (
            {"X-Goog-Api-Client": "google-genai-sdk/1.20.0 gl-python/3.12"},
            "a google-genai SDK client",
        ),
        (
            {
                "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/eu-west-1/"
                "bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc"
            },
            "an Amazon Bedrock client",
        ),
        ({"User-Agent": "google-genai-sdk/3.6.1 gl-python/3.11.7"}, "a google-genai SDK client"),
        ({b"User-Agent": b"OpenAI/Python 3.0.0"}, "an OpenAI SDK client"),
    ],
)
def test_each_sdk_is_known_by_the_headers_it_sends(headers: dict[Any, Any], reason: str) -> None:
    assert model_traffic_reason("POST", "http://127.0.0.1:9/x", headers, None) == reason


@pytest.mark.parametrize(
    "headers",
    [
        {"User-Agent": "python-requests/2.32.3"},
        {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) OpenAI/Python 1.0"},
        {"User-Agent": "my tool OpenAI/Python"},
        {"User-Agent": "Cloudflare/Python 4.0.0", "X-Stainless-Lang": "python"},
        {"User-Agent": "speakeasy-sdk/python 0.1.0 2.400.0 1.0.0 some-other-sdk"},
        {"X-Fern-SDK-Name": "elevenlabs"},
        {"X-Goog-Api-Client": "gl-python/3.12 grpc/1.60 gax/2.0 gapic/2.0"},
        {
            "Authorization": "AWS4-HMAC-SHA256 Credential=AKIAEXAMPLE/20260101/us-east-1/s3/"
            "aws4_request, SignedHeaders=host, Signature=abc",
            "User-Agent": "Boto3/1.44.18 md/Botocore#1.44.18",
        },
        {"Authorization": "Bearer sk-not-a-client"},
    ],
)
def test_other_clients_are_not_model_sdks(headers: dict[str, str]) -> None:
    """Other Stainless- and Speakeasy-built SDKs, another AWS service, a bare key."""
    assert sdk_client_reason({name.lower(): value for name, value in headers.items()}) is None
    assert model_traffic_reason("GET", "http://127.0.0.1:9/api/items", headers, None) is None


# Any host: the body, and the path.


def test_an_ollama_or_vllm_request_on_its_own_path_is_model_traffic_by_its_body() -> None:
    with JsonApiServer() as server, httpx.Client(base_url=server.base_url) as client:
        chat = sent_by(
            server, lambda: client.post("/api/chat", json={"model": "llama3", "messages": ASK})
        )
        generate = sent_by(
            server, lambda: client.post("/api/generate", json={"model": "llama3", "prompt": "hi"})
        )
        vllm = sent_by(
            server,
            lambda: client.post("/v2/infer", json={"model": "qwen", "input": ["hi"], "n": 1}),
        )
    assert sdk_client_reason(chat.headers) is None
    assert path_reason(server, chat) is None
    assert reason_for(server, chat) == "a JSON body with model and messages"
    assert reason_for(server, generate) == "a JSON body with model and prompt"
    assert reason_for(server, vllm) == "a JSON body with model and input"
    contents = b'  {"contents": [{"parts": [{"text": "hi"}]}], "model": "gemini"}'
    assert model_body_reason(contents) == "a JSON body with model and contents"


def test_a_litellm_proxy_request_is_model_traffic_by_its_path_even_without_its_body() -> None:
    with JsonApiServer() as server, httpx.Client(base_url=server.base_url) as client:
        received = sent_by(
            server,
            lambda: client.post(
                "/chat/completions",
                content=iter([b'{"model": "gpt-4o", ', b'"messages": []}']),
                headers={"authorization": "Bearer sk-litellm-key"},
            ),
        )
    url = server.base_url + received.path
    assert model_traffic_reason("POST", url, received.headers, None) == (
        "a model API path (openai-completions)"
    )


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/openai/deployments/gpt-4o/chat/completions", "a model API path (openai-completions)"),
        ("/v1/completions", "a model API path (legacy completions)"),
        ("/api/embeddings/", "a model API path (embeddings)"),
        ("/v1beta/models/text-embedding-004:embedContent", "a model API path (embedContent)"),
        ("/v1beta/models/gemini-2.5-flash:countTokens", "a model API path (countTokens)"),
        ("/model/amazon.titan-text-lite-v1/invoke", "a model API path (InvokeModel)"),
        (
            "/model/m/invoke-with-response-stream",
            "a model API path (InvokeModelWithResponseStream)",
        ),
        ("/model/m/converse-stream", "a model API path (bedrock-converse)"),
    ],
)
def test_every_model_api_path_the_vendor_views_know(path: str, reason: str) -> None:
    assert model_traffic_reason("POST", f"http://10.0.0.7:4000{path}", {}, None) == reason


def test_anthropic_s_messages_path_needs_its_version_header_or_host() -> None:
    """``/v1/messages`` alone is also a chat service's API: the view claims it only with
    Anthropic's version header or an Anthropic host, and so does the rule."""
    assert model_traffic_reason("POST", "https://chat.example.com/v1/messages", {}, None) is None
    assert model_traffic_reason("POST", "https://api.anthropic.com/v1/messages", {}, None) == (
        "a model API path (anthropic-messages)"
    )


# Not model traffic.


def test_a_tool_s_json_api_and_a_package_index_are_not_model_traffic() -> None:
    with JsonApiServer() as server:
        weather = sent_by(server, lambda: requests.get(f"{server.base_url}/v1/weather?city=Paris"))
        index = sent_by(
            server,
            lambda: requests.get(
                f"{server.base_url}/simple/requests/",
                headers={
                    "User-Agent": 'pip/25.1 {"installer":{"name":"pip","version":"25.1"}}',
                    "Accept": "application/vnd.pypi.simple.v1+json",
                },
            ),
        )
        search = sent_by(
            server,
            lambda: requests.post(
                f"{server.base_url}/search", json={"query": "weather", "messages": ["hi"]}
            ),
        )
        survey = sent_by(server, lambda: requests.get(f"{server.base_url}/surveys/7/responses"))
    for received in (weather, index, search, survey):
        assert reason_for(server, received) is None, received.path


@pytest.mark.parametrize(
    "body",
    [
        b'{"model": 1}',
        b'{"model": 1, "messages": []}',
        b'{"model": "gpt-4o"}',
        b'{"messages": [], "input": "x"}',
        b'[{"model": "m", "messages": []}]',
        b'{"model": "m", "messages": [',
        b"model=m&messages=hi",
        b"\x0a\x04spanexport",
        b"",
        b"\xff\xfe{",
    ],
)
def test_a_body_without_a_model_and_its_input_is_not_model_traffic(body: bytes) -> None:
    assert model_traffic_reason("POST", "http://127.0.0.1:4318/v1/traces", {}, body) is None


def test_a_body_over_the_body_limit_is_never_read() -> None:
    pad = b"x" * MAX_BODY_SIZE
    huge = b'{"model": "m", "messages": [], "pad": "' + pad + b'"}'
    assert model_traffic_reason("POST", "http://127.0.0.1:9/api/chat", {}, huge) is None
    small = b'{"model": "m", "messages": [], "pad": ""}'
    assert model_traffic_reason("POST", "http://127.0.0.1:9/api/chat", {}, small) is not None


def test_only_a_post_goes_to_a_model_api_path() -> None:
    url = "http://127.0.0.1:9/v1/chat/completions"
    assert model_traffic_reason("GET", url, {}, None) is None
    assert model_traffic_reason("post", url, {}, None) == "a model API path (openai-completions)"


# record_replay.model_hosts


@pytest.mark.parametrize(
    ("entries", "url", "listed"),
    [
        (["gateway.example.com"], "https://gateway.example.com/anything", True),
        (["Gateway.Example.com"], "http://GATEWAY.example.com:8080/x", True),
        (["gateway.example.com:443"], "https://gateway.example.com/x", True),
        (["gateway.example.com:443"], "http://gateway.example.com/x", False),
        (["gateway.example.com:8080"], "http://gateway.example.com:8080/x", True),
        (["gateway.example.com:8080"], "http://gateway.example.com:8081/x", False),
        (["127.0.0.2"], "http://127.0.0.2:11434/api/tags", True),
        (["[::1]:8080"], "http://[::1]:8080/x", True),
        (["[::1]"], "http://[::1]:9/x", True),
        (["[::1]:8080"], "http://[::1]:8081/x", False),
        (["other.example.com"], "https://gateway.example.com/x", False),
    ],
)
def test_a_listed_model_host_is_model_traffic_whatever_it_is_sent(
    entries: list[str], url: str, listed: bool
) -> None:
    """Written as ``allowed_hosts`` are, given as the configuration keeps them or as
    written."""
    kept = RecordReplaySettings(model_hosts=entries).model_hosts
    for hosts in (entries, kept, normalized_hosts(kept)):
        reason = model_traffic_reason("GET", url, {}, None, model_hosts=hosts)
        assert (reason == "a model host you listed") is listed, (hosts, url)


def test_model_hosts_is_checked_as_allowed_hosts_is() -> None:
    assert RecordReplaySettings(model_hosts=["[::1]:8080", "LLM.local"]).model_hosts == [
        "::1:8080",
        "llm.local",
    ]
    for bad in ("http://llm.local", "llm.local/v1", "llm.local:port"):
        with pytest.raises(ValueError, match="is not a host"):
            RecordReplaySettings(model_hosts=[bad])


# The line at the end of a replay.


def test_the_connections_that_went_live_are_named_in_one_line() -> None:
    assert not_model_traffic_message([]) is None
    assert not_model_traffic_message(
        ["127.0.0.1:5432", "api.example.com:443", "127.0.0.1:5432"]
    ) == (
        "2 connections were not model traffic and went live: 127.0.0.1:5432, "
        "api.example.com:443 — list a model host in record_replay.model_hosts, or use exec "
        "for a hermetic run"
    )
    assert not_model_traffic_message(["[::1]:6379"]) == (
        "1 connection was not model traffic and went live: [::1]:6379 — list a model host in "
        "record_replay.model_hosts, or use exec for a hermetic run"
    )


# Never raises.

_text = st.text(max_size=60)
_bodies = st.one_of(
    st.none(),
    st.binary(max_size=200),
    JSON_LIKE.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(
        st.sampled_from(["model", "messages", "input", "prompt", "contents", "x"]), JSON_LIKE
    ).map(lambda value: b" \n" + json.dumps(value).encode()),
)
_urls = st.one_of(
    _text,
    st.builds(
        lambda scheme, host, port, path: f"{scheme}://{host}:{port}{path}",
        st.sampled_from(["http", "https", "ws", ""]),
        st.sampled_from(["127.0.0.1", "[::1]", "[::1", "gateway.example.com", "", "a b"]),
        st.one_of(st.integers(-5, 70000).map(str), _text),
        st.one_of(_text, st.sampled_from(["/v1/chat/completions", "/model/x/invoke", "/x:y"])),
    ),
)
_header_names = st.one_of(
    _text,
    st.sampled_from(["User-Agent", "authorization", "Anthropic-Version", "x-goog-api-client"]),
)
_header_values = st.one_of(
    _text,
    st.binary(max_size=40),
    st.sampled_from(["OpenAI/Python", "/Python ", "AWS4-HMAC-SHA256 Credential=a/b/c/bedrock"]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    method=_text,
    url=_urls,
    headers=st.dictionaries(_header_names, _header_values, max_size=5)
    | st.lists(st.tuples(_header_names, _header_values), max_size=5),
    body=_bodies,
    model_hosts=st.lists(_text, max_size=3),
)
def test_the_rule_never_raises(
    method: str,
    url: str,
    headers: dict[str, Any] | list[tuple[Any, Any]],
    body: bytes | None,
    model_hosts: list[str],
) -> None:
    reason = model_traffic_reason(method, url, headers, body, model_hosts=model_hosts)
    assert reason is None or isinstance(reason, str)


# The documentation's table says what the rule does.


def test_the_configuration_page_s_table_names_every_sdk_field_and_the_body_limit() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "configuration.md").read_text()
    section = page.split("## What the configured mode counts as model traffic", 1)[1]
    table = section[section.index("\n| a request… |") :].split("\n\n", 1)[0]
    assert table.count("\n| ") == 6  # the head, its rule, and the four ways
    for sdk in SDK_CLIENTS:
        assert sdk in table, sdk
    for field in BODY_INPUT_FIELDS:
        assert f"`{field}`" in table, field
    assert f"larger than {MAX_BODY_SIZE_MB} MB" in table
    assert "`record_replay.model_hosts`" in table
    assert "(#what-the-configured-mode-counts-as-model-traffic)" in page
